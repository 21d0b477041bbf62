package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/relayr-go/relayr/adapters/httpapi"
	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// The API composed over core: a run files an item by key, twice, and gets
// one item.
func Example() {
	led := memledger.New()
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithProject("ops", "OPS"))
	conns := binding.NewConnections(clock.System{}, tracker.StaticCredentials{"acme/fake": {Token: "k"}},
		binding.Binding{Tenant: "acme", Workspace: "ops", Connector: &faketracker.Connector{Fake: fake}})
	api := httpapi.New(httpapi.Config{
		Writes:      writes.New(writes.Config{Ledger: led, Connections: conns}),
		Log:         eventlog.NewNotifying(led),
		Connections: conns,
		Ledger:      led,
		Tokens:      map[string]string{"token-of-acme": "acme"},
	})
	srv := httptest.NewServer(api)
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest("POST", srv.URL+"/relayr/v1/tenants/acme/workspaces/ops/items/ensure",
			strings.NewReader(`{"key":"ci/build-7","title":"Build 7 failed","correlation":"run-7"}`))
		req.Header.Set("Authorization", "Bearer token-of-acme")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		fmt.Println(res.StatusCode, strings.Contains(string(body), `"name":"OPS-1"`))
	}
	// Output:
	// 201 true
	// 200 true
}

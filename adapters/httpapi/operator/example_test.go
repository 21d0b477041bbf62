package operator_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/relayr-go/relayr/adapters/httpapi/operator"
	"github.com/relayr-go/relayr/adapters/httpapi/status"
	"github.com/relayr-go/relayr/core/ledger/memledger"
)

// The page mounted on its own: a person signs in with the operator token
// and reads the status and the ledger. The app mounts it beside the API
// (httpapi.Config.UI) instead.
func Example() {
	page := operator.New(operator.Config{
		Token:  "op-token",
		Status: status.Func(func(context.Context) (status.Report, error) { return status.Report{Holder: "replica-a"}, nil }),
		Ledger: memledger.New(),
	})
	srv := httptest.NewServer(page)
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	res, err := client.Get(srv.URL + operator.Path)
	if err != nil {
		panic(err)
	}
	_ = res.Body.Close()
	fmt.Println("unsigned:", res.StatusCode)

	form := url.Values{"token": {"op-token"}}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+operator.Path+"signin", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err = client.Do(req)
	if err != nil {
		panic(err)
	}
	_ = res.Body.Close()
	fmt.Println("signed in:", res.StatusCode, len(res.Cookies()), "cookie")
	// Output:
	// unsigned: 401
	// signed in: 303 1 cookie
}

package plane_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// A Connector per Plane project makes a Tracker per lattice workspace; the
// key files an item once, and a second create names the first.
func Example() {
	emu := planeemu.New(planeemu.Options{})
	srv := httptest.NewServer(emu)
	defer srv.Close()

	conn, err := plane.NewConnector(plane.Config{
		BaseURL:   srv.URL,
		WebURL:    "https://plane.example.com",
		Workspace: emu.Workspace,
		Project:   emu.Project,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	tr, err := conn.Connect(ctx, tracker.Credentials{Token: emu.Bot.Key}, tracker.Source{Tenant: "acme", Workspace: "ops"})
	if err != nil {
		panic(err)
	}
	it, err := tr.Create(ctx, "nightly/failed", tracker.Draft{Title: "Nightly build failed", State: tracker.Todo, Labels: []string{"ci"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(it.Ref.Name, it.Ref.Link, it.State, it.Labels)

	_, err = tr.Create(ctx, "nightly/failed", tracker.Draft{Title: "Nightly build failed"})
	var exists *tracker.ExistsError
	fmt.Println(errors.As(err, &exists) && exists.ID == it.Ref.ID)

	found, err := tr.Find(ctx, "nightly/failed")
	if err != nil {
		panic(err)
	}
	fmt.Println(found.Ref.Name, found.Ref.Key)
	// Output:
	// OPS-1 https://plane.example.com/relayr/browse/OPS-1/ todo [ci]
	// true
	// OPS-1 nightly/failed
}

// SameDescription compares a description relayr sent with one Plane holds,
// as Plane's sanitizer leaves them: its wrappers, rel and comments aside.
func ExampleSameDescription() {
	fmt.Println(plane.SameDescription("Build 42 failed", "<p>Build 42 failed</p>"))
	fmt.Println(plane.SameDescription(`<p>a</p><p>b</p><!-- c -->`, "<div><p>a</p><p>b</p></div>"))
	fmt.Println(plane.SameDescription(`see <a href='https://x'>log</a>`, `<p>see <a href="https://x" rel="noopener noreferrer">log</a></p>`))
	fmt.Println(plane.SameDescription("Build 42 failed", "<p>Build 43 failed</p>"))
	// Output:
	// true
	// true
	// true
	// false
}

// Nudge checks X-Plane-Signature over the raw body of a delivery, and
// names the project it is about.
func ExampleDriver_Nudge() {
	conn, err := plane.NewConnector(plane.Config{
		BaseURL: "https://plane.example.com", Workspace: "relayr",
		Project: "11111111-1111-4111-8111-111111111111", Identifier: "OPS",
	})
	if err != nil {
		panic(err)
	}
	// With the Identifier named, connecting makes no request.
	d, err := conn.ConnectDriver(context.Background(), tracker.Credentials{Token: "plane_api_x"}, tracker.Source{Tenant: "acme", Workspace: "ops"})
	if err != nil {
		panic(err)
	}
	body := []byte(`{"event": "issue", "action": "updated", "data": {"project": "p"}}`)
	h := http.Header{plane.SignatureHeader: {planeemu.Sign("plane_wh_secret", body)}}
	n, err := d.Nudge("plane_wh_secret", h, body)
	fmt.Println(n.Project, err)
	_, err = d.Nudge("other", h, body)
	fmt.Println(errors.Is(err, tracker.ErrUnauthorized))
	// Output:
	// p <nil>
	// true
}

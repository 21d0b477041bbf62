package plane_test

import (
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/memnet"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// TestPagesOfEditedItemsFit pages 5,000 items a person edited in the web
// app, each with a 40 KiB editor document (description_binary) and a
// serializer that spends 12 ms per query per item, on virtual time: a full
// page with every field would be over the 32 MiB response cap and take 24 s
// to start, past the 10 s phase timeout. The adapter asks for its fields
// only, shrinks a page that does not start in time, and reads every item,
// in both walks (the sweep's and a poll's since a time).
func TestPagesOfEditedItemsFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		emu := planeemu.New(planeemu.Options{RateLimit: -1, DescriptionBinary: 40 << 10, ItemQueryDelay: 12 * time.Millisecond})
		ids := emu.AddEditedItems(5000)
		srv := memnet.NewServer(emu)
		defer srv.Close()

		// Without a field selection, one page of 1,000 is over the cap: ten
		// times a page of 100 (read, rather than the whole, to spare the
		// race detector's time).
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/workspaces/"+emu.Workspace+"/projects/"+emu.Project+"/work-items/?per_page=100", nil)
		req.Header.Set("X-Api-Key", emu.Bot.Key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		n *= 10
		if n <= plane.DefaultMaxResponseBytes {
			t.Fatalf("a full page is %d bytes, not over the %d cap: the test proves nothing", n, plane.DefaultMaxResponseBytes)
		}

		emu.ResetCounts()
		conn := must(plane.NewConnector(plane.Config{BaseURL: srv.URL, Workspace: emu.Workspace, Project: emu.Project, Identifier: "OPS", Client: srv.Client()}))(t)
		tr := must(conn.Connect(ctx, tracker.Credentials{Token: emu.Bot.Key}, tracker.Source{Tenant: "acme", Workspace: "ops"}))(t)

		seen := map[string]bool{}
		start := time.Now()
		for page := ""; ; {
			pg := must(tr.Items(ctx, tracker.Query{Page: page}))(t)
			for _, it := range pg.Items {
				seen[it.Ref.ID] = true
			}
			if page = pg.Next; page == "" {
				break
			}
		}
		t.Logf("the sweep read %d items in %s of virtual time", len(seen), time.Since(start))
		for _, id := range ids {
			if !seen[id] {
				t.Fatalf("the sweep missed item %s (%d of %d read)", id, len(seen), len(ids))
			}
		}
		pg := must(tr.Items(ctx, tracker.Query{Since: emu.Now().Add(-24 * time.Hour)}))(t)
		if len(pg.Items) != len(ids) {
			t.Fatalf("a poll since a day ago read %d items, want %d", len(pg.Items), len(ids))
		}
		if got, limit := emu.LargestAnswer(), plane.DefaultMaxResponseBytes; got > limit/4 {
			t.Fatalf("the adapter's largest page was %d bytes, want well under the %d cap", got, limit)
		} else {
			t.Logf("largest answer with the field selection: %d bytes (the full page: %d); %d requests", got, n, emu.Total())
		}
	})
}

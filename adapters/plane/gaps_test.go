package plane_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/adapters/plane"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// The smaller gaps a reading of Plane's source found in the emulation, as
// the adapter meets them.
func TestPlanesSmallerBehaviours(t *testing.T) {
	t.Run("ACommentOnADeletedItemIsNotFoundAndNotMade", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}))(t)
		if err := e.emu.Delete(it.Ref.ID); err != nil {
			t.Fatal(err)
		}
		e.emu.ResetCounts()
		if _, err := e.tr.Comment(ctx, it.Ref.ID, "ck", "late"); !errors.Is(err, tracker.ErrNotFound) {
			t.Fatalf("comment on a deleted item: %v", err)
		}
		if n := e.emu.Count("POST", "comments"); n != 0 {
			t.Fatalf("%d comments posted on a deleted item", n)
		}
	})
	t.Run("LabelNamesAreTrimmedBeforeTheyAreLookedUpOrMade", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		a := must(e.tr.Create(ctx, "a", tracker.Draft{Title: "x", Labels: []string{"ci ", " ci"}}))(t)
		b := must(e.tr.Create(ctx, "b", tracker.Draft{Title: "y", Labels: []string{"ci "}}))(t)
		if !slices.Equal(a.Labels, []string{"ci"}) || !slices.Equal(b.Labels, []string{"ci"}) {
			t.Fatalf("labels %v and %v", a.Labels, b.Labels)
		}
		if n := e.emu.Count("POST", "labels"); n != 1 {
			t.Fatalf("%d labels made, want one", n)
		}
	})
	t.Run("TrimmedTitlesAndLabelsAreRelayrsOwnWhenReadBack", func(t *testing.T) {
		r := newReadBack(t, planeemu.Options{})
		if _, err := r.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k",
			Draft: tracker.Draft{Title: " Build failed ", Labels: []string{"ci "}}}); err != nil {
			t.Fatal(err)
		}
		r.poll(t)
		title := "Build failed again  "
		if _, err := r.w.Update(ctx, writes.UpdateParams{Tenant: "acme", Workspace: "ops", Key: "k", Patch: tracker.Patch{Title: &title}}); err != nil {
			t.Fatal(err)
		}
		r.poll(t)
		if n := r.events(t); n != 0 {
			t.Fatalf("%d events for relayr's own writes", n)
		}
	})
	t.Run("ALongCommentKeyFilesUnderItsDigestAndReadsBackWhole", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}))(t)
		// The driver's own: the portable tracker holds a comment's key to
		// Capabilities.MaxKeyChars too, an item's limit.
		for _, key := range []string{"ci/" + strings.Repeat("é", 300), strings.Repeat("k", tracker.MaxKeyBytes), "relayr-sha256:looks-like-a-digest"} {
			c := must(e.d.Comment(ctx, it.Ref.ID, key, "<p>said once</p>"))(t)
			again := must(e.d.Comment(ctx, it.Ref.ID, key, "<p>said once</p>"))(t)
			if again.ID != c.ID || again.Key != key || again.Body != "<p>said once</p>" {
				t.Fatalf("retried comment %+v, first %+v", again, c)
			}
			var read *tracker.Comment
			for _, x := range must(e.d.Comments(ctx, it.Ref.ID, time.Time{}))(t) {
				if x.ID == c.ID {
					read = &x
				}
			}
			if read == nil || read.Key != key || read.Body != "<p>said once</p>" {
				t.Fatalf("read back %+v", read)
			}
		}
	})
	t.Run("AnItemKeyPlaneCannotKeepIsInvalidBeforeAnyRequest", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		before := e.emu.Total()
		for _, key := range []string{"ci/" + strings.Repeat("é", 300), "k1 ", " k1"} {
			if _, err := e.tr.Create(ctx, key, tracker.Draft{Title: "x"}); !errors.Is(err, tracker.ErrInvalid) {
				t.Fatalf("Create under %q: %v, want invalid", key, err)
			}
			if _, err := e.tr.Find(ctx, key); !errors.Is(err, tracker.ErrInvalid) {
				t.Fatalf("Find of %q: %v, want invalid", key, err)
			}
		}
		if n := e.emu.Total() - before; n != 0 {
			t.Fatalf("%d requests for keys Plane cannot keep", n)
		}
		// 255 characters, "&" and a digest's look are kept as they are.
		for _, key := range []string{strings.Repeat("é", 255), "R&D/1", "relayr-sha256:looks-like-a-digest"} {
			it := must(e.tr.Create(ctx, key, tracker.Draft{Title: "x"}))(t)
			if found := must(e.tr.Find(ctx, key))(t); found.Ref.ID != it.Ref.ID || found.Ref.Key != key {
				t.Fatalf("Find(%q) answered %+v, want %s under its key", key, found.Ref, it.Ref.ID)
			}
		}
	})
	t.Run("ACommentKeyFiledUnderTheOldSchemeIsStillFound", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x"}))(t)
		// Posted before, with the key itself as external_id.
		body, _ := json.Marshal(map[string]any{"comment_html": "earlier", "external_id": "ck/1", "external_source": e.d.Source()})
		req, _ := http.NewRequest(http.MethodPost, e.url+"/api/v1/workspaces/"+e.emu.Workspace+"/projects/"+e.emu.Project+"/work-items/"+it.Ref.ID+"/comments/", bytes.NewReader(body))
		req.Header.Set("X-Api-Key", e.emu.Bot.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var posted struct{ ID string }
		_ = json.NewDecoder(resp.Body).Decode(&posted)
		_ = resp.Body.Close()
		c := must(e.tr.Comment(ctx, it.Ref.ID, "ck/1", "again"))(t)
		if c.ID != posted.ID || c.Key != "ck/1" {
			t.Fatalf("comment %+v, want the one posted before (%s)", c, posted.ID)
		}
	})
	t.Run("ItemsSharingAnUpdatedAtAreAllRead", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{PageSize: 20})
		var ids []string
		for i := range 90 {
			ids = append(ids, must(e.tr.Create(ctx, "t"+strconv.Itoa(i), tracker.Draft{Title: "x"}))(t).Ref.ID)
		}
		// Runs well inside a page: a run about as long as a page, each
		// request answering its items in another order, can't be read
		// whole by offset.
		for _, group := range [][]string{ids[3:11], ids[15:16], ids[17:25], ids[26:34], ids[35:43], ids[44:52], ids[53:55], ids[60:68], ids[70:78]} {
			e.emu.Advance(time.Millisecond)
			if err := e.emu.TouchTogether(group...); err != nil {
				t.Fatal(err)
			}
		}
		for round := range 40 {
			seen := map[string]bool{}
			for page := ""; ; {
				pg := must(e.tr.Items(ctx, tracker.Query{Page: page}))(t)
				for _, it := range pg.Items {
					seen[it.Ref.ID] = true
				}
				if page = pg.Next; page == "" {
					break
				}
			}
			since := map[string]bool{}
			for _, it := range must(e.tr.Items(ctx, tracker.Query{Since: e.emu.Now().Add(-time.Hour)}))(t).Items {
				since[it.Ref.ID] = true
			}
			for _, id := range ids {
				if !seen[id] || !since[id] {
					t.Fatalf("round %d: item %s missed (sweep %v, since %v)", round, id, seen[id], since[id])
				}
			}
		}
	})
	t.Run("AnUnknownProjectIsNotFoundOrRefusedTheKey", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		unknown := "00000000-0000-4000-8000-00000000abcd"
		conn := must(plane.NewConnector(plane.Config{BaseURL: e.url, Workspace: e.emu.Workspace, Project: unknown}))(t)
		_, err := conn.Connect(ctx, tracker.Credentials{Token: e.emu.Bot.Key}, tracker.Source{Tenant: "acme", Workspace: "ops"})
		if !errors.Is(err, tracker.ErrNotFound) || !strings.Contains(err.Error(), unknown) {
			t.Fatalf("connect to an unknown project: %v", err)
		}
		named := must(plane.NewConnector(plane.Config{BaseURL: e.url, Workspace: e.emu.Workspace, Project: unknown, Identifier: "OPS"}))(t)
		tr := must(named.Connect(ctx, tracker.Credentials{Token: e.emu.Bot.Key}, tracker.Source{Tenant: "acme", Workspace: "ops"}))(t)
		if _, err := tr.Create(ctx, "k", tracker.Draft{Title: "x"}); !errors.Is(err, tracker.ErrUnauthorized) {
			t.Fatalf("create in an unknown project: %v", err)
		}
	})
	t.Run("AnotherProjectsLabelOfTheSameNameIsNotUsed", func(t *testing.T) {
		e := newEmulated(t, planeemu.Options{RateLimit: -1}, plane.Config{})
		other := e.emu.AddProject("OTH", "Other")
		if _, err := e.emu.AddLabel(other, "ci"); err != nil {
			t.Fatal(err)
		}
		it := must(e.tr.Create(ctx, "k", tracker.Draft{Title: "x", Labels: []string{"ci"}}))(t)
		got := must(e.tr.Item(ctx, it.Ref.ID))(t)
		if !slices.Equal(got.Labels, []string{"ci"}) {
			t.Fatalf("labels %v: Plane dropped a label of another project", got.Labels)
		}
	})
	t.Run("AnArchivedProjectsSweepFailsRatherThanRemoveEveryItem", func(t *testing.T) {
		r := newReadBack(t, planeemu.Options{})
		if _, err := r.w.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "x"}}); err != nil {
			t.Fatal(err)
		}
		r.emu.CreateItem("a person's")
		r.poll(t)
		if err := r.emu.ArchiveProject(r.emu.Project); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(25 * time.Hour)
		err := r.fs.PollOnce(ctx, "acme", "ops")
		if !errors.Is(err, tracker.ErrRefused) || !strings.Contains(err.Error(), "archived") {
			t.Fatalf("a sweep of an archived project: %v", err)
		}
		if n := r.events(t); n != 0 {
			t.Fatalf("%d events for an archived project", n)
		}
		if err := r.emu.UnarchiveProject(r.emu.Project); err != nil {
			t.Fatal(err)
		}
		r.poll(t)
		if n := r.events(t); n != 0 {
			t.Fatalf("%d events once the project is back", n)
		}
	})
}

package vikunja_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/relayr-go/relayr/adapters/vikunja"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/fixtures/vikunjaemu"
)

// A request that fails after a write of the same call landed must not say
// the write certainly wasn't taken: relayr would release the claim and file
// the task twice, or put back the values recorded for an edit that landed.
// (Found by the chaos run: a 429 on the label after the create.)
func TestAFailureAfterAWriteLandedIsNeverCertainlyNotTaken(t *testing.T) {
	labelAdd := regexp.MustCompile(`^/api/v1/tasks/\d+/labels$`)
	for _, status := range []int{http.StatusTooManyRequests, http.StatusBadRequest, http.StatusNotFound} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			e := vikunjaemu.New(vikunjaemu.Options{RateLimit: -1})
			defer e.Close()
			var refuse atomic.Bool
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if refuse.Load() && r.Method == http.MethodPut && labelAdd.MatchString(r.URL.Path) {
					w.WriteHeader(status)
					_, _ = w.Write([]byte(`{"code":1,"message":"no"}`))
					return
				}
				e.ServeHTTP(w, r)
			}))
			defer s.Close()
			pid := e.CreateProject("Lattice", "LAT")
			tr, err := vikunja.New(vikunja.Params{BaseURL: s.URL, Token: e.Token, Project: pid, Source: source})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			it, err := tr.Create(ctx, "k0", tracker.Draft{Title: "first"})
			if err != nil {
				t.Fatal(err)
			}
			refuse.Store(true)
			_, err = tr.Create(ctx, "k1", tracker.Draft{Title: "labelled", Labels: []string{"ci"}})
			if !errors.Is(err, tracker.ErrUnavailable) || tracker.CertainlyNotTaken(err) {
				t.Fatalf("a create whose label failed answered %v", err)
			}
			title := "edited"
			_, err = tr.Update(ctx, it.Ref.ID, tracker.Patch{Title: &title, Labels: &[]string{"ci"}})
			if !errors.Is(err, tracker.ErrUnavailable) || tracker.CertainlyNotTaken(err) {
				t.Fatalf("an edit whose labels failed after its title landed answered %v", err)
			}
		})
	}
}

package app_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/relayr-go/relayr/apps/relayr/internal/app"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
	"github.com/relayr-go/relayr/fixtures/planeemu"
)

// TestTheServicesWriterKnowsWhatItWrote: the writer relayr serve wires
// reads the event log, so an edit its own answered write already made is
// answered without a request to the tracker (a retried update, say).
func TestTheServicesWriterKnowsWhatItWrote(t *testing.T) {
	emu := planeemu.New(planeemu.Options{Now: time.Now, RateLimit: -1})
	ps := httptest.NewServer(emu)
	defer ps.Close()
	dir := t.TempDir()
	c := &config.Config{
		Holder:  "writer",
		Ledger:  config.Ledger{Driver: "sqlite", Path: filepath.Join(dir, "relayr.db")},
		Tenants: []config.Tenant{{Name: "acme"}},
		Bindings: []config.Binding{{Tenant: "acme", Workspace: "ops", Tracker: "plane", BaseURL: ps.URL,
			PlaneWorkspace: emu.Workspace, Project: emu.Project, Identifier: emu.Identifier}},
		Dir: dir,
	}
	secrets := &config.Secrets{Tokens: map[string]string{"writer-token-of-acme-0123456789abcdef": "acme"},
		Trackers: tracker.StaticCredentials{"acme/plane": {Token: emu.Bot.Key}}}
	a, err := app.New(t.Context(), c, secrets, app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	if _, err := a.Writer.EnsureItem(ctx, writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "first"}, Correlation: "run"}); err != nil {
		t.Fatal(err)
	}
	title := "second"
	up := writes.UpdateParams{Tenant: "acme", Workspace: "ops", Key: "k", Patch: tracker.Patch{Title: &title}, Correlation: "run"}
	if _, err := a.Writer.Update(ctx, up); err != nil {
		t.Fatal(err)
	}
	emu.ResetCounts()
	res, err := a.Writer.Update(ctx, up) // the run retried
	if err != nil {
		t.Fatal(err)
	}
	if n := emu.Total(); n != 0 {
		t.Fatalf("the retried update (%+v) sent %d requests, want none: the writer doesn't read the log", res, n)
	}
}

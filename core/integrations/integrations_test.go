package integrations_test

import (
	"context"
	"testing"

	"github.com/relayr-go/relayr/core/integrations"
)

func TestAlwaysAnswersYesToAKeyItDoesNotKnow(t *testing.T) {
	if !integrations.Always.Enabled(context.Background(), "t", "w", "tracker:made-up") {
		t.Fatal("Always refused an unknown key")
	}
}

func TestSwitchesTurnOneWorkspaceOffAndBackOn(t *testing.T) {
	s := integrations.NewSwitches()
	ctx := context.Background()
	s.Set("t", "w", integrations.Plane, false)
	if s.Enabled(ctx, "t", "w", integrations.Plane) {
		t.Fatal("switched off but enabled")
	}
	if !s.Enabled(ctx, "t", "w2", integrations.Plane) || !s.Enabled(ctx, "t", "w", integrations.Vikunja) {
		t.Fatal("switching one off touched another")
	}
	s.Set("t", "w", integrations.Plane, true)
	if !s.Enabled(ctx, "t", "w", integrations.Plane) {
		t.Fatal("switched back on but disabled")
	}
}

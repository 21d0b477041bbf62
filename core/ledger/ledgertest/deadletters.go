package ledgertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/ledger"
)

// deadLetterCases are the rules of the events a follower could not bridge:
// kept once per id, listed oldest first, each follower's its own.
var deadLetterCases = []testCase{
	{"DeadLetterIsKeptOncePerID", deadLetterOnce},
	{"DeadLettersAreListedOldestFirst", deadLettersOldestFirst},
}

func deadLetterOnce(t *testing.T, l ledger.Ledger) {
	added, err := l.DeadLetter(t.Context(), deadLetter(ledger.TrackerFollower, "trk_0123456789abcdef", t0))
	mustNil(t, err)
	if !added {
		t.Fatal("first dead letter not added")
	}
	again := deadLetter(ledger.TrackerFollower, "trk_0123456789abcdef", t0.Add(time.Minute))
	again.Reason = "second"
	added, err = l.DeadLetter(t.Context(), again)
	mustNil(t, err)
	if added {
		t.Fatal("second dead letter of one id added")
	}
	list, err := l.DeadLetters(t.Context(), follower(ledger.TrackerFollower))
	mustNil(t, err)
	if len(list) != 1 || list[0].Reason != "projection: boom" || !list[0].At.Equal(t0) || list[0].Seq != 7 ||
		string(list[0].Event) != `{"type":"tracker:item_changed"}` || list[0].Follower != follower(ledger.TrackerFollower) {
		t.Fatalf("dead letters %+v", list)
	}
	// The log follower of the same name keeps its own.
	added, err = l.DeadLetter(t.Context(), deadLetter(ledger.LogFollower, "trk_0123456789abcdef", t0))
	mustNil(t, err)
	if !added {
		t.Fatal("the log follower's dead letter was taken for the tracker follower's")
	}
}

func deadLettersOldestFirst(t *testing.T, l ledger.Ledger) {
	for i, at := range []time.Duration{3, 1, 2, 1} {
		_, err := l.DeadLetter(t.Context(), deadLetter(ledger.LogFollower, fmt.Sprint(i+1), t0.Add(at*time.Second)))
		mustNil(t, err)
	}
	list, err := l.DeadLetters(t.Context(), follower(ledger.LogFollower))
	mustNil(t, err)
	var ids []string
	for _, d := range list {
		ids = append(ids, d.ID)
	}
	if got := strings.Join(ids, ","); got != "2,4,3,1" {
		t.Fatalf("dead letters in order %s, want 2,4,3,1", got)
	}
	other, err := l.DeadLetters(t.Context(), ledger.Follower{Kind: ledger.LogFollower, Tenant: "globex", Workspace: "ops", Name: "plane"})
	mustNil(t, err)
	if len(other) != 0 {
		t.Fatalf("another tenant's follower lists %+v", other)
	}
}

package figures

import (
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

// The benchmarks run only under -bench; this keeps what they stand on
// checked by every `go test`: a key sent twice through relayr makes one
// item, and sent twice with the adapter it makes two where the tracker
// doesn't refuse the second (Vikunja) and one where it does (Plane's 409,
// Linear's id derived from the key).
func TestAKeySentTwiceMakesOneItemThroughRelayrAndTwoDirectlyWhereTheTrackerAllows(t *testing.T) {
	for _, tr := range emulations {
		t.Run(tr.name, func(t *testing.T) {
			emu := tr.new(time.Now)
			s := startService(t, emu, serviceOptions{serve: true})
			for _, want := range []string{writes.Created, writes.Existing} {
				if how, err := s.ensure(t.Context(), "via-relayr", "run-1"); err != nil || how != want {
					t.Fatalf("ensure answered %q %v, want %q", how, err, want)
				}
			}
			d := direct(t, emu)
			for attempt := range 2 {
				_, err := d.Create(t.Context(), "direct", tracker.Draft{Title: title("direct"), Labels: []string{label}})
				if failed(attempt, err) {
					t.Fatalf("direct create %d: %v", attempt+1, err)
				}
			}
			perTitle, err := itemsPerTitle(t.Context(), d)
			if err != nil {
				t.Fatal(err)
			}
			wantDirect := 2
			if tr.name == "Plane" || tr.name == "Linear" {
				wantDirect = 1
			}
			if perTitle[title("via-relayr")] != 1 || perTitle[title("direct")] != wantDirect {
				t.Errorf("items per title: %v, want 1 through relayr and %d directly", perTitle, wantDirect)
			}
		})
	}
}

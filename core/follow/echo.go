package follow

import (
	"encoding/json"

	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// echo answers the recorded value a field read back as cur is an echo of
// (ADR-0036: "A field read back holding the value recorded for it is an
// echo"), the one to consume. A value recorded as it is read back matches
// first. A description also matches a recorded one the tracker says it
// holds as the same (tracker.DescriptionComparer): Plane's sanitizer
// rewrites markup, so a description predicted before a write whose answer
// never came differs from what Plane holds only by that rewriting. The
// newest such value matches, so consuming it consumes the ones before.
func echo(tr *tracker.Tracker, field, recorded, cur string) (string, bool) {
	if ledger.IsPending(recorded, cur) {
		return cur, true
	}
	if field != tracker.FieldDescription || tr == nil {
		return "", false
	}
	if !tr.RewritesDescriptions() {
		return "", false
	}
	var held string
	if json.Unmarshal([]byte(cur), &held) != nil {
		return "", false
	}
	list := ledger.Pending(recorded)
	for i := len(list) - 1; i >= 0; i-- {
		var set string
		if json.Unmarshal([]byte(list[i]), &set) == nil && tr.SameDescription(set, held) {
			return list[i], true
		}
	}
	return "", false
}

package ledger

import (
	"context"
	"fmt"
	"time"
)

// Holder is one replica as the others see it through the ledger: its name
// in the leases, until when its last heartbeat keeps it alive, and what it
// spent of each tenant's key in its last minute (by budget key), so every
// replica's status shows a key's budget across replicas.
type Holder struct {
	Name    string
	Expires time.Time
	Spent   map[string]int
}

// BeatParams is one heartbeat of a replica.
type BeatParams struct {
	Holder string
	Now    time.Time
	// TTL is how long the beat keeps the holder alive: a replica killed
	// drops out of the others' count TTL after its last beat.
	TTL time.Duration
	// Spent is what the holder spent of each key in its last minute.
	Spent map[string]int
}

// KeepLapsed is how long a holder's row outlives its beat: a budget's
// minute, so a replica that starts knows what the replicas gone within it
// spent, and the tracker still counts.
const KeepLapsed = time.Minute

// Alive reports whether the holder's beat keeps it alive at now.
func (h Holder) Alive(now time.Time) bool { return h.Expires.After(now) }

// Holders is the replicas' heartbeat: a row per holder with an expiry,
// through which replicas see each other and share the bindings' leases
// and each key's budget evenly (ADR-1002, ADR-1001). It reads across
// tenants: a holder belongs to none.
type Holders interface {
	// Beat records p.Holder alive until Now+TTL with what it spent, and
	// answers every holder whose row it keeps, ordered by name: those
	// alive at Now (Alive), itself included, and those whose beat lapsed
	// (or who left) less than KeepLapsed before Now, with what each last
	// spent. Rows lapsed longer are forgotten.
	Beat(ctx context.Context, p BeatParams) ([]Holder, error)
	// Leave counts a holder out at now (a replica that stops), so the
	// others do not wait for its beat to lapse; its row is kept as a
	// lapsed one's. A holder with no row is no error.
	Leave(ctx context.Context, holder string, now time.Time) error
}

// CheckBeat refuses a beat every store refuses: an empty or too long
// holder, a TTL that is not positive, a key or text CheckText refuses.
func CheckBeat(p BeatParams) error {
	if p.Holder == "" || len(p.Holder) > MaxName {
		return fmt.Errorf("%w: a holder needs a name of 1 to %d bytes", ErrInvalid, MaxName)
	}
	if p.TTL <= 0 {
		return fmt.Errorf("%w: a beat needs a positive TTL", ErrInvalid)
	}
	for k, n := range p.Spent {
		if k == "" || len(k) > MaxKey || n < 0 {
			return fmt.Errorf("%w: spent %d on key %q", ErrInvalid, n, k)
		}
		if err := CheckText(k); err != nil {
			return err
		}
	}
	return CheckText(p.Holder)
}

package writes

import (
	"context"
	"encoding/json"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
)

// When an edit can be answered without asking the tracker.
//
// A retried edit must cost the tracker nothing, but it must never keep a
// person's change from being overwritten by an edit that is not a retry:
// a rule that closes an item again each time a person reopens it sends the
// value relayr set last, and must send it. So an edit is answered from what
// relayr knows only for the fields relayr can vouch for:
//
//   - relayr set the value, and the tracker answered that write (in this
//     process: an unanswered write, a timeout, may not have landed);
//   - it is still the newest value relayr recorded for the field (no write
//     of another attempt or replica came since);
//   - and no change or removal of the item has been published since the
//     answer (a person's change the followers read is in the log before a
//     rule can react to it).
//
// A person's change no poll has read yet is unknown to relayr either way;
// it reaches the log, and the rule, as a change. Anything else is read
// from the tracker first, as ADR-0033 has every edit do (ADR-0033's
// departures: an edit reads the item only where relayr can't vouch for it).

// landing is what the tracker answered relayr's writes to one key's item
// with, and how far the workspace's log was then.
type landing struct {
	item   string
	values map[string]string // field -> canonical value
	head   int64             // the log's last sequence when they landed
}

// maxLanded bounds how many keys' landings a Writer keeps: they serve a
// retry that comes soon after its write.
const maxLanded = 10000

// maxScan bounds how many events an edit scans for a change of its item;
// a busier log answers "read the item" instead.
const maxScan = 1000

// land notes values the tracker answered as set on item, filed under k.
func (w *Writer) land(ctx context.Context, k ledger.Key, item string, values map[string]string) {
	if w.log == nil || len(values) == 0 {
		return
	}
	head, ok := w.head(ctx, k.Tenant, k.Workspace)
	if !ok {
		w.unland(k, values)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.landed[k]
	if !ok || l.item != item {
		if !ok {
			if len(w.landedKeys) >= maxLanded {
				delete(w.landed, w.landedKeys[0])
				w.landedKeys = w.landedKeys[1:]
			}
			w.landedKeys = append(w.landedKeys, k)
		}
		l = &landing{item: item, values: map[string]string{}}
		w.landed[k] = l
	}
	for f, v := range values {
		l.values[f] = v
	}
	l.head = head
}

// unland forgets the fields a write that may not have landed sent.
func (w *Writer) unland(k ledger.Key, values map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l, ok := w.landed[k]; ok {
		for f := range values {
			delete(l.values, f)
		}
	}
}

// head reads the workspace's log to its end and answers its last sequence
// number, from where this Writer read to before.
func (w *Writer) head(ctx context.Context, tenant, workspace string) (int64, bool) {
	name := tenant + "/" + workspace
	w.mu.Lock()
	at := w.heads[name]
	w.mu.Unlock()
	for {
		evs, err := w.log.Read(ctx, tenant, workspace, at, maxScan)
		if err != nil {
			return 0, false
		}
		if len(evs) > 0 {
			at = evs[len(evs)-1].Seq
		}
		if len(evs) < maxScan {
			break
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.heads[name] = max(w.heads[name], at)
	return at, true
}

// certain answers, by field, the values relayr can vouch for the tracker
// holding of the key's item (see above). It reads the ledger's row and the
// log, never the tracker.
func (s session) certain(ctx context.Context, row ledger.Claim) (map[string]string, error) {
	w := s.w
	w.mu.Lock()
	l, ok := w.landed[row.Key]
	var vals map[string]string
	var since int64
	if ok && l.item == row.Ref.ID {
		vals, since = make(map[string]string, len(l.values)), l.head
		for f, v := range l.values {
			vals[f] = v
		}
	}
	w.mu.Unlock()
	out := map[string]string{}
	if len(vals) == 0 {
		return out, nil
	}
	// A change or removal of the item published since the landing: a
	// person's value may stand where relayr's landed.
	evs, err := w.log.Read(ctx, row.Tenant, row.Workspace, since, maxScan)
	if err != nil || len(evs) == maxScan {
		return out, nil //nolint:nilerr // not vouched for: the item is read instead
	}
	for _, e := range evs {
		if e.Type == eventlog.TrackerNamespace+":item_changed" || e.Type == eventlog.TrackerNamespace+":item_removed" {
			var d struct {
				Item struct {
					ID string `json:"id"`
				} `json:"item"`
			}
			if json.Unmarshal(e.Data, &d) != nil || d.Item.ID == row.Ref.ID {
				return out, nil
			}
		}
	}
	for f, v := range vals {
		// Still the newest value relayr recorded for the field, or the
		// followers already read it back and no write came since.
		if last := ledger.Last(row.Values[f]); last == v || last == "" {
			out[f] = v
		}
	}
	return out, nil
}

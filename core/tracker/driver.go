package tracker

import (
	"context"
	"net/http"
	"time"
)

// Driver is what one tracker does for the portable Tracker, as go-cloud's
// drivers sit under its portable types and ledger.Driver under
// ledger.Store: its wire mapping and its quirks, nothing else. Tracker owns
// the rest, once for every tracker: every input check (keys, drafts,
// patches, bodies, ids), the done context, the empty patch, and the
// mapping of every failure onto the port's typed errors.
//
// Tracker calls a driver method only with inputs it has checked against
// the port's rules and the driver's Capabilities, and only with a live
// context. A driver answers the port's typed errors where it can say more
// than "unavailable" (a 404 is ErrNotFound, a 429 a *RateLimitedError);
// any other error it answers is taken as ErrUnavailable (nothing is known
// of what the tracker did). Drivers are safe for concurrent use.
// drivertest is the conformance suite every driver runs; trackertest runs
// the port's contract over the portable Tracker.
type Driver interface {
	// Capabilities says what the tracker does and does not do. Tracker
	// reads it once, at New.
	Capabilities() Capabilities
	// Project names the project the driver files into, as Nudge names it.
	Project() string
	// Link is where a person opens the item. It makes no request.
	Link(ref ItemRef) string

	// Find answers the item filed under key, archived ones included, or
	// ErrNotFound.
	Find(ctx context.Context, key string) (Item, error)
	// Create files a new item under key. A driver whose Capabilities
	// enforce keys answers a key filed before with an *ExistsError.
	Create(ctx context.Context, key string, draft Draft) (Item, error)
	// Item reads one item by id: ErrNotFound when it is gone.
	Item(ctx context.Context, id string) (Item, error)
	// Update changes the fields the patch names, never an empty patch.
	Update(ctx context.Context, id string, patch Patch) (Item, error)
	// Comment posts body on the item, marked with key.
	Comment(ctx context.Context, id, key, body string) (Comment, error)
	// Items lists the items changed at or after q.Since, ordered by
	// (UpdatedAt, ID); a read of the whole project at most
	// Capabilities.MaxPage a page.
	Items(ctx context.Context, q Query) (Page, error)
	// Comments lists the item's comments created at or after since,
	// oldest first.
	Comments(ctx context.Context, id string, since time.Time) ([]Comment, error)
	// Nudge verifies a webhook delivery against secret (never empty) and
	// says which project it names and which items it reports deleted.
	Nudge(secret string, header http.Header, body []byte) (Nudged, error)
}

// Capabilities is what a tracker does and does not do, declared by its
// driver in one place: the portable Tracker checks inputs against it, and
// the domain acts on it instead of asking the driver's type.
type Capabilities struct {
	// Name prefixes the tracker's errors ("plane").
	Name string
	// KeysEnforced: Create itself refuses a second item under a key,
	// archived items included, answering *ExistsError (Plane's 409 on a
	// duplicate external id). For such a tracker the create is the
	// lookup: a retaken claim goes straight to it (ADR-0033).
	KeysEnforced bool
	// MaxKeyChars is the longest key, in characters, the tracker keeps
	// where it files an item under one (Plane's external_id holds 255); 0
	// leaves MaxKeyBytes the only limit. Comments' keys are the driver's
	// to keep as it can.
	MaxKeyChars int
	// Rewrites lists the characters the tracker's markup rewrites where a
	// key is kept (Vikunja's marker sits in HTML: "<>&"). A key holding
	// one would read back as another and never be found again.
	Rewrites string
	// States maps each of the five states to the one an item set to it
	// reads back as (Vikunja's done flag holds todo and done); a state it
	// doesn't name is held as itself.
	States map[State]State
	// NudgesDeletions: a webhook delivery reports deleted items
	// (Nudged.Deleted). A tracker that sends no deletions leaves them to
	// the sweep.
	NudgesDeletions bool
	// ConditionalReads: the tracker answers an unchanged read 304 to a
	// conditional request, and such an answer costs nothing of its limit.
	ConditionalReads bool
	// ProjectComments: the driver lists a whole project's comments made
	// since a time in one read (it is a ProjectCommenter), and a comment
	// made on an item moves the item's UpdatedAt (Gitea, GitHub), so the
	// followers read a poll's comments in one read from the poll's own
	// start instead of reading each changed item's.
	ProjectComments bool
	// MaxPage is the most items one page of a read of the whole project
	// (Items with a zero Since) holds; a read since a time may answer
	// more in one page (Plane's walk down to its cursor).
	MaxPage int
	// TimePrecision is the resolution of the times the tracker keeps (a
	// second on Vikunja; a microsecond on Plane): a time read back is
	// never finer.
	TimePrecision time.Duration
	// QuietTouch is how long after an item's last change a comment made
	// on it, or a change of its labels alone, leaves its UpdatedAt as it
	// is (GitLab's ThrottledTouch: a minute); zero where every change
	// moves it. The followers read an item again, for its comments and
	// its labels, until a read comes well past this after its last
	// change, and look back at least as far.
	QuietTouch time.Duration
	// DeliveredStatus is the status a webhook delivery is answered with
	// where the tracker counts only that one as delivered (Linear: any
	// non-200 is retried); zero answers 204 No Content.
	DeliveredStatus int
	// ValidID reports whether id has the shape of the tracker's item ids;
	// Tracker answers ErrNotFound for any other without asking. Nil takes
	// every id that is not empty.
	ValidID func(id string) bool
}

// Holds is the state an item set to s reads back as.
func (c Capabilities) Holds(s State) State {
	if h, ok := c.States[s]; ok {
		return h
	}
	return s
}

// ProjectCommenter is implemented by a driver whose tracker lists a whole
// project's comments made or edited since a time in one read (Gitea's and
// GitHub's repository-wide comment lists): the followers read the comments
// of a poll's changed items with it, in one request instead of one per
// item.
type ProjectCommenter interface {
	// ProjectComments answers every comment of the project's items created
	// at or after since (edited ones may come too), oldest first, each
	// naming its item (Comment.ItemID), in at most reads requests. When
	// reading them would take more, it answers complete false, having
	// spent at most one request to learn so. Comments on what is not an
	// item (a pull request) are left out.
	ProjectComments(ctx context.Context, since time.Time, reads int) (comments []Comment, complete bool, err error)
}

// KeysFinder is implemented by a driver that finds the items of several
// keys in one read (Vikunja: one search of the workspace's markers, newest
// first): relayr looks up the filings in doubt on one project together.
type KeysFinder interface {
	// FindKeys answers, of keys, the items filed under them since since
	// (the oldest of their claims, less a margin), each the oldest filed
	// under its key, archived ones included where Find finds them. With
	// complete true, a key not answered has no item filed since since;
	// false, the read stopped short (it would take more than a few
	// requests), and a key not answered is to be looked up on its own.
	FindKeys(ctx context.Context, keys []string, since time.Time) (found map[string]Item, complete bool, err error)
}

// ItemsFetcher is implemented by a driver whose tracker reads several
// items by id in one request (Jira's bulkfetch, a hundred ids a request):
// the sweep checks the items its listing no longer shows with it, instead
// of one read each.
type ItemsFetcher interface {
	// FetchItems answers those of ids the tracker holds, read current as
	// Item reads them, in as few requests as the tracker allows; an id it
	// does not answer is one Item answers ErrNotFound for.
	FetchItems(ctx context.Context, ids []string) (map[string]Item, error)
}

// DescriptionComparer is implemented by a driver whose tracker rewrites
// descriptions in ways relayr cannot predict byte for byte (Plane
// sanitizes description_html: lxml rewrites the markup, nh3 drops what its
// allow-list doesn't hold and adds rel to links). SameDescription reports
// whether held, a description read back, is set, one relayr set, as the
// tracker holds it: the two differ only by what the tracker's rewriting
// does. It must be reflexive, and false for descriptions whose text
// differs. The echo filter and edits compare descriptions through
// Tracker.SameDescription (ADR-0036: echoes dropped by value).
type DescriptionComparer interface {
	SameDescription(set, held string) bool
}

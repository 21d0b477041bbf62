package follow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/relayr-go/relayr/core/eventlog"
	"github.com/relayr-go/relayr/core/ledger"
	"github.com/relayr-go/relayr/core/tracker"
)

// The four types the tracker followers publish, in the tracker: namespace
// reserved to them (ADR-0036: "The four types are tracker:item_created,
// tracker:item_changed (field, old, new, actor), tracker:item_commented and
// tracker:item_removed (deleted when known)").
const (
	TypeItemCreated   = eventlog.TrackerNamespace + ":item_created"
	TypeItemChanged   = eventlog.TrackerNamespace + ":item_changed"
	TypeItemCommented = eventlog.TrackerNamespace + ":item_commented"
	TypeItemRemoved   = eventlog.TrackerNamespace + ":item_removed"
)

// Types lists the four types (the seeds' TRACKED), for a consumer that
// subscribes to all of them.
var Types = []string{TypeItemCreated, TypeItemChanged, TypeItemCommented, TypeItemRemoved}

// Fields lists the item fields the followers compare, in the order their
// changes are published.
var Fields = []string{tracker.FieldTitle, tracker.FieldDescription, tracker.FieldState, tracker.FieldLabels}

// ItemData names the item an event is about. Every event carries it whole
// (ADR-0036: "Every event carries the tracker, the project, and the item's
// id, number, name, link and key"); Key is "" for an item a person filed.
type ItemData struct {
	ID     string `json:"id"`
	Number int64  `json:"number"`
	Name   string `json:"name"`
	Link   string `json:"link"`
	Key    string `json:"key"`
}

// CommentData is a person's comment, as tracker:item_commented carries it.
type CommentData struct {
	ID        string    `json:"id"`
	Body      string    `json:"body"`
	Author    string    `json:"author,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Data is the payload of every tracker: event. Tracker, Project and Item are
// always set; the rest belongs to one type:
//
//   - tracker:item_created: Title, Description, State, Labels (the item as
//     read), and Restored when the item is listed again after its
//     tracker:item_removed (an item unarchived on Plane);
//   - tracker:item_changed: Field, Old and New (canonical JSON, as the
//     ledger records values) and Actor ("" when unknown);
//   - tracker:item_commented: Comment;
//   - tracker:item_removed: Deleted (true or false when known, absent when
//     the tracker cannot tell).
type Data struct {
	Tracker string   `json:"tracker"`
	Project string   `json:"project"`
	Item    ItemData `json:"item"`

	Title       string        `json:"title,omitempty"`
	Description string        `json:"description,omitempty"`
	State       tracker.State `json:"state,omitempty"`
	Labels      []string      `json:"labels,omitempty"`
	Restored    bool          `json:"restored,omitempty"`

	Field string          `json:"field,omitempty"`
	Old   json.RawMessage `json:"old,omitempty"`
	New   json.RawMessage `json:"new,omitempty"`
	Actor string          `json:"actor,omitempty"`

	Comment *CommentData `json:"comment,omitempty"`

	Deleted *bool `json:"deleted,omitempty"`
}

// DataOf decodes a tracker: event's payload.
func DataOf(e eventlog.Event) (Data, error) {
	var d Data
	err := json.Unmarshal(e.Data, &d)
	return d, err
}

// Scope is what every id of one bound project starts with: the tenant, the
// workspace, the project and the tracker kind.
type Scope struct {
	Tenant, Workspace, Project, Tracker string
}

// stamp renders an updated_at for an id: UTC, to the nanosecond.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// digest is the hex SHA-256 of a value's canonical JSON.
func digest(canonical string) string {
	s := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(s[:])
}

// ChangedID derives a tracker:item_changed id. It and CreatedID, RemovedID
// and CommentedID derive the ids of the four types (ADR-0036: "trk_ and 16
// hex digits of a SHA-256, joined by NUL bytes, over the tenant, the
// workspace, the project and the tracker, then what the event says"). A page
// read again, by another replica or after a restart, derives the same ids
// and appends nothing new.
//
// Where it departs (ADR-0036's departures): a change's id names the
// version it is a change from, the snapshot's updated_at, and the field's
// value in that snapshot, where the ADR has the item's new updated_at; a
// creation's names the item alone; a removal's the last version read. A
// process that dies after publishing and before saving its snapshots reads
// the same change again from the same snapshot, and derives the same id
// even when the item moved again meanwhile (a comment bumps it), so the
// change is not published twice. The snapshot's value tells apart two
// changes of one field from one version (a tracker that keeps time to the
// second: a title set to B from A, and set to B again from C in that
// second).
//
// The updated_at is rendered in RFC 3339 UTC to the nanosecond, each value
// as the hex SHA-256 of its canonical JSON (ledger.Canonical).
func (s Scope) ChangedID(itemID, field, fromCanonical, newCanonical string, from time.Time) string {
	return eventlog.DeriveID(s.Tenant, s.Workspace, s.Project, s.Tracker, itemID, field, digest(fromCanonical), digest(newCanonical), stamp(from))
}

// CreatedID derives a tracker:item_created id: an item is created once.
func (s Scope) CreatedID(itemID string) string {
	return eventlog.DeriveID(s.Tenant, s.Workspace, s.Project, s.Tracker, itemID, "created")
}

// RestoredID derives the id of the tracker:item_created of an item listed
// again after its removal, from the version its removal was published
// from (RemovedID's): each return after a removal is published once.
func (s Scope) RestoredID(itemID string, removed time.Time) string {
	return eventlog.DeriveID(s.Tenant, s.Workspace, s.Project, s.Tracker, itemID, "restored", stamp(removed))
}

// RemovedID derives a tracker:item_removed id from the last version read.
func (s Scope) RemovedID(itemID string, updatedAt time.Time) string {
	return eventlog.DeriveID(s.Tenant, s.Workspace, s.Project, s.Tracker, itemID, "removed", stamp(updatedAt))
}

// CommentedID derives a tracker:item_commented id (see ChangedID).
func (s Scope) CommentedID(commentID string) string {
	return eventlog.DeriveID(s.Tenant, s.Workspace, s.Project, s.Tracker, "comment", commentID)
}

func (s Scope) itemData(ref tracker.ItemRef, key string) ItemData {
	if key == "" {
		key = ref.Key
	}
	return ItemData{ID: ref.ID, Number: ref.Number, Name: ref.Name, Link: ref.Link, Key: key}
}

func (s Scope) event(typ, id, correlation string, d Data, at time.Time) eventlog.Event {
	d.Tracker, d.Project = s.Tracker, s.Project
	raw, _ := json.Marshal(d) // Data holds nothing json cannot encode
	return eventlog.Event{
		ID: id, Tenant: s.Tenant, Workspace: s.Workspace, Type: typ,
		Correlation: correlation, Data: raw, At: at,
	}
}

func (s Scope) created(it tracker.Item, key, correlation string, at time.Time) eventlog.Event {
	return s.event(TypeItemCreated, s.CreatedID(it.Ref.ID), correlation, s.itemAsRead(it, key), at)
}

// restored is the creation of an item listed again after its removal,
// which was published from the version removed.
func (s Scope) restored(it tracker.Item, removed time.Time, key, correlation string, at time.Time) eventlog.Event {
	d := s.itemAsRead(it, key)
	d.Restored = true
	return s.event(TypeItemCreated, s.RestoredID(it.Ref.ID, removed), correlation, d, at)
}

// itemAsRead is a creation's payload: the item as read.
func (s Scope) itemAsRead(it tracker.Item, key string) Data {
	return Data{Item: s.itemData(it.Ref, key), Title: it.Title, Description: it.Description, State: it.State, Labels: it.Labels}
}

func (s Scope) changed(it tracker.Item, from snapshot, key, field, old, new, actor, correlation string, at time.Time) eventlog.Event {
	return s.event(TypeItemChanged, s.ChangedID(it.Ref.ID, field, ledger.Canonical(field, from.Item), new, from.Item.UpdatedAt), correlation, Data{
		Item: s.itemData(it.Ref, key), Field: field, Old: rawOrNull(old), New: rawOrNull(new), Actor: actor,
	}, at)
}

func (s Scope) commented(it tracker.Item, key string, c tracker.Comment, correlation string, at time.Time) eventlog.Event {
	return s.event(TypeItemCommented, s.CommentedID(c.ID), correlation, Data{
		Item:    s.itemData(it.Ref, key),
		Comment: &CommentData{ID: c.ID, Body: c.Body, Author: c.Author, CreatedAt: c.CreatedAt},
	}, at)
}

func (s Scope) removed(it tracker.Item, key string, deleted *bool, correlation string, at time.Time) eventlog.Event {
	return s.event(TypeItemRemoved, s.RemovedID(it.Ref.ID, it.UpdatedAt), correlation, Data{
		Item: s.itemData(it.Ref, key), Deleted: deleted,
	}, at)
}

func rawOrNull(canonical string) json.RawMessage {
	if canonical == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(canonical)
}

// Package eventstore is the port every event-store backend implements: an
// append-only log of streams with optimistic concurrency, and a global ordered
// log ($all) that projections subscribe to.
//
// The contract (checked by eventstore/storetest against every backend):
//   - Append is atomic: all events of one call land, in order, or none do.
//   - A nil error from Append means the events are durable (fsynced).
//   - Event IDs are supplied by the caller. Repeating an append whose events
//     are already stored, in the same stream and order, with an expectation
//     that would have put them where they are (or Any), is a no-op answered
//     with where they are, so a retried request never duplicates. Any other
//     append of stored IDs fails (ErrDuplicateEventID) and stores nothing.
//   - SubscribeAll delivers every event after `after` exactly once, in log
//     order: first the stored ones (catch-up), then new ones as they are
//     appended (live), with no gap and no duplicate at the handover. Ending
//     the context given to SubscribeAll ends the subscription. (The one
//     exception: events of a stream tombstoned since, see Tombstoner.)
//   - After Close, every method of the store, and Recv of its subscriptions,
//     fails with an error that errors.Is ErrClosed.
package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Store is an event store backend.
type Store interface {
	// Append writes events to the end of stream if its current revision
	// satisfies expect. It returns ErrWrongExpectedRevision (wrapped in a
	// *WrongRevisionError) when it does not.
	Append(ctx context.Context, stream string, expect Revision, events ...EventData) (AppendResult, error)
	// ReadStream returns up to max events of stream starting at revision from
	// (inclusive; Start for the first event). max <= 0 means all.
	// It returns ErrStreamNotFound when the stream has no events, and
	// ErrStreamDeleted when it was tombstoned (see Tombstoner).
	ReadStream(ctx context.Context, stream string, from Revision, max int) ([]RecordedEvent, error)
	// SubscribeAll starts a catch-up subscription to the global log,
	// exclusive of after (Position{} means from the beginning).
	SubscribeAll(ctx context.Context, after Position, filter Filter) (Subscription, error)
}

// MultiAppender is implemented by backends that can append to several
// streams in one atomic step: a command that must also take a uniqueness
// reservation (a login) then needs one durable write instead of two, and no
// reservation is ever left without its owner. Callers fall back to separate
// appends when the store lacks it.
type MultiAppender interface {
	// AppendMulti appends every part or none. Each part must name a
	// different stream and carry at least one event (else ErrInvalidAppend).
	// Every part's expectation is checked as Append checks it; when one fails
	// the error is that part's *WrongRevisionError and nothing is written.
	// The events are stored at consecutive positions, part after part in the
	// order given, and the results are in that order too.
	//
	// Retries follow Append's rule for the whole call: when every event id of
	// every part is already stored as exactly that part's events, the call is
	// a no-op answered with the original results; when only some are, it fails
	// with ErrDuplicateEventID.
	AppendMulti(ctx context.Context, parts ...StreamAppend) ([]AppendResult, error)
}

// Tombstoner is implemented by backends that can delete a stream for good,
// as EventStoreDB's hard delete ("tombstone") does: the stream's name can
// never be read or written again. Crypto-shredding relies on it: the
// events of a subject keep only ciphertext, the subject's key lives in a
// stream of its own, and tombstoning that stream erases the key.
//
// The contract (checked by eventstore/storetest on the backends that have
// it):
//   - A nil error from Tombstone means the tombstone is durable, as an
//     append's events are.
//   - Tombstoning a stream without events still tombstones its name;
//     tombstoning a stream again is a no-op answered with nil. A name that
//     ValidateStreamName rejects fails with ErrInvalidAppend.
//   - Afterwards ReadStream of the stream fails with ErrStreamDeleted (not
//     ErrStreamNotFound), and so does every Append to it, whatever its
//     expectation, a retry of events stored before the tombstone included,
//     and every AppendMulti with a part for it. They store nothing.
//   - The stream's earlier events may still reach subscribers of $all, and
//     backends differ there. EventStoreDB's $all bypasses the stream
//     index: a subscription (or a read of $all) that passes those events
//     gets them, payloads and all, until an operator's scavenge removes
//     them from the chunk files; so on EventStoreDB the data is gone only
//     after a scavenge. EventStoreDB also writes the tombstone itself to
//     $all, as an event of type "$streamDeleted" of that stream at revision
//     2^63-1, which the esdb backend does not deliver. The memory backend
//     drops the events at once and its subscriptions skip them. So
//     SubscribeAll may or may not deliver the events appended before the
//     tombstone: callers must rely on neither.
type Tombstoner interface {
	Tombstone(ctx context.Context, stream string) error
}

// StreamAppend is one stream's part of a MultiAppender.AppendMulti.
type StreamAppend struct {
	Stream string
	Expect Revision
	Events []EventData
}

// HeadReader is implemented by backends that can report the position of the
// newest durable event in the log (the last acknowledged append's, once
// Append has returned). The projection watchdog uses it to detect stalled
// subscriptions.
type HeadReader interface {
	Head(ctx context.Context) (Position, error)
}

// SequentialPositions is implemented by backends whose positions number
// the events of the log 1, 2, 3… (Commit == Prepare == the sequence
// number), so that the events between two positions are their difference.
// Others (EventStoreDB's byte offsets) need the events read to count them.
type SequentialPositions interface {
	SequentialPositions()
}

// Errors returned by backends. Backends wrap them; test with errors.Is.
var (
	ErrWrongExpectedRevision = errors.New("eventstore: wrong expected revision")
	ErrStreamNotFound        = errors.New("eventstore: stream not found")
	// ErrStreamDeleted: the stream was tombstoned (see Tombstoner); it can
	// never be read or written again.
	ErrStreamDeleted = errors.New("eventstore: stream deleted")
	// ErrDuplicateEventID: an event ID of the append is already stored, but not
	// as the same events in the same stream (so the append is not a retry).
	ErrDuplicateEventID = errors.New("eventstore: duplicate event id")
	// ErrInvalidAppend: the append itself is malformed (empty stream name, no
	// events, empty type, zero event ID, ...).
	ErrInvalidAppend = errors.New("eventstore: invalid append")
	// ErrClosed: the store or subscription was closed.
	ErrClosed = errors.New("eventstore: closed")
	// ErrUnavailable: the store cannot be reached now (a server backend
	// lost its server). The outcome of an append that fails with it is
	// unknown: resending the same append finds out.
	ErrUnavailable = errors.New("eventstore: unavailable")
)

// WrongRevisionError tells which revision the stream had when an append's
// expectation failed.
type WrongRevisionError struct {
	Stream   string
	Expected Revision
	// Actual is the stream's current revision; NoStream when it has no events.
	Actual Revision
}

func (e *WrongRevisionError) Error() string {
	return fmt.Sprintf("eventstore: append to %q: expected revision %v, stream is at %v", e.Stream, e.Expected, e.Actual)
}

func (e *WrongRevisionError) Unwrap() error { return ErrWrongExpectedRevision }

// Revision is a position within one stream (the 0-based index of an event),
// or, when appending, an expectation about the stream's current revision.
// The zero value is Any.
type Revision struct {
	kind revisionKind
	n    uint64
}

type revisionKind uint8

const (
	kindAny revisionKind = iota
	kindNoStream
	kindStreamExists
	kindExact
)

var (
	// Any accepts whatever the stream's state is.
	Any = Revision{kind: kindAny}
	// NoStream expects the stream to have no events.
	NoStream = Revision{kind: kindNoStream}
	// StreamExists expects the stream to have at least one event.
	StreamExists = Revision{kind: kindStreamExists}
	// Start is the revision of a stream's first event, for ReadStream.
	Start = Exact(0)
)

// Exact is the revision of the event with 0-based index n in its stream. As an
// append expectation it means "the stream's last event is at revision n".
func Exact(n uint64) Revision { return Revision{kind: kindExact, n: n} }

// IsAny, IsNoStream, IsStreamExists report the kind of an expectation.
func (r Revision) IsAny() bool          { return r.kind == kindAny }
func (r Revision) IsNoStream() bool     { return r.kind == kindNoStream }
func (r Revision) IsStreamExists() bool { return r.kind == kindStreamExists }

// Exact returns the revision number and whether r is an exact revision.
func (r Revision) Exact() (uint64, bool) { return r.n, r.kind == kindExact }

// Satisfied reports whether a stream whose last event is at revision current
// (exists == false: the stream has no events) meets expectation r.
func (r Revision) Satisfied(current uint64, exists bool) bool {
	switch r.kind {
	case kindAny:
		return true
	case kindNoStream:
		return !exists
	case kindStreamExists:
		return exists
	default:
		return exists && current == r.n
	}
}

// Places reports whether an append with expectation r would have put its
// first event at revision first. A repeat of stored events is a retry only
// where its expectation places them (the rule EventStoreDB applies).
func (r Revision) Places(first uint64) bool {
	switch r.kind {
	case kindExact:
		return r.n+1 == first
	case kindNoStream:
		return first == 0
	case kindStreamExists:
		return first > 0
	}
	return true // Any
}

func (r Revision) String() string {
	switch r.kind {
	case kindAny:
		return "any"
	case kindNoStream:
		return "no-stream"
	case kindStreamExists:
		return "stream-exists"
	default:
		return fmt.Sprintf("%d", r.n)
	}
}

// Position is a place in the global log. Backends with a dense sequence
// (embedded) set Commit == Prepare == the 1-based sequence number; EventStoreDB
// uses sparse byte offsets. Position{} is before the first event.
type Position struct {
	Commit  uint64
	Prepare uint64
}

// Beginning is the position before the first event of the log.
var Beginning = Position{}

// Compare returns -1, 0 or +1 as p is before, equal to or after q.
func (p Position) Compare(q Position) int {
	switch {
	case p.Commit < q.Commit:
		return -1
	case p.Commit > q.Commit:
		return 1
	case p.Prepare < q.Prepare:
		return -1
	case p.Prepare > q.Prepare:
		return 1
	}
	return 0
}

// After reports whether p comes after q.
func (p Position) After(q Position) bool { return p.Compare(q) > 0 }

// IsZero reports whether p is the beginning of the log.
func (p Position) IsZero() bool { return p == Position{} }

func (p Position) String() string { return fmt.Sprintf("%d/%d", p.Commit, p.Prepare) }

// EventID identifies an event. It is a UUID in binary form, chosen by the
// caller (deterministic for a retried request).
type EventID [16]byte

// IsZero reports whether id is all zeroes (not a valid event ID).
func (id EventID) IsZero() bool { return id == EventID{} }

func (id EventID) String() string {
	const hex = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
	return string(b[:])
}

// EventData is an event to append.
type EventData struct {
	ID       EventID
	Type     string
	Data     []byte
	Metadata []byte
}

// RecordedEvent is an event as stored.
type RecordedEvent struct {
	ID       EventID
	Stream   string
	Revision uint64 // 0-based index within Stream
	Position Position
	Type     string
	Data     []byte
	Metadata []byte
	Created  time.Time // when the store recorded it (UTC)
}

// AppendResult tells where an append landed.
type AppendResult struct {
	// NextExpected is the revision of the last event now in the stream: pass
	// Exact(NextExpected) to append after it.
	NextExpected uint64
	// Position of the last appended event in the global log.
	Position Position
}

// Filter selects events of a subscription. Empty lists select everything; a
// non-empty list selects events whose stream (or type) starts with one of its
// prefixes. Both lists must match when both are set.
type Filter struct {
	StreamPrefixes    []string
	EventTypePrefixes []string
}

// Match reports whether an event of stream and eventType passes f.
func (f Filter) Match(stream, eventType string) bool {
	return matchPrefix(f.StreamPrefixes, stream) && matchPrefix(f.EventTypePrefixes, eventType)
}

func matchPrefix(prefixes []string, s string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Batch is what a subscription delivers: zero or more events in log order and
// how far the subscription has scanned. The events' Data and Metadata may be
// shared with other subscribers: read them, never modify them.
type Batch struct {
	Events []RecordedEvent
	// Checkpoint is the position up to which the log has been scanned,
	// including events the filter dropped. It is at or after the last event of
	// Events. Resuming SubscribeAll after Checkpoint neither repeats nor skips.
	Checkpoint Position
	// CaughtUp is set once the subscription has delivered everything that was
	// in the log when it reached the head; it stays set on later (live)
	// batches. The batch that first reaches the head is delivered even when it
	// holds no events, and so is a live batch whose events the filter dropped,
	// so that Checkpoint follows the log.
	CaughtUp bool
	// More is set when events after Checkpoint were already there when the
	// batch was cut (a batch limit reached before the head, or received
	// events still waiting): the next Recv returns without waiting for an
	// append. A consumer that paces its live batches to gather appends
	// should not wait then, or it falls further behind at every batch.
	More bool
}

// Subscription is a catch-up-then-live subscription to the global log.
type Subscription interface {
	// Recv blocks until the next batch is available. It returns an error when
	// ctx ends, the subscription is closed or dropped; the subscription is
	// unusable after an error.
	Recv(ctx context.Context) (Batch, error)
	// Close ends the subscription and releases its resources.
	Close() error
}

// ValidateAppend checks the parts of an append that every backend rejects
// with ErrInvalidAppend.
func ValidateAppend(stream string, events []EventData) error {
	if err := ValidateStreamName(stream); err != nil {
		return err
	}
	if len(events) == 0 {
		return fmt.Errorf("%w: no events for stream %q", ErrInvalidAppend, stream)
	}
	seen := make(map[EventID]struct{}, len(events))
	for i, e := range events {
		if e.ID.IsZero() {
			return fmt.Errorf("%w: event %d of stream %q has no id", ErrInvalidAppend, i, stream)
		}
		if e.Type == "" {
			return fmt.Errorf("%w: event %d of stream %q has no type", ErrInvalidAppend, i, stream)
		}
		if _, dup := seen[e.ID]; dup {
			return fmt.Errorf("%w: event id %s repeated within one append", ErrInvalidAppend, e.ID)
		}
		seen[e.ID] = struct{}{}
	}
	return nil
}

// ValidateRead checks what every backend rejects of a ReadStream with
// ErrInvalidAppend: a stream name ValidateStreamName rejects, or a from that
// is neither an exact revision nor Any (which reads from the start). It
// returns the revision to read from.
func ValidateRead(stream string, from Revision) (uint64, error) {
	if err := ValidateStreamName(stream); err != nil {
		return 0, err
	}
	start, ok := from.Exact()
	if !ok && !from.IsAny() {
		return 0, fmt.Errorf("%w: read %q from %v: want an exact revision", ErrInvalidAppend, stream, from)
	}
	return start, nil
}

// ValidateStreamName rejects names that no backend can store: empty, NUL
// bytes, or names of EventStoreDB system streams.
func ValidateStreamName(stream string) error {
	switch {
	case stream == "":
		return fmt.Errorf("%w: empty stream name", ErrInvalidAppend)
	case strings.IndexByte(stream, 0) >= 0:
		return fmt.Errorf("%w: stream name contains NUL", ErrInvalidAppend)
	case strings.HasPrefix(stream, "$"):
		return fmt.Errorf("%w: stream name %q is reserved", ErrInvalidAppend, stream)
	case len(stream) > 1024:
		return fmt.Errorf("%w: stream name longer than 1024 bytes", ErrInvalidAppend)
	}
	return nil
}

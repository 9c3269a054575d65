package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// IDBlockReservedType is the event type of an id block reservation.
const IDBlockReservedType = "IDBlockReserved.v1"

// IDBlockReserved records that the ids From..To (inclusive) of a kind belong
// to the allocator that appended it. Blocks of one kind follow each other
// without overlap because every reservation is appended with the id stream's
// exact expected revision.
type IDBlockReserved struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// EventType implements domain.Event.
func (IDBlockReserved) EventType() string { return IDBlockReservedType }

// IDStream returns the name of the id stream of kind: "ids-{kind}".
func IDStream(kind string) string { return "ids-" + kind }

// IDAllocator hands out integer ids of one kind ("account", "device", ...),
// unique across every process sharing the event store, starting at 1. It
// reserves blocks of Options.IDBlockSize ids at a time by appending an
// IDBlockReserved event to the kind's id stream with the exact expected
// revision (optimistic concurrency), and serves ids from the block in memory.
// Ids left in a block when the process stops are never used: ids are unique
// and increasing per allocator, not dense. Safe for concurrent use.
type IDAllocator struct {
	x      *Executor
	kind   string
	stream string
	owner  string        // random name of this allocator, in its event ids
	sem    chan struct{} // guards everything below; a channel so waits honour ctx

	// mu also guards next and last, so that Next takes an id of the
	// current block without queueing behind a reservation on sem: every
	// account create takes one.
	mu         sync.Mutex
	next, last int64       // unused ids of the current block: next..last
	head       record.Head // of the id stream, as far as read or appended
	top        int64       // highest id reserved by anyone, as far as read
}

// IDs returns the executor's allocator for kind, creating it on first use.
func (x *Executor) IDs(kind string) *IDAllocator {
	x.idsMu.Lock()
	defer x.idsMu.Unlock()
	a, ok := x.ids[kind]
	if !ok {
		a = &IDAllocator{x: x, kind: kind, stream: IDStream(kind), owner: nonce(), sem: make(chan struct{}, 1)}
		x.ids[kind] = a
	}
	return a
}

// NextID returns a new id of kind (see IDAllocator).
func (x *Executor) NextID(ctx context.Context, kind string) (int64, error) {
	return x.IDs(kind).Next(ctx)
}

// Next returns an id of the allocator's kind that no allocator on this
// store has returned or will return.
func (a *IDAllocator) Next(ctx context.Context) (int64, error) {
	if !validKind(a.kind) {
		return 0, opError("allocate", a.stream, fmt.Errorf("invalid id kind %q: want lower-case letters, digits and _", a.kind))
	}
	if id, ok := a.take(); ok {
		return id, nil
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, opError("allocate", a.stream, ctx.Err())
	}
	defer func() { <-a.sem }()
	// Another caller may have reserved a block while this one waited.
	if id, ok := a.take(); ok {
		return id, nil
	}
	return a.reserve(ctx)
}

// take returns the next id of the current block, if one is left.
func (a *IDAllocator) take() (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == 0 || a.next > a.last {
		return 0, false
	}
	id := a.next
	a.next++
	return id, true
}

// reserve appends the next block after the highest one reserved so far and
// returns its first id. The caller gets that id from reserve itself: once
// the rest of the block is published, callers that did not wait on sem may
// take all of it.
func (a *IDAllocator) reserve(ctx context.Context) (int64, error) {
	size := int64(a.x.opts.IDBlockSize)
	// Every lost race means another allocator got a block, so there is no
	// livelock; a loser only risks starving behind allocators that come back
	// quickly, so it retries at once after a short jitter instead of backing
	// off exponentially. The bound is a safety net; ctx bounds the wait.
	const maxAttempts = 1000
	for failures := 0; ; {
		if err := a.catchUp(ctx); err != nil {
			return 0, err
		}
		from, to := a.top+1, a.top+size
		meta := domain.Metadata{OccurredAt: a.x.now(), Actor: domain.SystemActor(), RequestID: "ids-" + a.kind + "-" + a.owner}
		// The id names this allocator and the block, so a resend after an
		// unknown outcome is recognised by the store, while two allocators
		// racing for the same block never share an id.
		ids := record.Derived("ids|" + a.kind + "|" + a.owner + "|" + strconv.FormatInt(from, 10))
		res, err := a.x.rec.Record(ctx, a.stream, a.head.Expect(), []domain.Event{IDBlockReserved{From: from, To: to}}, meta, ids)
		if err == nil {
			a.head, a.top = record.Head{Exists: true, Revision: res.NextExpected, Position: res.Position}, to
			a.mu.Lock()
			a.next, a.last = from+1, to
			a.mu.Unlock()
			return from, nil
		}
		if !errors.Is(err, eventstore.ErrWrongExpectedRevision) {
			return 0, opError("allocate", a.stream, err)
		}
		failures++
		if failures >= maxAttempts {
			return 0, opError("allocate", a.stream, fmt.Errorf("%w: gave up after %d attempts: %w", ErrConflict, failures, err))
		}
		if err := a.x.rec.Policy.Pause(ctx, 1); err != nil {
			return 0, opError("allocate", a.stream, err)
		}
	}
}

// catchUp reads the id stream's events after the last one seen.
func (a *IDAllocator) catchUp(ctx context.Context) error {
	top, head, err := record.Fold(ctx, a.x.rec, a.stream, a.head, a.top,
		func(top int64, e domain.Event, _ eventstore.RecordedEvent) (int64, error) {
			if b, ok := e.(IDBlockReserved); ok && b.To > top {
				top = b.To
			}
			return top, nil
		})
	a.top, a.head = top, head
	if err != nil {
		return opError("allocate", a.stream, err)
	}
	return nil
}

func validKind(kind string) bool {
	if kind == "" || len(kind) > 64 {
		return false
	}
	for i := 0; i < len(kind); i++ {
		c := kind[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

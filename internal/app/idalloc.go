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
// exact expected revision. An Import block belongs to no allocator: its ids
// are kept for objects copied from another system with their own ids
// (ReserveImport), and only such a copy creates an object under one.
type IDBlockReserved struct {
	From   int64 `json:"from"`
	To     int64 `json:"to"`
	Import bool  `json:"import,omitempty"`
}

// IDRange is the ids From..To, inclusive.
type IDRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// idBlocks is what an id stream says: the highest id reserved by anyone and
// the ranges reserved for import, in order, adjacent ones merged.
type idBlocks struct {
	top     int64
	imports []IDRange
}

func (b idBlocks) add(e IDBlockReserved) idBlocks {
	if e.To > b.top {
		b.top = e.To
	}
	if !e.Import {
		return b
	}
	if n := len(b.imports); n > 0 && b.imports[n-1].To+1 == e.From {
		b.imports = append(b.imports[:n-1:n-1], IDRange{From: b.imports[n-1].From, To: e.To})
		return b
	}
	b.imports = append(b.imports[:len(b.imports):len(b.imports)], IDRange{From: e.From, To: e.To})
	return b
}

// imported reports whether id lies in a range reserved for import.
func (b idBlocks) imported(id int64) bool {
	for _, r := range b.imports {
		if id >= r.From && id <= r.To {
			return true
		}
	}
	return false
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
	blocks     idBlocks    // what the id stream says, as far as read
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
	meta := domain.Metadata{OccurredAt: a.x.now(), Actor: domain.SystemActor(), RequestID: "ids-" + a.kind + "-" + a.owner}
	b, _, err := a.appendBlock(ctx, "allocate", meta, func(top int64) (IDBlockReserved, record.IDs, bool) {
		// The id names this allocator and the block, so a resend after an
		// unknown outcome is recognised by the store, while two allocators
		// racing for the same block never share an id.
		return IDBlockReserved{From: top + 1, To: top + size},
			record.Derived("ids|" + a.kind + "|" + a.owner + "|" + strconv.FormatInt(top+1, 10)), true
	})
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	a.next, a.last = b.From+1, b.To
	a.mu.Unlock()
	return b.From, nil
}

// appendBlock appends the block next makes of the highest id reserved so
// far (with its event ids), after reading the id stream, with the stream's
// exact expected revision, reading and asking again on a conflict; ok false
// when next wants none. The caller holds sem.
func (a *IDAllocator) appendBlock(ctx context.Context, op string, meta domain.Metadata,
	next func(top int64) (IDBlockReserved, record.IDs, bool)) (b IDBlockReserved, ok bool, err error) {
	// Every lost race means another allocator got a block, so there is no
	// livelock; a loser only risks starving behind allocators that come back
	// quickly, so it retries at once after a short jitter instead of backing
	// off exponentially. The bound is a safety net; ctx bounds the wait.
	const maxAttempts = 1000
	for failures := 0; ; {
		if err := a.catchUp(ctx); err != nil {
			return b, false, err
		}
		b, ids, ok := next(a.blocks.top)
		if !ok {
			return b, false, nil
		}
		res, err := a.x.rec.Record(ctx, a.stream, a.head.Expect(), []domain.Event{b}, meta, ids)
		if err == nil {
			a.head = record.Head{Exists: true, Revision: res.NextExpected, Position: res.Position}
			a.blocks = a.blocks.add(b)
			return b, true, nil
		}
		if !errors.Is(err, eventstore.ErrWrongExpectedRevision) {
			return b, false, opError(op, a.stream, err)
		}
		if failures++; failures >= maxAttempts {
			return b, false, opError(op, a.stream, fmt.Errorf("%w: gave up after %d attempts: %w", ErrConflict, failures, err))
		}
		if err := a.x.rec.Policy.Pause(ctx, 1); err != nil {
			return b, false, opError(op, a.stream, err)
		}
	}
}

// catchUp reads the id stream's events after the last one seen.
func (a *IDAllocator) catchUp(ctx context.Context) error {
	blocks, head, err := record.Fold(ctx, a.x.rec, a.stream, a.head, a.blocks,
		func(b idBlocks, e domain.Event, _ eventstore.RecordedEvent) (idBlocks, error) {
			if r, ok := e.(IDBlockReserved); ok {
				b = b.add(r)
			}
			return b, nil
		})
	a.blocks, a.head = blocks, head
	if err != nil {
		return opError("allocate", a.stream, err)
	}
	return nil
}

// ImportRanges are the ids of a kind reserved for import, and the highest
// id reserved by anyone.
type ImportRanges struct {
	Kind   string    `json:"kind"`
	Top    int64     `json:"top"`
	Ranges []IDRange `json:"ranges"`
}

// ReserveImport makes every id of the allocator's kind above the highest
// reserved so far, up to through, an id for import: no allocator on the
// store hands it out afterwards, so new objects continue above it, and an
// import may create an object under it (CreateWithID). Ids at or below the
// highest reserved stay as they are: an allocator may hold them. through 0
// reserves nothing and answers the ranges as they are.
func (a *IDAllocator) ReserveImport(ctx context.Context, through int64, rm RequestMeta) (ImportRanges, error) {
	if !validKind(a.kind) {
		return ImportRanges{}, opError("reserve", a.stream, fmt.Errorf("invalid id kind %q", a.kind))
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return ImportRanges{}, opError("reserve", a.stream, ctx.Err())
	}
	defer func() { <-a.sem }()
	meta := domain.Metadata{OccurredAt: a.x.now(), Actor: rm.Actor, RequestID: rm.RequestID}
	_, _, err := a.appendBlock(ctx, "reserve", meta, func(top int64) (IDBlockReserved, record.IDs, bool) {
		from := strconv.FormatInt(top+1, 10)
		return IDBlockReserved{From: top + 1, To: through, Import: true},
			record.Derived("ids|" + a.kind + "|import|" + from + "|" + strconv.FormatInt(through, 10)), through > top
	})
	if err != nil {
		return ImportRanges{}, err
	}
	return a.ranges(), nil
}

func (a *IDAllocator) ranges() ImportRanges {
	return ImportRanges{Kind: a.kind, Top: a.blocks.top, Ranges: append([]IDRange{}, a.blocks.imports...)}
}

// checkImport returns nil when id lies in a range reserved for import, else
// an error wrapping ErrIDNotImported.
func (a *IDAllocator) checkImport(ctx context.Context, id int64) error {
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return opError("import", a.stream, ctx.Err())
	}
	defer func() { <-a.sem }()
	if a.blocks.imported(id) {
		return nil
	}
	if err := a.catchUp(ctx); err != nil {
		return err
	}
	if a.blocks.imported(id) {
		return nil
	}
	return fmt.Errorf("%w: %s id %d", ErrIDNotImported, a.kind, id)
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

package projections

import (
	"context"
	"sync"
	"time"

	"tvsm/eventstore"
	"tvsm/internal/platform/indexheap"
)

// Progress is the log position up to which a projection has applied events,
// and a way to wait for it: a write that appended at position p calls
// Wait(ctx, p) to read its own write. The zero value is at
// eventstore.Beginning and ready to use. It is safe for concurrent use.
//
// Waiters are kept in a heap ordered by the position they wait for, so an
// Advance wakes only the waiters it satisfies, each exactly once.
type Progress struct {
	mu      sync.Mutex
	pos     eventstore.Position
	waiters indexheap.Heap[waiter, *waiter]
}

// Position returns the position applied so far.
func (p *Progress) Position() eventstore.Position {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pos
}

// Advance records that everything up to pos has been applied, and wakes the
// waiters it satisfies. A pos that is not after the current position is
// ignored: progress never moves backwards.
func (p *Progress) Advance(pos eventstore.Position) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !pos.After(p.pos) {
		return
	}
	p.pos = pos
	for p.waiters.Len() > 0 && p.waiters.Min().pos.Compare(pos) <= 0 {
		w := p.waiters.Pop()
		close(w.done)
	}
}

// Wait blocks until everything up to pos has been applied (Position() is at or
// after pos) and returns nil, or until ctx ends and returns its error.
func (p *Progress) Wait(ctx context.Context, pos eventstore.Position) error {
	_, err := p.WaitWithin(ctx, pos, 0)
	return err
}

// WaitWithin is Wait for at most timeout (none when <= 0): it reports
// false, with a nil error, when pos is still not applied by then. A timer
// is made only when the caller has to wait; read-your-writes waits run on
// every write, and a context with a deadline for each cost about 2% of an
// account create's CPU (docs/benchmarks.md).
func (p *Progress) WaitWithin(ctx context.Context, pos eventstore.Position, timeout time.Duration) (bool, error) {
	p.mu.Lock()
	if p.pos.Compare(pos) >= 0 {
		p.mu.Unlock()
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		p.mu.Unlock()
		return false, err
	}
	w := &waiter{pos: pos, done: make(chan struct{})}
	p.waiters.Push(w)
	p.mu.Unlock()

	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-w.done:
		return true, nil
	case <-ctx.Done():
	case <-expired:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.index < 0 { // Advance satisfied it meanwhile
		return true, nil
	}
	p.waiters.Remove(w)
	return false, ctx.Err()
}

// Waiters returns how many callers are blocked in Wait (for metrics).
func (p *Progress) Waiters() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiters.Len()
}

// waiter is one blocked Wait call.
type waiter struct {
	pos   eventstore.Position
	done  chan struct{}
	index int // in the heap; -1 once removed
}

// Less orders waiters by the position they wait for.
func (w *waiter) Less(o *waiter) bool { return w.pos.Compare(o.pos) < 0 }

// HeapIndex is where the waiter is in the heap (indexheap.Elem).
func (w *waiter) HeapIndex() *int { return &w.index }

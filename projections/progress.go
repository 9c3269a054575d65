package projections

import (
	"container/heap"
	"context"
	"sync"

	"tvsm/eventstore"
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
	waiters waiterHeap
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
	for len(p.waiters) > 0 && p.waiters[0].pos.Compare(pos) <= 0 {
		w := heap.Pop(&p.waiters).(*waiter)
		close(w.done)
	}
}

// Wait blocks until everything up to pos has been applied (Position() is at or
// after pos) and returns nil, or until ctx ends and returns its error.
func (p *Progress) Wait(ctx context.Context, pos eventstore.Position) error {
	p.mu.Lock()
	if p.pos.Compare(pos) >= 0 {
		p.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		p.mu.Unlock()
		return err
	}
	w := &waiter{pos: pos, done: make(chan struct{})}
	heap.Push(&p.waiters, w)
	p.mu.Unlock()

	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.index < 0 { // Advance satisfied it meanwhile
		return nil
	}
	heap.Remove(&p.waiters, w.index)
	return ctx.Err()
}

// Waiters returns how many callers are blocked in Wait (for metrics).
func (p *Progress) Waiters() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

// waiter is one blocked Wait call.
type waiter struct {
	pos   eventstore.Position
	done  chan struct{}
	index int // in the heap; -1 once removed
}

// waiterHeap is a min-heap of waiters by position.
type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].pos.Compare(h[j].pos) < 0 }
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}

func (h *waiterHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.index = -1
	*h = old[:n-1]
	return w
}

package app

import (
	"context"
	"sync"

	"tvsm/eventstore"
)

// WrittenPositions collects the newest log position a request's writes
// reached, so that the answer can name it (X-TVSM-Position) and a read sent
// to another node can wait for that node to apply it. Execute and
// WaitApplied note positions in the WrittenPositions of their context.
type WrittenPositions struct {
	mu  sync.Mutex
	pos eventstore.Position
}

type writtenPositionsKey struct{}

// TrackWrites returns ctx carrying a new WrittenPositions, and it.
func TrackWrites(ctx context.Context) (context.Context, *WrittenPositions) {
	w := &WrittenPositions{}
	return context.WithValue(ctx, writtenPositionsKey{}, w), w
}

// Latest is the newest position noted so far; zero when none was.
func (w *WrittenPositions) Latest() eventstore.Position {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pos
}

// notePosition records pos in ctx's WrittenPositions, if it has one.
func notePosition(ctx context.Context, pos eventstore.Position) {
	w, ok := ctx.Value(writtenPositionsKey{}).(*WrittenPositions)
	if !ok || pos.IsZero() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if pos.After(w.pos) {
		w.pos = pos
	}
}

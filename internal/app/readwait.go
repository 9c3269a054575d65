package app

import (
	"context"
	"fmt"
	"time"

	"tvsm/eventstore"
)

// DefaultReadTimeout is the read-your-writes wait used when none is given.
const DefaultReadTimeout = 5 * time.Second

// ProgressWaiter is what WaitApplied waits on; *projections.Progress
// implements it. WaitWithin waits until pos is applied (true), ctx ends (its
// error) or timeout passes (false, nil).
type ProgressWaiter interface {
	WaitWithin(ctx context.Context, pos eventstore.Position, timeout time.Duration) (bool, error)
}

// WaitApplied blocks until the projection behind p has applied pos (a
// Result's Position), so that a write can answer with what a read would
// show. It waits at most timeout (DefaultReadTimeout when <= 0) and then
// fails with an error wrapping ErrReadModelLag; the write itself stands. A
// zero pos returns at once. When ctx ends first, its error is returned.
// pos is noted in ctx's WrittenPositions (TrackWrites), if it has one.
func WaitApplied(ctx context.Context, p ProgressWaiter, pos eventstore.Position, timeout time.Duration) error {
	if pos.IsZero() {
		return nil
	}
	notePosition(ctx, pos)
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	applied, err := p.WaitWithin(ctx, pos, timeout)
	if err != nil {
		return err
	}
	if !applied {
		return fmt.Errorf("%w: position %v not applied within %v", ErrReadModelLag, pos, timeout)
	}
	return nil
}

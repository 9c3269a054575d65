package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tvsm/eventstore"
)

// DefaultReadTimeout is the read-your-writes wait used when none is given.
const DefaultReadTimeout = 5 * time.Second

// ProgressWaiter is what WaitApplied waits on; *projections.Progress
// implements it.
type ProgressWaiter interface {
	Wait(ctx context.Context, pos eventstore.Position) error
}

// WaitApplied blocks until the projection behind p has applied pos (a
// Result's Position), so that a write can answer with what a read would
// show. It waits at most timeout (DefaultReadTimeout when <= 0) and then
// fails with an error wrapping ErrReadModelLag; the write itself stands. A
// zero pos returns at once. When ctx ends first, its error is returned.
func WaitApplied(ctx context.Context, p ProgressWaiter, pos eventstore.Position, timeout time.Duration) error {
	if pos.IsZero() {
		return nil
	}
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	wctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrReadModelLag)
	defer cancel()
	err := p.Wait(wctx, pos)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), ErrReadModelLag) {
		return fmt.Errorf("%w: position %v not applied within %v", ErrReadModelLag, pos, timeout)
	}
	return err
}

package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/projections"
)

func TestWaitApplied(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pos := func(n uint64) eventstore.Position { return eventstore.Position{Commit: n, Prepare: n} }
	var p projections.Progress
	p.Advance(pos(5))
	if err := WaitApplied(ctx, &p, pos(5), time.Second); err != nil {
		t.Fatalf("applied already: %v", err)
	}
	if err := WaitApplied(ctx, &p, eventstore.Position{}, time.Nanosecond); err != nil {
		t.Fatalf("zero position: %v", err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		p.Advance(pos(7))
	}()
	if err := WaitApplied(ctx, &p, pos(6), 5*time.Second); err != nil {
		t.Fatalf("applied later: %v", err)
	}
	start := time.Now()
	err := WaitApplied(ctx, &p, pos(100), 20*time.Millisecond)
	if !errors.Is(err, ErrReadModelLag) || time.Since(start) > 2*time.Second {
		t.Fatalf("lagging: %v after %v, want ErrReadModelLag after 20ms", err, time.Since(start))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := WaitApplied(cctx, &p, pos(100), time.Second); !errors.Is(err, context.Canceled) || errors.Is(err, ErrReadModelLag) {
		t.Fatalf("caller gone: %v, want context.Canceled", err)
	}
	if p.Waiters() != 0 {
		t.Fatalf("%d waiters left behind", p.Waiters())
	}
}

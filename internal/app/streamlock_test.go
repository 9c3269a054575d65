package app

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func (l *streamLocks) streams() int {
	n := 0
	for i := range l.shards {
		l.shards[i].mu.Lock()
		n += len(l.shards[i].m)
		l.shards[i].mu.Unlock()
	}
	return n
}

func TestStreamLocksExcludeAndForget(t *testing.T) {
	var l streamLocks
	ctx := t.Context()
	// Given many callers on a few streams, each holds its stream alone: the
	// unsynchronised counters are never incremented concurrently (the race
	// detector and the totals check it), and locks are reused from the pool.
	counters := map[string]*int{"a": new(int), "b": new(int), "c": new(int)}
	var wg sync.WaitGroup
	for i := range 60 {
		stream := string(rune('a' + i%3))
		wg.Go(func() {
			for range 200 {
				h, err := l.lock(ctx, stream)
				if err != nil {
					t.Error(err)
					return
				}
				*counters[stream]++
				h.unlock()
			}
		})
	}
	wg.Wait()
	for s, n := range counters {
		if *n != 20*200 {
			t.Errorf("stream %s: %d increments, want %d", s, *n, 20*200)
		}
	}
	// Then no lock is left behind once nobody holds or waits.
	if n := l.streams(); n != 0 {
		t.Fatalf("%d stream locks left after every holder unlocked", n)
	}
}

func TestStreamLockWaiterGivesUpWithItsContext(t *testing.T) {
	var l streamLocks
	held, err := l.lock(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	// Given the stream held, a waiter whose context ends gets its error and
	// holds nothing.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	waiter, err := l.lock(ctx, "s")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock of a held stream = %v, want DeadlineExceeded", err)
	}
	waiter.unlock() // the zero heldLock unlocks nothing
	// When the holder unlocks, the stream is free again and forgotten.
	held.unlock()
	if n := l.streams(); n != 0 {
		t.Fatalf("%d stream locks left", n)
	}
	again, err := l.lock(t.Context(), "s")
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again.unlock()
}

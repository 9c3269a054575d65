package projections

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"tvsm/eventstore"
)

func pos(n uint64) eventstore.Position { return eventstore.Position{Commit: n, Prepare: n} }

func TestProgressWaitReturnsAtOnceWhenApplied(t *testing.T) {
	var p Progress
	if err := p.Wait(context.Background(), eventstore.Beginning); err != nil {
		t.Fatalf("Wait(Beginning) on zero Progress = %v", err)
	}
	p.Advance(pos(10))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // even with an ended ctx, an applied position is not an error
	for _, q := range []eventstore.Position{pos(3), pos(10)} {
		if err := p.Wait(ctx, q); err != nil {
			t.Errorf("Wait(%v) at %v = %v, want nil", q, p.Position(), err)
		}
	}
}

func TestProgressWaitWakesOnAdvance(t *testing.T) {
	var p Progress
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		done <- p.Wait(ctx, pos(5))
	}()
	eventually(t, "waiter registered", func() bool { return p.Waiters() == 1 })
	p.Advance(pos(4))
	select {
	case err := <-done:
		t.Fatalf("Wait(5) returned %v at position 4", err)
	case <-time.After(20 * time.Millisecond):
	}
	p.Advance(pos(6))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait = %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Wait did not wake on Advance")
	}
	if n := p.Waiters(); n != 0 {
		t.Errorf("Waiters = %d after wake, want 0", n)
	}
}

func TestProgressWaitTimesOut(t *testing.T) {
	var p Progress
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Wait(ctx, pos(1))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 15*time.Millisecond {
		t.Errorf("Wait returned after %v, before the deadline", d)
	}
	if n := p.Waiters(); n != 0 {
		t.Errorf("Waiters = %d after timeout, want 0 (cancelled waiters are removed)", n)
	}
}

func TestProgressWaitWithin(t *testing.T) {
	var p Progress
	p.Advance(pos(3))
	// Given a position already applied, when waiting within a timeout, then
	// it is applied at once.
	if ok, err := p.WaitWithin(t.Context(), pos(3), time.Nanosecond); !ok || err != nil {
		t.Fatalf("WaitWithin(applied) = %v, %v; want true, nil", ok, err)
	}
	// Given a position nobody applies, then the wait ends after the timeout,
	// not applied and without an error, and leaves no waiter behind.
	start := time.Now()
	if ok, err := p.WaitWithin(t.Context(), pos(4), 20*time.Millisecond); ok || err != nil {
		t.Fatalf("WaitWithin(never applied) = %v, %v; want false, nil", ok, err)
	}
	if d := time.Since(start); d < 15*time.Millisecond {
		t.Errorf("WaitWithin returned after %v, before its timeout", d)
	}
	if n := p.Waiters(); n != 0 {
		t.Errorf("Waiters = %d after the timeout, want 0", n)
	}
	// Given a position applied during the wait, then it is applied.
	go func() {
		time.Sleep(10 * time.Millisecond)
		p.Advance(pos(5))
	}()
	if ok, err := p.WaitWithin(t.Context(), pos(5), testTimeout); !ok || err != nil {
		t.Fatalf("WaitWithin(applied later) = %v, %v; want true, nil", ok, err)
	}
}

func TestProgressNeverMovesBackwards(t *testing.T) {
	var p Progress
	p.Advance(pos(10))
	p.Advance(pos(3))
	p.Advance(eventstore.Position{Commit: 10, Prepare: 9})
	if got := p.Position(); got != pos(10) {
		t.Fatalf("Position = %v, want 10/10", got)
	}
}

func TestProgressManyWaiters(t *testing.T) {
	var p Progress
	const waiters = 2000
	const top = 100
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	short, cancelShort := context.WithCancel(ctx)

	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := pos(uint64(i%top) + 1)
			if i%10 == 0 { // a tenth give up early and must be removed
				if err := p.Wait(short, pos(top+1)); !errors.Is(err, context.Canceled) {
					errs <- err
				}
				return
			}
			if err := p.Wait(ctx, target); err != nil {
				errs <- err
				return
			}
			if p.Position().Compare(target) < 0 {
				errs <- errors.New("woke before its position was applied")
			}
		}()
	}
	eventually(t, "all waiters registered", func() bool { return p.Waiters() == waiters })
	cancelShort()
	eventually(t, "cancelled waiters removed", func() bool { return p.Waiters() == waiters-waiters/10 })
	for n := uint64(1); n <= top; n += 3 {
		p.Advance(pos(n))
	}
	p.Advance(pos(top))
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := p.Waiters(); n != 0 {
		t.Errorf("Waiters = %d at the end, want 0", n)
	}
}

func BenchmarkProgressWaitApplied(b *testing.B) {
	var p Progress
	p.Advance(pos(1))
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Wait(ctx, pos(1))
		}
	})
}

// BenchmarkProgressAdvanceWakes64 measures one Advance waking 64 blocked
// waiters (each op: Advance, then all 64 have returned from Wait).
func BenchmarkProgressAdvanceWakes64(b *testing.B) {
	const waiters = 64
	var p Progress
	ctx := context.Background()
	ack := make(chan struct{}, waiters)
	for range waiters {
		go func() {
			for i := 1; i <= b.N; i++ {
				if err := p.Wait(ctx, pos(uint64(i))); err != nil {
					b.Error(err)
				}
				ack <- struct{}{}
			}
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		for p.Waiters() < waiters { // all blocked again (cheap spin, bench only)
			runtime.Gosched()
		}
		p.Advance(pos(uint64(i)))
		for range waiters {
			<-ack
		}
	}
}

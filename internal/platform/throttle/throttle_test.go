package throttle

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

var t0 = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

func failN(l *Limiter, key string, n int) {
	for range n {
		l.Fail(key)
	}
}

func mustAllow(t *testing.T, l *Limiter, key string) {
	t.Helper()
	if ok, wait := l.Allow(key); !ok {
		t.Fatalf("%q refused (retry after %v), want allowed", key, wait)
	}
}

func mustRefuse(t *testing.T, l *Limiter, key string, wantWait time.Duration) {
	t.Helper()
	ok, wait := l.Allow(key)
	if ok {
		t.Fatalf("%q allowed, want refused", key)
	}
	if wait != wantWait {
		t.Fatalf("%q retry after %v, want %v", key, wait, wantWait)
	}
}

// The fifth failure within a minute locks the key; it opens again when the
// oldest failure leaves the window, one failure at a time.
func TestLimiterSlidingWindow(t *testing.T) {
	clock := testutil.NewClock(t0)
	l := New(Options{Limit: 5, Window: time.Minute, Clock: clock.Now})
	for range 4 {
		l.Fail("alice")
		clock.Advance(10 * time.Second) // failures at 0, 10, 20, 30 s
		mustAllow(t, l, "alice")
	}
	l.Fail("alice") // at 40 s: the fifth
	mustRefuse(t, l, "alice", 20*time.Second)
	mustAllow(t, l, "bob")

	clock.Advance(20 * time.Second) // 60 s: the failure at 0 s leaves the window
	mustAllow(t, l, "alice")
	l.Fail("alice") // at 60 s
	mustRefuse(t, l, "alice", 10*time.Second)
	clock.Advance(10 * time.Second)
	mustAllow(t, l, "alice")
}

func TestLimiterSucceedForgets(t *testing.T) {
	clock := testutil.NewClock(t0)
	l := New(Options{Limit: 2, Clock: clock.Now})
	failN(l, "alice", 2)
	mustRefuse(t, l, "alice", DefaultWindow)
	l.Succeed("alice")
	mustAllow(t, l, "alice")
	if n := l.Len(); n != 0 {
		t.Fatalf("%d keys tracked after Succeed, want 0", n)
	}
	l.Succeed("nobody") // no-op
}

// Failures beyond the limit keep only the newest Limit, so a key under
// constant attack is refused until Window after the attack stops.
func TestLimiterKeepsNewestFailures(t *testing.T) {
	clock := testutil.NewClock(t0)
	l := New(Options{Limit: 3, Window: time.Minute, Clock: clock.Now})
	for range 10 {
		l.Fail("k")
		clock.Advance(time.Second)
	}
	// Failures at 0..9 s; the kept ones are 7, 8, 9 s; now is 10 s.
	mustRefuse(t, l, "k", 57*time.Second)
	clock.Advance(57 * time.Second)
	mustAllow(t, l, "k")
}

// At MaxKeys, a new key evicts the one whose last failure is oldest; keys
// whose failures left the window are dropped first, on any Fail.
func TestLimiterBoundsKeys(t *testing.T) {
	clock := testutil.NewClock(t0)
	l := New(Options{Limit: 1, Window: time.Minute, MaxKeys: 3, Clock: clock.Now})
	for i := range 3 {
		l.Fail(fmt.Sprint("k", i))
		clock.Advance(time.Second)
	}
	l.Fail("k0") // k0 is now the most recent
	l.Fail("k3") // evicts k1
	if n := l.Len(); n != 3 {
		t.Fatalf("%d keys, want 3", n)
	}
	mustAllow(t, l, "k1")
	mustRefuse(t, l, "k0", time.Minute) // failed just now
	clock.Advance(2 * time.Minute)
	l.Fail("fresh")
	if n := l.Len(); n != 1 {
		t.Fatalf("%d keys after the window passed, want only the fresh one", n)
	}
	// Spraying many keys never grows the limiter past MaxKeys.
	for i := range 100 {
		l.Fail(fmt.Sprint("spray", i))
	}
	if n := l.Len(); n != 3 {
		t.Fatalf("%d keys after spraying, want 3", n)
	}
}

// TestLimiterConcurrent exercises the lock under the race detector.
func TestLimiterConcurrent(t *testing.T) {
	l := New(Options{Limit: 3, MaxKeys: 50})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 500 {
				key := fmt.Sprint("k", (w*31+i)%80)
				l.Allow(key)
				l.Fail(key)
				if i%7 == 0 {
					l.Succeed(key)
				}
			}
		})
	}
	wg.Wait()
	if n := l.Len(); n > 50 {
		t.Fatalf("%d keys tracked, bound 50", n)
	}
}

// A failure, a quiet window, an Allow that expires the failure, then more
// failures: Allow must drop the emptied key, or the next Fail reads the
// last failure of an entry that has none (it panicked, and failures of that
// key stopped counting).
func TestLimiterFailAfterAllowExpiredEverything(t *testing.T) {
	clock := testutil.NewClock(t0)
	l := New(Options{Limit: 5, Window: time.Minute, Clock: clock.Now})
	l.Fail("10.0.0.1")
	clock.Advance(61 * time.Second)
	mustAllow(t, l, "10.0.0.1")
	if n := l.Len(); n != 0 {
		t.Fatalf("%d keys tracked after their only failure expired, want 0", n)
	}
	for i := 1; i <= 5; i++ {
		mustAllow(t, l, "10.0.0.1")
		l.Fail("10.0.0.1")
		clock.Advance(time.Second)
	}
	// Failures at 61..65 s; now is 66 s: the sixth attempt is refused until
	// the one at 61 s leaves the window.
	mustRefuse(t, l, "10.0.0.1", 55*time.Second)
}

package throttle

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// fail begins an attempt and records it as a failure; the attempt must be
// let through.
func fail(t *testing.T, g *Guard, login, address string) {
	t.Helper()
	a, refusal, ok := g.Begin(context.Background(), login, address)
	if !ok {
		t.Fatalf("%s from %s refused (retry after %v), want let through", login, address, refusal.RetryAfter)
	}
	a.Failed()
}

func mustBegin(t *testing.T, g *Guard, login, address string) Attempt {
	t.Helper()
	a, refusal, ok := g.Begin(context.Background(), login, address)
	if !ok {
		t.Fatalf("%s from %s refused (retry after %v), want let through", login, address, refusal.RetryAfter)
	}
	return a
}

func mustRefuseBegin(t *testing.T, g *Guard, login, address string, wantWait time.Duration) {
	t.Helper()
	if a, refusal, ok := g.Begin(context.Background(), login, address); ok {
		a.Abandoned()
		t.Fatalf("%s from %s let through, want refused", login, address)
	} else if refusal.RetryAfter != wantWait {
		t.Fatalf("%s from %s: retry after %v, want %v", login, address, refusal.RetryAfter, wantWait)
	}
}

// Failures of a login from one address lock that login from that address
// only: its owner elsewhere still logs in.
func TestGuardLimitsLoginPerAddress(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 2, AddressLimit: 100, Clock: clock.Now})
	fail(t, g, "root", "10.0.0.66")
	clock.Advance(10 * time.Second)
	fail(t, g, "root", "10.0.0.66")
	mustRefuseBegin(t, g, "root", "10.0.0.66", 50*time.Second)
	mustBegin(t, g, "root", "10.0.0.1").Succeeded()
	mustBegin(t, g, "bob", "10.0.0.66").Succeeded()
	clock.Advance(50 * time.Second)
	mustBegin(t, g, "root", "10.0.0.66").Abandoned()
}

// Failures from one address of many logins lock that address for every
// login.
func TestGuardLimitsAddress(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 5, AddressLimit: 3, Clock: clock.Now})
	for _, login := range []string{"a", "b", "c"} {
		fail(t, g, login, "10.0.0.66")
	}
	mustRefuseBegin(t, g, "d", "10.0.0.66", time.Minute)
	mustBegin(t, g, "d", "10.0.0.1").Abandoned()
}

// Failures of one login from many addresses reach the login's total limit:
// then the addresses that failed it are refused, an address that did not
// is not, so the owner is never locked out by others.
func TestGuardLoginTotalSparesCleanAddresses(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 5, AddressLimit: 100, LoginTotalLimit: 3, Clock: clock.Now})
	for _, addr := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
		fail(t, g, "root", addr)
	}
	mustRefuseBegin(t, g, "root", "10.0.0.2", time.Minute)
	// A new address gets its one attempt; failing, it is refused too.
	fail(t, g, "root", "10.0.0.4")
	mustRefuseBegin(t, g, "root", "10.0.0.4", time.Minute)
	// The owner's address, with no failure, is checked; so are other logins
	// from the attackers' addresses.
	mustBegin(t, g, "root", "192.0.2.10").Succeeded()
	mustBegin(t, g, "alice", "10.0.0.2").Succeeded()
}

// A success forgets the failures of the login from the address, not the
// address's own, nor the login's from elsewhere.
func TestGuardSuccessForgetsThePair(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 2, AddressLimit: 3, LoginTotalLimit: 100, Clock: clock.Now})
	fail(t, g, "alice", "10.0.0.1")
	fail(t, g, "bob", "10.0.0.1")
	mustBegin(t, g, "alice", "10.0.0.1").Succeeded()
	fail(t, g, "alice", "10.0.0.1") // one failure of alice since the success
	mustRefuseBegin(t, g, "carol", "10.0.0.1", time.Minute)
}

// Concurrent attempts count before their check: of many wrong passwords
// sent at once for one login from one address, only the limit's worth is
// checked (the others wait for them, then find the limit reached), and the
// same for many logins at once from one address.
func TestGuardCountsAttemptsInFlight(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 5, AddressLimit: 20, Clock: clock.Now})
	burst := func(n int, login func(i int) string, address string) (checked int, waits map[time.Duration]int) {
		var mu sync.Mutex
		waits = map[time.Duration]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				a, refusal, ok := g.Begin(context.Background(), login(i), address)
				if ok {
					time.Sleep(time.Millisecond) // the password check
					a.Failed()
				}
				mu.Lock()
				defer mu.Unlock()
				if ok {
					checked++
				} else {
					waits[refusal.RetryAfter]++
				}
			})
		}
		close(start)
		wg.Wait()
		return checked, waits
	}
	if checked, waits := burst(60, func(int) string { return "root" }, "10.0.0.66"); checked != 5 || waits[time.Minute] != 55 {
		t.Fatalf("60 at once for one login: %d checked, refusals by retry-after %v; want 5, and 55 for a minute", checked, waits)
	}
	if checked, waits := burst(100, func(i int) string { return fmt.Sprint("login", i) }, "10.0.0.77"); checked != 20 || waits[time.Minute] != 80 {
		t.Fatalf("100 logins at once from one address: %d checked, refusals %v; want 20, and 80 for a minute", checked, waits)
	}
}

// A burst of logins that succeed (set-top boxes behind one NAT starting
// together) waits for room instead of being refused: all are let through.
func TestGuardLetsConcurrentSuccessesThrough(t *testing.T) {
	g := NewGuard(GuardOptions{LoginLimit: 5, AddressLimit: 20})
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for i := range 200 {
		wg.Go(func() {
			a, _, ok := g.Begin(context.Background(), fmt.Sprint("box", i%40), "10.0.0.1")
			if !ok {
				mu.Lock()
				refused++
				mu.Unlock()
				return
			}
			time.Sleep(time.Millisecond)
			a.Succeeded()
		})
	}
	wg.Wait()
	if refused != 0 {
		t.Fatalf("%d of 200 successful logins refused", refused)
	}
	// Waiting is bounded: attempts that never finish leave the next one
	// refused after MaxWait, told to retry in a second.
	g = NewGuard(GuardOptions{LoginLimit: 1, MaxWait: 20 * time.Millisecond})
	mustBegin(t, g, "a", "10.0.0.1")
	mustRefuseBegin(t, g, "a", "10.0.0.1", InFlightRetry)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, refusal, ok := g.Begin(ctx, "a", "10.0.0.1"); ok || refusal.RetryAfter != InFlightRetry || !refusal.Busy {
		t.Fatalf("canceled wait: ok=%v refusal %+v", ok, refusal)
	}
}

// Given 100 logins that succeeded from one address (set-top boxes behind
// a NAT), when they all log in again at once and none has finished, then
// every one is let through without waiting (the address limit is 20); a
// new login from the address still finds room beside them; and a known
// login that fails still counts for the address.
func TestGuardLetsKnownLoginsThroughAnAddressAtOnce(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 5, AddressLimit: 20, MaxWait: 50 * time.Millisecond, Clock: clock.Now})
	const address = "10.0.0.1"
	for i := range 100 {
		mustBegin(t, g, fmt.Sprint("box", i), address).Succeeded()
	}
	var inFlight []Attempt
	for i := range 100 {
		inFlight = append(inFlight, mustBegin(t, g, fmt.Sprint("box", i), address))
	}
	for i := range 20 {
		inFlight = append(inFlight, mustBegin(t, g, fmt.Sprint("new", i), address))
	}
	// The address is full of new logins in flight; a known one still passes.
	mustBegin(t, g, "box0", address).Succeeded()
	if _, refusal, ok := g.Begin(context.Background(), "new-extra", address); ok || !refusal.Busy {
		t.Fatalf("a 21st new login in flight from one address: ok=%v refusal %+v; want refused busy", ok, refusal)
	}
	for _, a := range inFlight[:20] {
		a.Failed() // 20 known logins fail: the address's limit
	}
	for _, a := range inFlight[20:] {
		a.Abandoned()
	}
	mustRefuseBegin(t, g, "box50", address, time.Minute)
}

// Check and Forget serve credentials verified recently: Check looks at
// failures only, not at attempts in flight.
func TestGuardCheckAndForget(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 2, AddressLimit: 100, Clock: clock.Now})
	a1, a2 := mustBegin(t, g, "root", "10.0.0.1"), mustBegin(t, g, "root", "10.0.0.1")
	if _, ok := g.Check("root", "10.0.0.1"); !ok {
		t.Fatal("Check refused because of attempts in flight")
	}
	a1.Failed()
	a2.Failed()
	if wait, ok := g.Check("root", "10.0.0.1"); ok || wait != time.Minute {
		t.Fatalf("Check after two failures: ok=%v wait=%v", ok, wait)
	}
	g.Forget("root", "10.0.0.1")
	if _, ok := g.Check("root", "10.0.0.1"); !ok {
		t.Fatal("Check refused after Forget")
	}
}

func TestNilGuardAllowsEverything(t *testing.T) {
	var g *Guard
	for range 10 {
		a, _, ok := g.Begin(context.Background(), "x", "y")
		if !ok {
			t.Fatal("a nil guard refused")
		}
		a.Failed()
	}
	a, _, _ := g.Begin(context.Background(), "x", "y")
	a.Succeeded()
	a.Abandoned()
}

func TestNilGuardChecksNothing(t *testing.T) {
	var g *Guard
	if _, ok := g.Check("x", "y"); !ok {
		t.Fatal("a nil guard refused")
	}
	g.Forget("x", "y")
}

// FuzzGuard drives a guard with a byte string, one operation a byte (the
// low three bits: begin, fail, succeed, abandon, check, forget, a clock
// step; the upper five: which of 4 logins from which of 4 addresses, or
// the step's length). Whatever the operations: no panic; a begun attempt
// is let through only while failures and attempts in flight of its login
// and address stay below the limit; refusals say when to retry; and once
// every attempt has finished, nothing is left in flight.
func FuzzGuard(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1 << 3, 1, 1, 1, 6 | 15<<3, 0, 2, 3})
	f.Add([]byte{0, 8, 16, 24, 32, 40, 1, 1, 1, 1, 1, 1, 0, 4, 5, 6 | 31<<3, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const limit = 3
		now := t0
		g := NewGuard(GuardOptions{LoginLimit: limit, AddressLimit: 5, LoginTotalLimit: 4, Window: 10 * time.Second, MaxKeys: 8,
			Clock: func() time.Time { return now }})
		canceled, cancel := context.WithCancel(context.Background())
		cancel() // Begin never waits here: refused at once when full
		var open []Attempt
		for _, op := range ops {
			arg := int(op >> 3)
			login, addr := fmt.Sprint("l", arg%4), fmt.Sprint("a", arg/4%4)
			switch op & 7 {
			case 0:
				inFlight := g.pairsInFlight[pairKey{login, addr}]
				failures, _ := g.pairs.Failures(pairKey{login, addr})
				a, refusal, ok := g.Begin(canceled, login, addr)
				switch {
				case ok && failures+inFlight >= limit:
					t.Fatalf("%s from %s let through with %d failures and %d in flight", login, addr, failures, inFlight)
				case !ok && refusal.RetryAfter <= 0:
					t.Fatalf("%s from %s refused without a wait", login, addr)
				case ok:
					open = append(open, a)
				}
			case 1, 2, 3:
				if len(open) == 0 {
					continue
				}
				i := arg % len(open)
				a := open[i]
				open = append(open[:i], open[i+1:]...)
				[]func(){a.Failed, a.Succeeded, a.Abandoned}[op&7-1]()
			case 4:
				g.Check(login, addr)
			case 5:
				g.Forget(login, addr)
			default:
				now = now.Add(time.Duration(arg%16) * time.Second)
			}
		}
		for _, a := range open {
			a.Abandoned()
		}
		if len(g.pairsInFlight)+len(g.addressesInFlight)+len(g.loginsInFlight) != 0 {
			t.Fatalf("left in flight: %v %v %v", g.pairsInFlight, g.addressesInFlight, g.loginsInFlight)
		}
	})
}

package throttle

import (
	"sync"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// fail begins an attempt and records it as a failure; the attempt must be
// let through.
func fail(t *testing.T, g *Guard, login, address string) {
	t.Helper()
	a, wait, ok := g.Begin(login, address)
	if !ok {
		t.Fatalf("%s from %s refused (retry after %v), want let through", login, address, wait)
	}
	a.Failed()
}

func mustBegin(t *testing.T, g *Guard, login, address string) Attempt {
	t.Helper()
	a, wait, ok := g.Begin(login, address)
	if !ok {
		t.Fatalf("%s from %s refused (retry after %v), want let through", login, address, wait)
	}
	return a
}

func mustRefuseBegin(t *testing.T, g *Guard, login, address string, wantWait time.Duration) {
	t.Helper()
	if a, wait, ok := g.Begin(login, address); ok {
		a.Abandoned()
		t.Fatalf("%s from %s let through, want refused", login, address)
	} else if wait != wantWait {
		t.Fatalf("%s from %s: retry after %v, want %v", login, address, wait, wantWait)
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

// Concurrent attempts count before their check: of many begun together for
// one login from one address, only the limit's worth is let through, and
// those that are let through and fail lock the rest out.
func TestGuardCountsAttemptsInFlight(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 5, AddressLimit: 20, Clock: clock.Now})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted []Attempt
		waits    = map[time.Duration]int{}
	)
	start := make(chan struct{})
	for range 60 {
		wg.Go(func() {
			<-start
			a, wait, ok := g.Begin("root", "10.0.0.66")
			mu.Lock()
			defer mu.Unlock()
			if ok {
				admitted = append(admitted, a)
			} else {
				waits[wait]++
			}
		})
	}
	close(start)
	wg.Wait()
	if len(admitted) != 5 || waits[InFlightRetry] != 55 {
		t.Fatalf("%d let through, refusals by wait %v; want 5, and 55 told to retry in %v", len(admitted), waits, InFlightRetry)
	}
	for _, a := range admitted {
		a.Failed()
	}
	mustRefuseBegin(t, g, "root", "10.0.0.66", time.Minute)

	// A hundred logins at once from one address: the address limit's worth.
	var n int
	var attempts []Attempt
	for i := range 100 {
		if a, _, ok := g.Begin(string(rune('a'+i%26))+string(rune('a'+i/26)), "10.0.0.77"); ok {
			n++
			attempts = append(attempts, a)
		}
	}
	if n != 20 {
		t.Fatalf("%d of 100 concurrent logins from one address let through, want 20", n)
	}
	// Abandoned attempts count for nothing.
	for _, a := range attempts {
		a.Abandoned()
	}
	mustBegin(t, g, "zz", "10.0.0.77").Abandoned()
}

func TestNilGuardAllowsEverything(t *testing.T) {
	var g *Guard
	for range 10 {
		a, _, ok := g.Begin("x", "y")
		if !ok {
			t.Fatal("a nil guard refused")
		}
		a.Failed()
	}
	a, _, _ := g.Begin("x", "y")
	a.Succeeded()
	a.Abandoned()
}

package throttle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// waiting returns how many attempts wait in g's queues.
func waiting(g *Guard) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, q := range g.waiters {
		for w := q.head; w != nil; w = w.next {
			n++
		}
	}
	return n
}

// waitUntil polls cond for up to ten seconds.
func waitUntil(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf(format, args...)
		}
	}
}

// beginInTurn starts Begin of login from address in a goroutine once the
// attempts started before it wait, and returns where its outcome goes.
func beginInTurn(t *testing.T, g *Guard, login, address string) <-chan Attempt {
	t.Helper()
	before := waiting(g)
	out := make(chan Attempt, 1)
	go func() {
		a, refusal, ok := g.Begin(context.Background(), login, address)
		if !ok {
			t.Errorf("%s from %s refused (%+v), want let through", login, address, refusal)
			close(out)
			return
		}
		out <- a
	}()
	waitUntil(t, func() bool { return waiting(g) == before+1 }, "%s from %s never waited", login, address)
	return out
}

// Given an address full of AddressLimit new logins in flight and ten more
// waiting, when the attempts in flight finish one at a time, then each
// finish lets exactly the oldest waiter through, in the order they came.
func TestGuardHandsRoomToTheOldestWaiter(t *testing.T) {
	g := NewGuard(GuardOptions{LoginLimit: 5, AddressLimit: 3, MaxWait: time.Hour})
	const address = "10.0.0.1"
	var inFlight []Attempt
	for i := range 3 {
		inFlight = append(inFlight, mustBegin(t, g, fmt.Sprint("first", i), address))
	}
	var queued []<-chan Attempt
	for i := range 10 {
		queued = append(queued, beginInTurn(t, g, fmt.Sprint("box", i), address))
	}
	for i, next := range queued {
		inFlight[0].Succeeded()
		inFlight = inFlight[1:]
		a, ok := <-next
		if !ok {
			t.FailNow()
		}
		if a.key.login != fmt.Sprint("box", i) {
			t.Fatalf("finish %d let %s through, want box%d", i, a.key.login, i)
		}
		for _, later := range queued[i+1:] {
			select {
			case a := <-later:
				t.Fatalf("finish %d also let %s through", i, a.key.login)
			default:
			}
		}
		inFlight = append(inFlight, a)
	}
	for _, a := range inFlight {
		a.Abandoned()
	}
	if n := waiting(g); n != 0 {
		t.Fatalf("%d still waiting", n)
	}
}

// Given attempts of one login from one address waiting for the pair's
// attempts in flight, when those fail and reach the pair's limit, then the
// waiters are refused at once for the failures' wait, not left to time out.
func TestGuardRefusesWaitersOnceFailuresReachTheLimit(t *testing.T) {
	clock := testutil.NewClock(t0)
	g := NewGuard(GuardOptions{LoginLimit: 2, AddressLimit: 20, MaxWait: time.Hour, Clock: clock.Now})
	a1, a2 := mustBegin(t, g, "root", "10.0.0.66"), mustBegin(t, g, "root", "10.0.0.66")
	done := make(chan Refusal, 3)
	for range 3 {
		before := waiting(g)
		go func() {
			a, refusal, ok := g.Begin(context.Background(), "root", "10.0.0.66")
			if ok {
				a.Abandoned()
				t.Error("let through after the pair's limit was reached")
			}
			done <- refusal
		}()
		waitUntil(t, func() bool { return waiting(g) == before+1 }, "the attempt never waited")
	}
	a1.Failed()
	a2.Failed()
	for range 3 {
		if r := <-done; r.RetryAfter != time.Minute || r.Busy {
			t.Fatalf("refusal %+v, want a minute for failures", r)
		}
	}
}

// Given a new login waiting for its address, full of other new logins, when
// the login succeeds from the address elsewhere meanwhile (so that a known
// attempt of it takes the pair's one place) and the address's attempt
// finishes, then the waiter waits on for the pair, and is let through when
// the pair's attempt finishes.
func TestGuardMovesAWaiterToTheLimitThatHoldsIt(t *testing.T) {
	g := NewGuard(GuardOptions{LoginLimit: 1, AddressLimit: 1, MaxWait: time.Hour})
	const address = "10.0.0.1"
	other := mustBegin(t, g, "alice", address)   // the address is full
	waiter := beginInTurn(t, g, "root", address) // held by the address
	g.Forget("root", address)                    // root is known there now
	known := mustBegin(t, g, "root", address)    // takes the pair's place
	other.Abandoned()                            // frees the address, not the pair
	select {
	case <-waiter:
		t.Fatal("let through while its pair was full")
	case <-time.After(20 * time.Millisecond):
	}
	g.mu.Lock()
	held := g.waiters[waitKeyOf(pairLimit, pairKey{"root", address})] != nil
	g.mu.Unlock()
	if !held {
		t.Fatal("the waiter is not in its pair's queue")
	}
	known.Succeeded()
	(<-waiter).Succeeded()
	if n := waiting(g); n != 0 {
		t.Fatalf("%d still waiting", n)
	}
}

// Many attempts of a few logins from a few addresses, with random outcomes,
// waits and cancellations: the attempts in flight never exceed a limit,
// every Begin returns, and nothing is left in flight or waiting.
func TestGuardWaitersUnderConcurrency(t *testing.T) {
	const loginLimit, addressLimit = 3, 4
	g := NewGuard(GuardOptions{LoginLimit: loginLimit, AddressLimit: addressLimit, LoginTotalLimit: 1000, Window: time.Millisecond,
		MaxWait: 5 * time.Millisecond})
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			ctx := context.Background()
			if r.IntN(10) == 0 {
				c, cancel := context.WithTimeout(ctx, time.Duration(r.IntN(2000))*time.Microsecond)
				defer cancel()
				ctx = c
			}
			login, address := fmt.Sprint("l", r.IntN(6)), fmt.Sprint("a", r.IntN(3))
			a, _, ok := g.Begin(ctx, login, address)
			if !ok {
				return
			}
			g.mu.Lock()
			pair, addr := g.pairsInFlight[a.key], g.addressesInFlight[address]
			g.mu.Unlock()
			if pair > loginLimit || addr > addressLimit {
				t.Errorf("%d in flight for %s from %s, %d from the address", pair, login, address, addr)
			}
			time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
			[]func(){a.Failed, a.Succeeded, a.Abandoned}[r.IntN(3)]()
		})
	}
	wg.Wait()
	if n := waiting(g); n != 0 {
		t.Fatalf("%d still waiting", n)
	}
	if len(g.pairsInFlight)+len(g.addressesInFlight)+len(g.loginsInFlight) != 0 {
		t.Fatalf("left in flight: %v %v %v", g.pairsInFlight, g.addressesInFlight, g.loginsInFlight)
	}
	if len(g.waiters) != 0 {
		t.Fatalf("%d queues left", len(g.waiters))
	}
}

package throttle

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of GuardOptions.
const (
	DefaultLoginTotalLimit = 20
	DefaultMaxWait         = 2 * time.Second
)

// InFlightRetry is the wait a Guard answers when an attempt is refused
// because attempts still being checked would reach a limit if they failed,
// and they did not finish within GuardOptions.MaxWait.
const InFlightRetry = time.Second

// GuardOptions configure a Guard. Zero fields take the defaults.
type GuardOptions struct {
	// LoginLimit is the failures allowed per login from one client address
	// within Window (default DefaultLimit, 5).
	LoginLimit int
	// AddressLimit is the failures allowed per client address within Window,
	// whatever the logins (default DefaultAddressLimit, 20).
	AddressLimit int
	// LoginTotalLimit is the failures allowed per login from all addresses
	// together within Window (default DefaultLoginTotalLimit, 20). Reaching
	// it refuses only the addresses that have themselves failed for that
	// login within Window: an address that has not keeps being checked, so
	// that nobody can lock the owner of a login out by failing it.
	LoginTotalLimit int
	// Window is the sliding window (default one minute).
	Window time.Duration
	// MaxKeys bounds the keys tracked by each of the three limits.
	MaxKeys int
	// MaxWait bounds how long Begin waits for attempts in flight to finish
	// when they could reach a limit (default DefaultMaxWait): a burst of
	// logins from one address (set-top boxes behind one NAT starting
	// together) is checked a limit's worth at a time instead of refused.
	MaxWait time.Duration
	// KnownFor is how long a login that succeeded from an address stays
	// known there (Standing; default DefaultKnownFor).
	KnownFor time.Duration
	Clock    func() time.Time
}

// Guard throttles failed logins by three counts together: per login and
// client address (guessing one login's password from one address), per
// address (trying many logins from one address) and per login across
// addresses (guessing from many addresses), the last one applied only to
// addresses that have failed for the login themselves.
//
// An attempt is counted from the moment it begins, before its password is
// checked (Begin), and its outcome confirms or releases it: so concurrent
// attempts cannot all pass a limit that each of them alone respects. A nil
// *Guard allows everything.
type Guard struct {
	pairs     *Keyed[pairKey]
	addresses *Limiter
	logins    *Limiter
	known     *knownPairs
	maxWait   time.Duration

	mu sync.Mutex
	// Attempts begun and not yet finished, per key of each limit.
	pairsInFlight     map[pairKey]int
	addressesInFlight map[string]int
	loginsInFlight    map[string]int
	// Attempts waiting in Begin for room, in arrival order, in the queue of
	// the limit that holds them. A finishing attempt serves the queues of
	// its keys: it hands the room it frees to the first waiter instead of
	// waking them all, so a burst from one address costs the same per
	// attempt whether ten or ten thousand wait.
	waiters map[waitKey]*waitQueue

	// Attempts refused, for metrics: by the failures recorded, and for
	// want of room while others were in flight.
	refusedFailed, refusedBusy atomic.Uint64
}

// Refusals returns how many attempts the guard has refused: because the
// failures recorded reached a limit, and because attempts in flight left
// no room within MaxWait.
func (g *Guard) Refusals() (failed, busy uint64) {
	if g == nil {
		return 0, 0
	}
	return g.refusedFailed.Load(), g.refusedBusy.Load()
}

// pairKey is a login tried from an address.
type pairKey struct{ login, address string }

// NewGuard returns a guard with o.
func NewGuard(o GuardOptions) *Guard {
	if o.AddressLimit <= 0 {
		o.AddressLimit = DefaultAddressLimit
	}
	if o.LoginTotalLimit <= 0 {
		o.LoginTotalLimit = DefaultLoginTotalLimit
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	limit := func(n int) Options { return Options{Limit: n, Window: o.Window, MaxKeys: o.MaxKeys, Clock: o.Clock} }
	return &Guard{
		pairs:             NewKeyed[pairKey](limit(o.LoginLimit)),
		addresses:         New(limit(o.AddressLimit)),
		logins:            New(limit(o.LoginTotalLimit)),
		known:             newKnownPairs(o.KnownFor, o.MaxKeys, o.Clock),
		maxWait:           o.MaxWait,
		pairsInFlight:     map[pairKey]int{},
		addressesInFlight: map[string]int{},
		loginsInFlight:    map[string]int{},
		waiters:           map[waitKey]*waitQueue{},
	}
}

// Attempt is a login attempt a Guard let through. Exactly one of Failed,
// Succeeded or Abandoned must be called once its credentials are checked.
// The zero Attempt (of a nil Guard) does nothing.
type Attempt struct {
	g   *Guard
	key pairKey
	// known: the login had succeeded from the address (Standing Known),
	// so the attempt is not counted among the address's in flight.
	known bool
}

// Refusal says why Begin refused an attempt, and when to try again.
type Refusal struct {
	// RetryAfter is how long until the attempt may be tried again.
	RetryAfter time.Duration
	// Busy: refused for want of room among attempts still being checked
	// (RetryAfter is InFlightRetry), not for failures recorded.
	Busy bool
}

// Check reports whether login may be tried from address now, by the
// failures recorded only: the question for credentials that need no check
// (verified recently), which cannot fail. When not, retryAfter is how long
// until it may.
func (g *Guard) Check(login, address string) (retryAfter time.Duration, ok bool) {
	if g == nil {
		return 0, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, _, wait := g.room(pairKey{login, address}, false)
	if failed {
		g.refusedFailed.Add(1)
	}
	return wait, !failed
}

// Forget forgets the failures of login from address after a success that
// needed no attempt (Check, then credentials verified recently), and
// remembers the pair as known.
func (g *Guard) Forget(login, address string) {
	if g == nil {
		return
	}
	g.known.add(login, address)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pairs.Succeed(pairKey{login, address})
}

// Begin reports whether an attempt to log in as login from address may be
// checked now and, when it may, counts it as a failure until it finishes.
// When failures recorded reach a limit it is refused at once; when only
// attempts in flight would, were they to fail, it waits for them (at most
// MaxWait, or until ctx ends) and is refused (Refusal.Busy) with
// InFlightRetry if there is still no room.
//
// An attempt of a login that succeeded from the address before (Standing
// Known) is not counted among the address's attempts in flight, nor held
// to them: a reconnect storm of set-top boxes behind one NAT address would
// otherwise be let through AddressLimit at a time, and mostly refused. It
// still counts for its login, and its failure for the address.
func (g *Guard) Begin(ctx context.Context, login, address string) (a Attempt, refusal Refusal, ok bool) {
	if g == nil {
		return Attempt{}, Refusal{}, true
	}
	key := pairKey{login, address}
	known := g.known.has(login, address)
	g.mu.Lock()
	failed, full, wait := g.room(key, known)
	switch {
	case failed:
		g.mu.Unlock()
		g.refusedFailed.Add(1)
		return Attempt{}, Refusal{RetryAfter: wait}, false
	case full == noLimit:
		g.admit(key, known)
		g.mu.Unlock()
		return Attempt{g: g, key: key, known: known}, Refusal{}, true
	case ctx.Err() != nil:
		g.mu.Unlock()
		g.refusedBusy.Add(1)
		return Attempt{}, Refusal{RetryAfter: InFlightRetry, Busy: true}, false
	}
	w := &waiter{key: key, known: known, decided: make(chan struct{})}
	g.enqueue(w, full)
	g.mu.Unlock()

	t := time.NewTimer(g.maxWait)
	defer t.Stop()
	select {
	case <-w.decided:
	case <-t.C:
	case <-ctx.Done():
	}
	g.mu.Lock()
	if w.queue != nil { // not decided in time: give up the place
		g.dequeue(w)
		w.refusal = Refusal{RetryAfter: InFlightRetry, Busy: true}
		g.refusedBusy.Add(1)
	}
	g.mu.Unlock()
	if !w.admitted {
		return Attempt{}, w.refusal, false
	}
	return Attempt{g: g, key: key, known: known}, Refusal{}, true
}

// limit names one of the guard's three limits.
type limit uint8

const (
	noLimit limit = iota
	pairLimit
	addressLimit
	loginLimit
)

// admit counts an attempt in flight; g.mu is held.
func (g *Guard) admit(key pairKey, known bool) {
	g.pairsInFlight[key]++
	if !known {
		g.addressesInFlight[key.address]++
	}
	g.loginsInFlight[key.login]++
}

// room says whether the failures recorded for key reach a limit (with the
// wait until they no longer do), and otherwise which limit, if any, they
// and the attempts in flight would reach (the first of pair, address and
// login); for a known pair, the address's failures alone. g.mu is held.
func (g *Guard) room(key pairKey, known bool) (failed bool, full limit, wait time.Duration) {
	check := func(which limit, failures, inFlight, limit int, until time.Duration) {
		switch {
		case failures >= limit:
			failed, wait = true, max(wait, until, time.Nanosecond)
		case failures+inFlight >= limit && full == noLimit:
			full = which
		}
	}
	pairFailures, pairWait := g.pairs.Failures(key)
	check(pairLimit, pairFailures, g.pairsInFlight[key], g.pairs.Limit(), pairWait)
	addrFailures, addrWait := g.addresses.Failures(key.address)
	addrInFlight := g.addressesInFlight[key.address]
	if known {
		addrInFlight = 0
	}
	check(addressLimit, addrFailures, addrInFlight, g.addresses.Limit(), addrWait)
	// Only an address that failed the login itself is held to the login's
	// total.
	if pairFailures > 0 {
		loginFailures, loginWait := g.logins.Failures(key.login)
		check(loginLimit, loginFailures, g.loginsInFlight[key.login], g.logins.Limit(), loginWait)
	}
	if failed {
		full = noLimit
	}
	return failed, full, wait
}

// Failed records the attempt as a failure for its login, its address and
// the pair of both.
func (a Attempt) Failed() {
	a.end(func(g *Guard) {
		g.pairs.Fail(a.key)
		g.addresses.Fail(a.key.address)
		g.logins.Fail(a.key.login)
	})
}

// Succeeded records a successful login: the failures of the login from
// this address are forgotten. The address's are kept, or one valid account
// would let its holder reset the address limit between guesses at other
// logins; so are the login's from other addresses. The pair is known from
// then on (Standing).
func (a Attempt) Succeeded() {
	if a.g != nil {
		a.g.known.add(a.key.login, a.key.address)
	}
	a.end(func(g *Guard) { g.pairs.Succeed(a.key) })
}

// Abandoned releases an attempt whose credentials could not be checked (the
// check itself failed, or the caller went away): it counts as nothing.
func (a Attempt) Abandoned() { a.end(nil) }

// end takes the attempt out of flight and records its outcome (record,
// unless nil) under the guard's lock.
func (a Attempt) end(record func(*Guard)) {
	g := a.g
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.finish(a.key, a.known)
	if record != nil {
		record(g)
	}
	g.serveWaiters(a.key, a.known)
}

// finish removes an attempt from the in-flight counts; g.mu is held.
func (g *Guard) finish(key pairKey, known bool) {
	decrement(g.pairsInFlight, key)
	if !known {
		decrement(g.addressesInFlight, key.address)
	}
	decrement(g.loginsInFlight, key.login)
}

// serveWaiters decides, once an attempt of key has finished and its outcome
// is recorded, the waiters it may have made room for, or whose limit its
// failure reached: those of its pair, of its address (when the attempt
// held a place there) and of its login. g.mu is held.
func (g *Guard) serveWaiters(key pairKey, known bool) {
	g.serve(g.waiters[waitKeyOf(pairLimit, key)])
	if !known {
		g.serve(g.waiters[waitKeyOf(addressLimit, key)])
	}
	g.serve(g.waiters[waitKeyOf(loginLimit, key)])
}

// decrement lowers m[key], deleting it at zero so that the maps hold only
// attempts in flight.
func decrement[K comparable](m map[K]int, key K) {
	if m[key] <= 1 {
		delete(m, key)
		return
	}
	m[key]--
}

// waiter is an attempt waiting in Begin for room.
type waiter struct {
	key   pairKey
	known bool
	// queue is the queue it waits in; nil once decided.
	queue      *waitQueue
	prev, next *waiter
	// decided is closed once a finishing attempt has admitted (admitted) or
	// refused (refusal) it.
	decided  chan struct{}
	admitted bool
	refusal  Refusal
}

// waitQueue holds the attempts a limit of one key holds, oldest first.
type waitQueue struct {
	key        waitKey
	head, tail *waiter
}

// waitKey names a limit of one key: a pair, an address or a login (the
// other fields empty).
type waitKey struct {
	which          limit
	login, address string
}

// waitKeyOf returns the key of which limit holds an attempt of key.
func waitKeyOf(which limit, key pairKey) waitKey {
	switch which {
	case addressLimit:
		return waitKey{which: which, address: key.address}
	case loginLimit:
		return waitKey{which: which, login: key.login}
	}
	return waitKey{which: which, login: key.login, address: key.address}
}

// enqueue puts w at the end of the queue of the limit that holds it; g.mu
// is held.
func (g *Guard) enqueue(w *waiter, full limit) {
	k := waitKeyOf(full, w.key)
	q := g.waiters[k]
	if q == nil {
		q = &waitQueue{key: k}
		g.waiters[k] = q
	}
	w.queue, w.prev, w.next = q, q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
}

// dequeue takes w out of its queue, deleting the queue once empty; g.mu is
// held.
func (g *Guard) dequeue(w *waiter) {
	q := w.queue
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.queue, w.prev, w.next = nil, nil, nil
	if q.head == nil {
		delete(g.waiters, q.key)
	}
}

// serve decides the waiters of q from the oldest: each is admitted while
// there is room, refused once failures reach a limit, or moved to the queue
// of another limit that now holds it; it stops at the first one q's own
// limit still holds, which holds those behind it too. g.mu is held.
func (g *Guard) serve(q *waitQueue) {
	for q != nil && q.head != nil {
		w := q.head
		failed, full, wait := g.room(w.key, w.known)
		switch {
		case failed:
			g.dequeue(w)
			w.refusal = Refusal{RetryAfter: wait}
			g.refusedFailed.Add(1)
			close(w.decided)
		case full == noLimit:
			g.dequeue(w)
			g.admit(w.key, w.known)
			w.admitted = true
			close(w.decided)
		case full == q.key.which:
			return
		default:
			g.dequeue(w)
			g.enqueue(w, full)
		}
		if q.head == nil {
			return // q was deleted with its last waiter
		}
	}
}

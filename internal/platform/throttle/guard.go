package throttle

import (
	"sync"
	"time"
)

// DefaultLoginTotalLimit is GuardOptions.LoginTotalLimit's default.
const DefaultLoginTotalLimit = 20

// InFlightRetry is the wait a Guard answers when an attempt is refused only
// because attempts still being checked would reach a limit if they failed:
// they finish within a password check, well under a second.
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
	Clock   func() time.Time
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

	mu sync.Mutex
	// Attempts begun and not yet finished, per key of each limit.
	pairsInFlight     map[pairKey]int
	addressesInFlight map[string]int
	loginsInFlight    map[string]int
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
	limit := func(n int) Options { return Options{Limit: n, Window: o.Window, MaxKeys: o.MaxKeys, Clock: o.Clock} }
	return &Guard{
		pairs:             NewKeyed[pairKey](limit(o.LoginLimit)),
		addresses:         New(limit(o.AddressLimit)),
		logins:            New(limit(o.LoginTotalLimit)),
		pairsInFlight:     map[pairKey]int{},
		addressesInFlight: map[string]int{},
		loginsInFlight:    map[string]int{},
	}
}

// Attempt is a login attempt a Guard let through. Exactly one of Failed,
// Succeeded or Abandoned must be called once its credentials are checked.
// The zero Attempt (of a nil Guard) does nothing.
type Attempt struct {
	g   *Guard
	key pairKey
}

// Begin reports whether an attempt to log in as login from address may be
// checked now and, when it may, counts it as a failure until it finishes.
// When it may not, retryAfter is how long until it may (the longest wait
// of the limits reached).
func (g *Guard) Begin(login, address string) (a Attempt, retryAfter time.Duration, ok bool) {
	if g == nil {
		return Attempt{}, 0, true
	}
	key := pairKey{login, address}
	g.mu.Lock()
	defer g.mu.Unlock()
	pairFailed, pairWait := g.pairs.Failures(key)
	addrFailed, addrWait := g.addresses.Failures(address)
	retryAfter = max(
		refusal(pairFailed, g.pairsInFlight[key], g.pairs.Limit(), pairWait),
		refusal(addrFailed, g.addressesInFlight[address], g.addresses.Limit(), addrWait))
	if pairFailed > 0 {
		loginFailed, loginWait := g.logins.Failures(login)
		retryAfter = max(retryAfter, refusal(loginFailed, g.loginsInFlight[login], g.logins.Limit(), loginWait))
	}
	if retryAfter > 0 {
		return Attempt{}, retryAfter, false
	}
	g.pairsInFlight[key]++
	g.addressesInFlight[address]++
	g.loginsInFlight[login]++
	return Attempt{g: g, key: key}, 0, true
}

// refusal returns 0 when failed failures and inFlight attempts, were they
// all to fail, stay below limit; else how long until they may: wait, when
// the failures alone reach the limit, or InFlightRetry.
func refusal(failed, inFlight, limit int, wait time.Duration) time.Duration {
	switch {
	case failed+inFlight < limit:
		return 0
	case failed >= limit:
		return max(wait, time.Nanosecond)
	}
	return InFlightRetry
}

// Failed records the attempt as a failure for its login, its address and
// the pair of both.
func (a Attempt) Failed() {
	if a.g == nil {
		return
	}
	g := a.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.finish(a.key)
	g.pairs.Fail(a.key)
	g.addresses.Fail(a.key.address)
	g.logins.Fail(a.key.login)
}

// Succeeded records a successful login: the failures of the login from
// this address are forgotten. The address's are kept, or one valid account
// would let its holder reset the address limit between guesses at other
// logins; so are the login's from other addresses.
func (a Attempt) Succeeded() {
	if a.g == nil {
		return
	}
	g := a.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.finish(a.key)
	g.pairs.Succeed(a.key)
}

// Abandoned releases an attempt whose credentials could not be checked (the
// check itself failed, or the caller went away): it counts as nothing.
func (a Attempt) Abandoned() {
	if a.g == nil {
		return
	}
	a.g.mu.Lock()
	defer a.g.mu.Unlock()
	a.g.finish(a.key)
}

// finish removes an attempt from the in-flight counts; g.mu is held.
func (g *Guard) finish(key pairKey) {
	decrement(g.pairsInFlight, key)
	decrement(g.addressesInFlight, key.address)
	decrement(g.loginsInFlight, key.login)
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

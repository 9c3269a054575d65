package throttle

import "time"

// GuardOptions configure a Guard. Zero fields take the defaults.
type GuardOptions struct {
	// LoginLimit is the failures allowed per login within Window (default
	// DefaultLimit, 5).
	LoginLimit int
	// AddressLimit is the failures allowed per client address within Window
	// (default DefaultAddressLimit, 20).
	AddressLimit int
	// Window is the sliding window (default one minute).
	Window time.Duration
	// MaxKeys bounds the logins and, separately, the addresses tracked.
	MaxKeys int
	Clock   func() time.Time
}

// Guard throttles failed logins by login and by client address together:
// guessing one login's password is limited by the first, trying many
// logins from one address by the second. A nil *Guard allows everything.
type Guard struct {
	logins, addresses *Limiter
}

// NewGuard returns a guard with o.
func NewGuard(o GuardOptions) *Guard {
	if o.AddressLimit <= 0 {
		o.AddressLimit = DefaultAddressLimit
	}
	return &Guard{
		logins:    New(Options{Limit: o.LoginLimit, Window: o.Window, MaxKeys: o.MaxKeys, Clock: o.Clock}),
		addresses: New(Options{Limit: o.AddressLimit, Window: o.Window, MaxKeys: o.MaxKeys, Clock: o.Clock}),
	}
}

// Allow reports whether a login attempt for login from address may be
// checked now; when not, retryAfter is how long until it may (the longer
// wait of the two limits).
func (g *Guard) Allow(login, address string) (ok bool, retryAfter time.Duration) {
	if g == nil {
		return true, 0
	}
	okLogin, waitLogin := g.logins.Allow(login)
	okAddr, waitAddr := g.addresses.Allow(address)
	return okLogin && okAddr, max(waitLogin, waitAddr)
}

// Fail records a failed attempt for login from address.
func (g *Guard) Fail(login, address string) {
	if g == nil {
		return
	}
	g.logins.Fail(login)
	g.addresses.Fail(address)
}

// Succeed records a successful login: the login's failures are forgotten.
// The address's are kept, or one valid account would let its holder reset
// the address limit between guesses at other logins.
func (g *Guard) Succeed(login string) {
	if g == nil {
		return
	}
	g.logins.Succeed(login)
}

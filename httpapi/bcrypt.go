package httpapi

import (
	"cmp"
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tvsm/internal/platform/admission"
)

// CredentialLookup returns the bcrypt hash and provider scope (nil for a
// superadmin) of admin login, or ok false for an unknown login. It is called
// on every request, so it must be cheap (a read-model lookup); "" as the hash
// means the admin cannot log in.
type CredentialLookup func(login string) (hash string, provider *int64, ok bool)

// BcryptOptions tune a BcryptAuthenticator. Zero values mean the defaults.
type BcryptOptions struct {
	// CacheSize bounds the verification cache (default 10000 entries);
	// negative disables it.
	CacheSize int
	// CacheTTL is how long a verification is trusted (default 5 minutes).
	CacheTTL time.Duration
	// DummyCost is the bcrypt cost of the hash compared for unknown logins,
	// so that they take as long as wrong passwords. Set it to the cost
	// passwords are hashed with (default bcrypt.DefaultCost).
	DummyCost int
	// MaxChecks bounds the password checks (bcrypt comparisons) running at
	// once (default DefaultMaxPasswordChecks), so that failed logins,
	// however many, take at most this many cores from the requests whose
	// credentials are cached. Checks beyond it wait their turn, the
	// caller's standing first (ThrottleLogins gives it); one more check
	// is reserved for logins that succeeded from their address before, so
	// that they need not wait for the others at all. Negative means no
	// bound.
	MaxChecks int
	// MaxCheckWait bounds a check's wait for its turn (default
	// admission.DefaultMaxWait); a check that would wait longer is refused
	// with ErrPasswordChecksBusy: the node is overloaded.
	MaxCheckWait time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DefaultMaxPasswordChecks is BcryptOptions.MaxChecks's default: half the
// cores Go uses, at least one.
func DefaultMaxPasswordChecks() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// ErrPasswordChecksBusy is what Authenticate returns when a password check
// could not have its turn within MaxCheckWait: the node is overloaded, and
// the credentials were not checked (answered 503 with Retry-After).
var ErrPasswordChecksBusy = errors.New("node overloaded: too many password checks waiting")

// BcryptAuthenticator checks admin passwords against their bcrypt hashes.
//
// A bcrypt check costs tens of milliseconds of CPU by design, which would
// cap the API at a few requests per second per core for a sync job sending
// the same credentials on every request. So successful checks are cached,
// keyed by an HMAC (with a per-process random key) of the login, the
// password and the stored hash: a changed password or hash misses the cache
// at once, and the cache never holds anything that would speed up guessing
// a password. Failed checks are not cached. Unknown logins are compared
// against a dummy hash, so timing does not reveal which logins exist.
type BcryptAuthenticator struct {
	lookup CredentialLookup
	size   int
	ttl    time.Duration
	now    func() time.Time
	dummy  []byte
	checks *admission.Queue // turns of comparisons; nil: no bound
	mac    sync.Pool        // of *macState keyed with the process's cache key

	mu    sync.Mutex
	byKey map[cacheKey]*list.Element // of *cacheEntry
	order *list.List                 // oldest verification first

	comparisons atomic.Uint64
}

type cacheKey [sha256.Size]byte

type cacheEntry struct {
	key     cacheKey
	expires time.Time
}

// maxBcryptPassword is the most bcrypt reads of a password; it silently
// ignores the rest, so longer passwords are refused rather than truncated.
const maxBcryptPassword = 72

// NewBcryptAuthenticator returns an authenticator over lookup. It computes
// the dummy hash, which takes one bcrypt hashing at opts.DummyCost.
func NewBcryptAuthenticator(lookup CredentialLookup, opts BcryptOptions) *BcryptAuthenticator {
	a := &BcryptAuthenticator{
		lookup: lookup,
		size:   opts.CacheSize,
		ttl:    opts.CacheTTL,
		now:    opts.Now,
		byKey:  map[cacheKey]*list.Element{},
		order:  list.New(),
	}
	if a.size == 0 {
		a.size = 10_000
	}
	if a.ttl <= 0 {
		a.ttl = 5 * time.Minute
	}
	if a.now == nil {
		a.now = time.Now
	}
	if opts.MaxChecks >= 0 {
		a.checks = admission.New(admission.Options{
			Slots: cmp.Or(opts.MaxChecks, DefaultMaxPasswordChecks()), Reserved: 1, MaxWait: opts.MaxCheckWait, Clock: opts.Now,
		})
	}
	cost := opts.DummyCost
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	cost = min(max(cost, bcrypt.MinCost), bcrypt.MaxCost)
	dummy, err := bcrypt.GenerateFromPassword([]byte(rand.Text()), cost)
	if err != nil {
		panic(fmt.Sprintf("httpapi: dummy bcrypt hash: %v", err)) // only on an invalid cost, excluded above
	}
	a.dummy = dummy
	macKey := []byte(rand.Text())
	a.mac.New = func() any { return &macState{h: hmac.New(sha256.New, macKey)} }
	return a
}

// Authenticate implements Authenticator.
func (a *BcryptAuthenticator) Authenticate(ctx context.Context, login, password string) (Principal, error) {
	if err := ctx.Err(); err != nil {
		return Principal{}, err
	}
	hashed, provider, ok := a.lookup(login)
	if !ok || hashed == "" || len(password) > maxBcryptPassword {
		// As long as a real check, waiting its turn like one.
		if err := a.compare(ctx, a.dummy, password); err != nil && !errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
			return Principal{}, err
		}
		return Principal{}, ErrBadCredentials
	}
	p := principal(login, provider)
	key := a.key(login, password, hashed)
	if a.cached(key) {
		return p, nil
	}
	switch err := a.compare(ctx, []byte(hashed), password); {
	case errors.Is(err, ErrPasswordChecksBusy), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Principal{}, err
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return Principal{}, ErrBadCredentials
	case err != nil:
		return Principal{}, fmt.Errorf("check the password of admin %q: stored hash: %w", login, err)
	}
	a.remember(key)
	return p, nil
}

// Verified returns the principal of login when its password was verified
// recently (the cache): no check is needed, and none is made.
func (a *BcryptAuthenticator) Verified(login, password string) (Principal, bool) {
	hashed, provider, ok := a.lookup(login)
	if !ok || hashed == "" || len(password) > maxBcryptPassword || !a.cached(a.key(login, password, hashed)) {
		return Principal{}, false
	}
	return principal(login, provider), true
}

func principal(login string, provider *int64) Principal {
	p := Principal{Login: login}
	if provider != nil {
		id := *provider
		p.Provider = &id
	}
	return p
}

// Comparisons returns how many bcrypt comparisons the authenticator has
// made: every check that the cache did not answer.
func (a *BcryptAuthenticator) Comparisons() uint64 { return a.comparisons.Load() }

// Refused returns how many checks were refused because they could not
// have their turn within MaxCheckWait.
func (a *BcryptAuthenticator) Refused() uint64 {
	if a.checks == nil {
		return 0
	}
	_, refused, _ := a.checks.Stats()
	return refused
}

// Waiting returns how many checks wait for their turn now.
func (a *BcryptAuthenticator) Waiting() int {
	if a.checks == nil {
		return 0
	}
	_, _, waiting := a.checks.Stats()
	return waiting
}

// compare runs one bcrypt comparison in its turn, by the caller's standing
// and address that ctx carries (withCheckLane, ClientAddress).
func (a *BcryptAuthenticator) compare(ctx context.Context, hashed []byte, password string) error {
	if a.checks != nil {
		release, err := a.checks.Acquire(ctx, checkLane(ctx), ClientAddress(ctx))
		switch {
		case errors.Is(err, admission.ErrOverloaded):
			return ErrPasswordChecksBusy
		case err != nil:
			return err
		}
		defer release()
	}
	a.comparisons.Add(1)
	return bcrypt.CompareHashAndPassword(hashed, []byte(password))
}

type checkLaneKey struct{}

// withCheckLane returns ctx asking for a password check in lane l.
func withCheckLane(ctx context.Context, l admission.Lane) context.Context {
	return context.WithValue(ctx, checkLaneKey{}, l)
}

// checkLane returns the lane ctx asks for; Clean when none (nothing known
// against the caller, nor for it).
func checkLane(ctx context.Context) admission.Lane {
	if l, ok := ctx.Value(checkLaneKey{}).(admission.Lane); ok {
		return l
	}
	return admission.Clean
}

// macState is an HMAC with the buffer its input is assembled in and the
// sum, pooled so that computing a key allocates nothing.
type macState struct {
	h   hash.Hash
	in  []byte
	sum cacheKey
}

// maxPooledMACInput bounds the input buffer kept in the pool.
const maxPooledMACInput = 1 << 10

func (a *BcryptAuthenticator) key(login, password, hashed string) cacheKey {
	m := a.mac.Get().(*macState)
	defer a.mac.Put(m)
	// Each part length-prefixed, so that no two triples give one input.
	m.in = m.in[:0]
	for _, part := range [...]string{login, password, hashed} {
		m.in = binary.BigEndian.AppendUint64(m.in, uint64(len(part)))
		m.in = append(m.in, part...)
	}
	m.h.Reset()
	m.h.Write(m.in)
	m.h.Sum(m.sum[:0])
	if cap(m.in) > maxPooledMACInput {
		m.in = nil
	}
	return m.sum
}

func (a *BcryptAuthenticator) cached(key cacheKey) bool {
	if a.size < 0 {
		return false
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	el, ok := a.byKey[key]
	if !ok {
		return false
	}
	if !now.Before(el.Value.(*cacheEntry).expires) {
		a.order.Remove(el)
		delete(a.byKey, key)
		return false
	}
	return true
}

func (a *BcryptAuthenticator) remember(key cacheKey) {
	if a.size < 0 {
		return
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if el, ok := a.byKey[key]; ok {
		a.order.Remove(el)
	}
	a.byKey[key] = a.order.PushBack(&cacheEntry{key: key, expires: now.Add(a.ttl)})
	// Entries expire in insertion order: drop the expired ones and, when
	// full, the oldest.
	for front := a.order.Front(); front != nil; front = a.order.Front() {
		e := front.Value.(*cacheEntry)
		if a.order.Len() <= a.size && now.Before(e.expires) {
			break
		}
		a.order.Remove(front)
		delete(a.byKey, e.key)
	}
}

// cacheLen returns the number of cached verifications (tests).
func (a *BcryptAuthenticator) cacheLen() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.order.Len()
}

package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/internal/platform/admission"
	"tvsm/internal/platform/throttle"
)

// CodeTooManyRequests is the error code of a 429: too many failed logins,
// or too many connections or websockets from the client's address.
const CodeTooManyRequests = "too_many_requests"

// ThrottledError is the answer to a login attempt refused because of
// earlier failures (for the login, or from the client's address). It
// unwraps to the 429 *Error the API answers; RetryAfter goes into the
// Retry-After header.
type ThrottledError struct {
	RetryAfter time.Duration
	api        *Error
}

// Throttled returns the error of an attempt refused for retryAfter
// because of failed logins.
func Throttled(retryAfter time.Duration) *ThrottledError {
	return Refused(throttle.Refusal{RetryAfter: retryAfter})
}

// Refused returns the error of an attempt the login guard refused: for
// failed logins, or because as many from the address were still being
// checked (a burst of new logins behind one NAT address).
func Refused(r throttle.Refusal) *ThrottledError {
	secs := retryAfterSeconds(r.RetryAfter)
	cause := fmt.Sprintf("too many failed logins; retry in %d s", secs)
	if r.Busy {
		cause = fmt.Sprintf("too many logins from this address are being checked at once; retry in %d s", secs)
	}
	return &ThrottledError{RetryAfter: r.RetryAfter, api: &Error{
		Status: http.StatusTooManyRequests, Code: CodeTooManyRequests, Cause: cause,
	}}
}

func (e *ThrottledError) Error() string { return e.api.Error() }

// Unwrap returns the API error.
func (e *ThrottledError) Unwrap() error { return e.api }

// retryAfterSeconds rounds a wait up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// writeAuthError is WriteError that also sets Retry-After on a throttled
// attempt (429) and on one refused because the password checks waiting
// exceed what the node can check in time (503).
func writeAuthError(c *gin.Context, err error) {
	var te *ThrottledError
	switch {
	case errors.As(err, &te):
		c.Header("Retry-After", strconv.FormatInt(retryAfterSeconds(te.RetryAfter), 10))
	case errors.Is(err, ErrPasswordChecksBusy):
		c.Header("Retry-After", "1")
	}
	WriteError(c, err)
}

type clientAddressKey struct{}

// withClientAddress returns ctx carrying the client's address.
func withClientAddress(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddressKey{}, addr)
}

// ClientAddress returns the client address BasicAuth put in ctx ("" when
// none).
func ClientAddress(ctx context.Context) string {
	a, _ := ctx.Value(clientAddressKey{}).(string)
	return a
}

// ThrottleLogins returns auth guarded by g: after too many failed logins
// for a login from the client's address (ClientAddress, which BasicAuth
// provides), from the address, or for the login from many addresses
// (throttle.Guard), attempts are refused with a *ThrottledError (429)
// without being checked, until the failures age out. Every checked attempt
// counts as a failure from before its check until its outcome, so
// concurrent attempts cannot pass the limits together. A success clears
// the login's failures from the address. A nil g returns auth itself.
//
// Credentials auth verified recently (BcryptAuthenticator's cache) need no
// check and take no part of the limits; concurrent requests with the same
// credentials share one check (a sync job's workers starting together),
// and when it fails each of them counts as a failure.
//
// Checks wait their turn by the attempt's standing (throttle.Standing):
// a login that succeeded from the address before goes first, then
// addresses with no recent failure, then failing addresses, each address
// in turn; so a password spray, however wide, delays an admin by at most
// the checks running when the admin's arrives.
func ThrottleLogins(auth Authenticator, g *throttle.Guard) Authenticator {
	if g == nil {
		return auth
	}
	t := &throttledAuth{auth: auth, guard: g, flights: map[flightKey]*flight{}}
	t.verifier, _ = auth.(verifier)
	return t
}

// verifier tells, without a password check, that credentials were
// verified recently; BcryptAuthenticator is one.
type verifier interface {
	Verified(login, password string) (Principal, bool)
}

type throttledAuth struct {
	auth     Authenticator
	verifier verifier // nil when auth is none
	guard    *throttle.Guard

	mu      sync.Mutex
	flights map[flightKey]*flight
}

// flightKey names credentials being checked: a hash, so that the map holds
// no password.
type flightKey [sha256.Size]byte

// flight is a check of credentials that concurrent requests with the same
// credentials wait for instead of checking them again.
type flight struct {
	done    chan struct{}
	p       Principal
	err     error
	checked bool // false: the check did not happen (throttled, abandoned)
}

func (t *throttledAuth) Authenticate(ctx context.Context, login, password string) (Principal, error) {
	addr := ClientAddress(ctx)
	if wait, ok := t.guard.Check(login, addr); !ok {
		return Principal{}, Throttled(wait)
	}
	if t.verifier != nil {
		if p, ok := t.verifier.Verified(login, password); ok {
			t.guard.Forget(login, addr)
			return p, nil
		}
	}
	// Requests share a check only within one lane: one of a known login
	// never waits for a check queued behind failing addresses.
	lane := checkLaneOf(t.guard.Standing(login, addr))
	key := credentialsKey(login, password, lane)
	for {
		f, leader := t.join(key)
		if leader {
			return t.check(ctx, key, f, lane, login, addr, password)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return Principal{}, ctx.Err()
		}
		switch {
		case !f.checked:
			continue // check them ourselves
		case f.err == nil:
			t.guard.Forget(login, addr)
			return f.p, nil
		case errors.Is(f.err, ErrBadCredentials):
			// The same wrong password, from this address too: a failure
			// like any other, without checking it again.
			attempt, refusal, ok := t.guard.Begin(ctx, login, addr)
			if !ok {
				return Principal{}, Refused(refusal)
			}
			attempt.Failed()
			return Principal{}, f.err
		default: // busy, or the check failed itself
			return Principal{}, f.err
		}
	}
}

// check checks credentials as the leader of flight f: it begins an attempt
// with the guard, checks, records the outcome, and hands the result to the
// requests waiting on f (also when the check panics).
func (t *throttledAuth) check(ctx context.Context, key flightKey, f *flight, lane admission.Lane, login, addr, password string) (p Principal, err error) {
	checked := false
	defer func() { t.land(key, f, p, err, checked) }()
	attempt, refusal, ok := t.guard.Begin(ctx, login, addr)
	if !ok {
		return Principal{}, Refused(refusal)
	}
	returned := false
	defer func() { finishAttempt(attempt, returned, err, ErrBadCredentials) }()
	p, err = t.auth.Authenticate(withCheckLane(ctx, lane), login, password)
	returned = true
	checked = err == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	return p, err
}

// checkLaneOf is the password check's lane of an attempt that stands s:
// logins known at their address first, then addresses with no recent
// failure, then failing addresses.
func checkLaneOf(s throttle.Standing) admission.Lane {
	switch s {
	case throttle.Known:
		return admission.Trusted
	case throttle.Failing:
		return admission.Suspect
	}
	return admission.Clean
}

// join returns the flight checking key, and whether the caller starts it
// (and must land it).
func (t *throttledAuth) join(key flightKey) (*flight, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f, ok := t.flights[key]; ok {
		return f, false
	}
	f := &flight{done: make(chan struct{})}
	t.flights[key] = f
	return f, true
}

// land ends flight f with its result.
func (t *throttledAuth) land(key flightKey, f *flight, p Principal, err error, checked bool) {
	t.mu.Lock()
	delete(t.flights, key)
	t.mu.Unlock()
	f.p, f.err, f.checked = p, err, checked
	close(f.done)
}

// credentialsKey hashes login and password, each length-prefixed, and the
// lane their check waits in.
func credentialsKey(login, password string, lane admission.Lane) flightKey {
	h := sha256.New()
	h.Write([]byte{byte(lane)})
	var n [8]byte
	for _, part := range [...]string{login, password} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	var k flightKey
	h.Sum(k[:0])
	return k
}

// finishAttempt records the outcome of a login attempt, deferred right
// after the guard let it through: a failure when the check returned bad
// (wrong credentials), a success when it returned nil, and nothing when it
// could not check (busy, canceled), failed itself or panicked (returned
// false), so that the attempt never stays counted in flight.
func finishAttempt(a throttle.Attempt, returned bool, err, bad error) {
	switch {
	case !returned:
		a.Abandoned()
	case errors.Is(err, bad):
		a.Failed()
	case err == nil:
		a.Succeeded()
	default:
		a.Abandoned()
	}
}

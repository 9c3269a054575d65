package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/internal/platform/throttle"
)

// CodeTooManyRequests is the error code of a 429: too many failed logins.
const CodeTooManyRequests = "too_many_requests"

// ThrottledError is the answer to a login attempt refused because of
// earlier failures (for the login, or from the client's address). It
// unwraps to the 429 *Error the API answers; RetryAfter goes into the
// Retry-After header.
type ThrottledError struct {
	RetryAfter time.Duration
	api        *Error
}

// Throttled returns the error of an attempt refused for retryAfter.
func Throttled(retryAfter time.Duration) *ThrottledError {
	secs := retryAfterSeconds(retryAfter)
	return &ThrottledError{RetryAfter: retryAfter, api: &Error{
		Status: http.StatusTooManyRequests, Code: CodeTooManyRequests,
		Cause: fmt.Sprintf("too many failed logins; retry in %d s", secs),
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
// attempt (429) and on one refused because too many password checks run
// (503: they finish within a second).
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
// without being checked, until the failures age out. Every attempt counts
// as a failure from before its check until its outcome, so concurrent
// attempts cannot pass the limits together. A success clears the login's
// failures from the address. A nil g returns auth itself.
func ThrottleLogins(auth Authenticator, g *throttle.Guard) Authenticator {
	if g == nil {
		return auth
	}
	return throttledAuth{auth: auth, guard: g}
}

type throttledAuth struct {
	auth  Authenticator
	guard *throttle.Guard
}

func (t throttledAuth) Authenticate(ctx context.Context, login, password string) (Principal, error) {
	attempt, wait, ok := t.guard.Begin(login, ClientAddress(ctx))
	if !ok {
		return Principal{}, Throttled(wait)
	}
	var (
		p        Principal
		err      error
		returned bool
	)
	defer func() { finishAttempt(attempt, returned, err, ErrBadCredentials) }()
	p, err = t.auth.Authenticate(ctx, login, password)
	returned = true
	return p, err
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

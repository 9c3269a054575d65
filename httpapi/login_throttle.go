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
// attempt.
func writeAuthError(c *gin.Context, err error) {
	var te *ThrottledError
	if errors.As(err, &te) {
		c.Header("Retry-After", strconv.FormatInt(retryAfterSeconds(te.RetryAfter), 10))
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
// for a login, or from the client's address (ClientAddress, which BasicAuth
// provides), attempts are refused with a *ThrottledError (429) without
// being checked, until the failures age out. A success clears the login's
// failures. A nil g returns auth itself.
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
	addr := ClientAddress(ctx)
	if ok, wait := t.guard.Allow(login, addr); !ok {
		return Principal{}, Throttled(wait)
	}
	p, err := t.auth.Authenticate(ctx, login, password)
	switch {
	case errors.Is(err, ErrBadCredentials):
		t.guard.Fail(login, addr)
	case err == nil:
		t.guard.Succeed(login)
	}
	return p, err
}

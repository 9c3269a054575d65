package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// BasicRealm is the realm of the Provider, Admin and Statistics APIs'
// Basic authentication.
const BasicRealm = "tvsm"

// ErrBadCredentials is what an Authenticator returns for an unknown login or
// a wrong password (indistinguishably: the API answers 401 to both).
var ErrBadCredentials = errors.New("bad credentials")

// Principal is the administrator a request acts for.
type Principal struct {
	Login string
	// Provider scopes the admin to one provider; nil means a superadmin.
	Provider *int64
}

// Superadmin reports whether p may act on every provider.
func (p Principal) Superadmin() bool { return p.Provider == nil }

// Scope returns the provider p is scoped to; scoped is false for a
// superadmin. List handlers pin the provider filter with it.
func (p Principal) Scope() (provider int64, scoped bool) {
	if p.Provider == nil {
		return 0, false
	}
	return *p.Provider, true
}

// Authenticator checks an administrator's login and password. It returns
// ErrBadCredentials (possibly wrapped) when they do not match; any other
// error is a failure of the check itself (answered 5xx, not 401).
type Authenticator interface {
	Authenticate(ctx context.Context, login, password string) (Principal, error)
}

type principalKey struct{}

// principalContext carries a Principal. Its Value answers principalKey
// with the context itself, a pointer: boxing the Principal would allocate
// on every lookup, or on every request for a context.WithValue.
type principalContext struct {
	context.Context
	p Principal
}

func (c *principalContext) Value(key any) any {
	if _, ok := key.(principalKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return &principalContext{Context: ctx, p: p}
}

// PrincipalFromContext returns the principal ctx carries. Application code
// takes the actor of its events from it; the gin context works too, as it
// falls back to the request's context.
func PrincipalFromContext(ctx context.Context) (Principal, bool) {
	switch v := ctx.Value(principalKey{}).(type) {
	case *principalContext:
		return v.p, true
	case *requestContext:
		return v.principal, true
	}
	return Principal{}, false
}

// setPrincipal makes p the principal of c's request. When the request's
// context is still the one requestIDMiddleware made, p is recorded in it,
// which saves a context layer and a copy of the request: nothing but the
// middleware before BasicAuth, on this goroutine, has seen that context, so
// no one reads it meanwhile. Otherwise (BasicAuth on another engine, or a
// second time) the context is layered as WithPrincipal does.
func setPrincipal(c *gin.Context, p Principal) {
	if rc, ok := c.Request.Context().(*requestContext); ok && !rc.authenticated {
		rc.principal, rc.authenticated = p, true
		return
	}
	c.Request = c.Request.WithContext(WithPrincipal(c.Request.Context(), p))
}

// CurrentPrincipal returns the principal BasicAuth authenticated for c.
func CurrentPrincipal(c *gin.Context) (Principal, bool) {
	return PrincipalFromContext(c.Request.Context())
}

// BasicAuth authenticates every request of the group it is used on with HTTP
// Basic credentials and stores the Principal in the request's context
// (CurrentPrincipal, PrincipalFromContext). Missing, malformed or wrong
// credentials are answered 401 with the JSON error body and
// WWW-Authenticate: Basic realm="tvsm". The client's address is given to
// auth in the context (ClientAddress), so that ThrottleLogins can limit
// failures per address; a throttled attempt is answered 429 with
// Retry-After. An authenticated request then waits for its
// HeaderMinPosition (AwaitMinPosition).
func BasicAuth(auth Authenticator) gin.HandlerFunc { return AdminAuth(auth, nil) }

// AdminAuth is BasicAuth that also accepts the session tokens of sessions
// (Authorization: Bearer, which the admin console sends): a token that is
// malformed, forged, expired or refused by the read model is answered 401
// naming why, with WWW-Authenticate: Bearer. A nil sessions accepts Basic
// credentials only.
func AdminAuth(auth Authenticator, sessions *Sessions) gin.HandlerFunc {
	return func(c *gin.Context) {
		var header string
		if v := c.Request.Header["Authorization"]; len(v) > 0 {
			header = v[0]
		}
		if sessions != nil {
			if token, ok := bearerToken(header); ok {
				sessions.authenticate(c, token)
				return
			}
		}
		login, password, msg := parseBasic(header)
		if msg != "" {
			unauthorized(c, msg)
			return
		}
		ctx := withClientAddress(c.Request.Context(), clientIP(c))
		p, err := auth.Authenticate(ctx, login, password)
		switch {
		case errors.Is(err, ErrBadCredentials):
			unauthorized(c, "invalid login or password")
			return
		case err != nil:
			writeAuthError(c, err) // 429 with Retry-After when throttled
			return
		}
		setPrincipal(c, p)
		if !AwaitMinPosition(c) {
			return
		}
		c.Next()
	}
}

func unauthorized(c *gin.Context, cause string) {
	c.Header("WWW-Authenticate", `Basic realm="`+BasicRealm+`"`)
	WriteError(c, Unauthorized(cause))
}

// parseBasic returns the credentials of an Authorization header, or msg
// saying what is wrong with it. Padding in the base64 is optional.
func parseBasic(header string) (login, password, msg string) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", "", "authentication required (Authorization: Basic)"
	}
	scheme, encoded, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return "", "", "Basic authentication required"
	}
	raw, ok := decodeBase64(strings.TrimSpace(encoded))
	if !ok {
		return "", "", "malformed Basic credentials"
	}
	login, password, ok = strings.Cut(raw, ":")
	if !ok || login == "" {
		return "", "", "malformed Basic credentials"
	}
	return login, password, ""
}

// decodeBase64 decodes standard base64, padded or not. Credentials of
// usual length are decoded on the stack, so that only the string returned
// is allocated.
func decodeBase64(encoded string) (string, bool) {
	var buf [192]byte
	dst := buf[:]
	// RawStdEncoding's bound is the larger: it counts no padding.
	if n := base64.RawStdEncoding.DecodedLen(len(encoded)); n > len(buf) {
		dst = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(dst, []byte(encoded))
	if err != nil {
		n, err = base64.RawStdEncoding.Decode(dst, []byte(encoded))
	}
	if err != nil {
		return "", false
	}
	return string(dst[:n]), true
}

// clientIP is gin's ClientIP for c, as requestIDMiddleware computed it.
func clientIP(c *gin.Context) string {
	if rc := requestContextOf(c.Request.Context()); rc != nil {
		return rc.clientIP
	}
	return c.ClientIP()
}

// RequireProvider returns nil when the request's admin may act on provider's
// data: a superadmin, or an admin scoped to that provider. Otherwise it
// returns a 403 (401 without an authenticated admin) for WriteError.
func RequireProvider(c *gin.Context, provider int64) error {
	p, ok := CurrentPrincipal(c)
	if !ok {
		return Unauthorized("authentication required")
	}
	if scope, scoped := p.Scope(); scoped && scope != provider {
		return Forbidden("provider " + strconv.FormatInt(provider, 10) + " is outside the scope of admin " + strconv.Quote(p.Login))
	}
	return nil
}

// RequireSuperadmin returns nil when the request's admin is a superadmin,
// else a 403 (401 without an authenticated admin) for WriteError.
func RequireSuperadmin(c *gin.Context) error {
	p, ok := CurrentPrincipal(c)
	if !ok {
		return Unauthorized("authentication required")
	}
	if !p.Superadmin() {
		return Forbidden("admin " + strconv.Quote(p.Login) + " is scoped to a provider; this needs a superadmin")
	}
	return nil
}

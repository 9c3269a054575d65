package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app"
)

// Admin sessions: the admin console sends the admin's password once, to
// POST /api/admin/session (Basic credentials, through the same throttled
// check as every Basic request), and gets a session token, which it sends
// as Authorization: Bearer on every call after. A token is stateless and
// signed (HMAC-SHA256 under a key every node of a store derives alike), so
// any node accepts it; it names a random session id, the admin, its
// provider scope, when the session started and when the token expires, and
// a keyed fingerprint of the admin's password hash. Each request checks it
// against the read model: a changed password, a changed scope, a deleted
// admin or a signed-out session (DELETE /api/admin/session, an event in
// the admin's stream every node's read model learns) refuse it.
//
// Tokens are short-lived: a token expires when its session was idle for
// SessionOptions.Idle. While the session is used, answers carry a fresh
// token (HeaderSessionToken) for the client to swap in, up to MaxAge after
// sign-in, when the admin signs in again.

// Headers of session tokens. An answer to a request authenticated by a
// session token carries a fresh token of the same session in
// HeaderSessionToken, and its expiry in HeaderSessionExpires, once the
// token sent is a minute old; the client sends the fresh one from then on.
const (
	HeaderSessionToken   = "X-TVSM-Session-Token"
	HeaderSessionExpires = "X-TVSM-Session-Expires"
)

// Defaults of SessionOptions.
const (
	DefaultSessionIdle   = 20 * time.Minute
	DefaultSessionMaxAge = 12 * time.Hour
)

// MinSessionKeyLen is the shortest signing key of session tokens, in bytes.
const MinSessionKeyLen = 32

// sessionRenewAfter is how old a token gets before answers renew it:
// renewing on every answer would only churn tokens.
const sessionRenewAfter = time.Minute

// AdminLookup returns admin login as the read model shows it now, or ok
// false when there is none (or it was deleted).
type AdminLookup func(login string) (domain.Admin, bool)

// SessionSignOut records that a session was signed out;
// *command.Admins implements it. It returns once the node's read model
// shows it.
type SessionSignOut interface {
	SignOut(ctx context.Context, c app.Caller, session string, until time.Time) error
}

// SessionOptions configure Sessions. Key, Admins and SignOuts are required.
type SessionOptions struct {
	// Key signs the tokens: at least MinSessionKeyLen bytes, the same on
	// every node of a store.
	Key      []byte
	Admins   AdminLookup
	SignOuts SessionSignOut
	// Idle is how long a session lasts without a request (default
	// DefaultSessionIdle); MaxAge how long it lasts at most (default
	// DefaultSessionMaxAge).
	Idle   time.Duration
	MaxAge time.Duration
	// Clock is the time source (default time.Now).
	Clock func() time.Time
}

// Sessions issues, checks, renews and signs out admin session tokens.
type Sessions struct {
	key      []byte
	admins   AdminLookup
	signOuts SessionSignOut
	idle     time.Duration
	maxAge   time.Duration
	clock    func() time.Time
}

// NewSessions returns Sessions with o.
func NewSessions(o SessionOptions) (*Sessions, error) {
	switch {
	case len(o.Key) < MinSessionKeyLen:
		return nil, fmt.Errorf("httpapi: a session key of %d bytes, want at least %d", len(o.Key), MinSessionKeyLen)
	case o.Admins == nil || o.SignOuts == nil:
		return nil, errors.New("httpapi: sessions need the admins and their sign-outs")
	}
	s := &Sessions{key: append([]byte(nil), o.Key...), admins: o.Admins, signOuts: o.SignOuts,
		idle: o.Idle, maxAge: o.MaxAge, clock: o.Clock}
	if s.idle <= 0 {
		s.idle = DefaultSessionIdle
	}
	if s.maxAge <= 0 {
		s.maxAge = DefaultSessionMaxAge
	}
	s.idle = min(s.idle, s.maxAge)
	if s.clock == nil {
		s.clock = time.Now
	}
	return s, nil
}

// session is what a token says.
type session struct {
	id      [sessionIDLen]byte
	login   string
	scope   int64 // the provider; 0 for a superadmin
	started time.Time
	expires time.Time
	// password is a keyed fingerprint of the admin's password hash at
	// sign-in: a new password refuses the token.
	password [fingerprintLen]byte
}

// ID returns the session's id as the sign-out event records it.
func (s *session) ID() string { return base64.RawURLEncoding.EncodeToString(s.id[:]) }

// ends returns when the session ends at the latest.
func (s *Sessions) ends(ss *session) time.Time { return ss.started.Add(s.maxAge) }

// Token layout, before base64url without padding:
//
//	version (1) | session id (16) | started, expires: unix seconds (varint) | scope (uvarint)
//	| password fingerprint (16) | login length (uvarint) | login | HMAC-SHA256 of all before (32)
const (
	sessionTokenVersion = 1
	sessionIDLen        = 16
	fingerprintLen      = 16
	sessionMACLen       = sha256.Size
	// maxSessionTokenLen bounds the text decoded: the fields above with
	// the longest login, in base64.
	maxSessionTokenLen = (1 + sessionIDLen + 3*binary.MaxVarintLen64 + fingerprintLen + 1 + domain.MaxAdminLoginLen + sessionMACLen + 2) * 4 / 3
)

// Problems with a session token, as the 401 names them. None repeats the
// token.
var (
	errTokenMalformed = errors.New("malformed session token (Authorization: Bearer)")
	errTokenForged    = errors.New("session token not issued by this service (bad signature)")
)

func (s *Sessions) encode(ss *session) string {
	b := make([]byte, 0, 1+sessionIDLen+3*binary.MaxVarintLen64+fingerprintLen+1+len(ss.login)+sessionMACLen)
	b = append(b, sessionTokenVersion)
	b = append(b, ss.id[:]...)
	b = binary.AppendVarint(b, ss.started.Unix())
	b = binary.AppendVarint(b, ss.expires.Unix())
	b = binary.AppendUvarint(b, uint64(ss.scope))
	b = append(b, ss.password[:]...)
	b = binary.AppendUvarint(b, uint64(len(ss.login)))
	b = append(b, ss.login...)
	b = append(b, s.mac(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decode checks a token's signature and returns what it says; it does not
// check the expiry. Its errors are errTokenMalformed and errTokenForged.
func (s *Sessions) decode(token string) (session, error) {
	if len(token) == 0 || len(token) > maxSessionTokenLen {
		return session{}, errTokenMalformed
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) <= sessionMACLen {
		return session{}, errTokenMalformed
	}
	payload, mac := raw[:len(raw)-sessionMACLen], raw[len(raw)-sessionMACLen:]
	if !hmac.Equal(mac, s.mac(payload)) {
		return session{}, errTokenForged
	}
	return parseSession(payload)
}

// parseSession reads a payload encode wrote, and refuses anything else:
// another version, a scope or times out of range, a login that is no
// admin login, trailing bytes.
func parseSession(b []byte) (session, error) {
	var ss session
	if len(b) < 1+sessionIDLen || b[0] != sessionTokenVersion {
		return session{}, errTokenMalformed
	}
	copy(ss.id[:], b[1:])
	b = b[1+sessionIDLen:]
	var times [2]int64
	for i := range times {
		v, n := binary.Varint(b)
		if n <= 0 || v <= 0 || v > maxUnixSeconds {
			return session{}, errTokenMalformed
		}
		times[i], b = v, b[n:]
	}
	scope, n := binary.Uvarint(b)
	if n <= 0 || scope > 1<<63-1 {
		return session{}, errTokenMalformed
	}
	b = b[n:]
	if len(b) < fingerprintLen {
		return session{}, errTokenMalformed
	}
	copy(ss.password[:], b)
	b = b[fingerprintLen:]
	size, n := binary.Uvarint(b)
	if n <= 0 || size != uint64(len(b)-n) {
		return session{}, errTokenMalformed
	}
	ss.login = string(b[n:])
	if domain.ValidateAdminLogin(ss.login) != nil || times[1] < times[0] {
		return session{}, errTokenMalformed
	}
	ss.scope, ss.started, ss.expires = int64(scope), time.Unix(times[0], 0).UTC(), time.Unix(times[1], 0).UTC()
	return ss, nil
}

func (s *Sessions) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write(payload)
	return h.Sum(nil)
}

// fingerprint is a keyed hash of a password hash: it tells a changed
// password without the token carrying anything that helps guess it.
func (s *Sessions) fingerprint(passwordHash string) (f [fingerprintLen]byte) {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("tvsm admin password\x00"))
	h.Write([]byte(passwordHash))
	copy(f[:], h.Sum(nil))
	return f
}

// start begins a session of admin a and returns its first token.
func (s *Sessions) start(a domain.Admin) (string, session, error) {
	ss := session{login: a.Login, password: s.fingerprint(a.PasswordHash)}
	if _, err := rand.Read(ss.id[:]); err != nil {
		return "", session{}, err
	}
	if a.Provider != nil {
		ss.scope = *a.Provider
	}
	ss.started = s.clock().UTC().Truncate(time.Second)
	ss.expires = ss.started.Add(s.idle)
	return s.encode(&ss), ss, nil
}

// renewed returns a fresh token of ss at now when the one sent is at least
// sessionRenewAfter old and the session may last longer.
func (s *Sessions) renewed(ss session, now time.Time) (string, time.Time, bool) {
	ends := s.ends(&ss)
	expires := now.UTC().Truncate(time.Second).Add(s.idle)
	if expires.After(ends) {
		expires = ends
	}
	if expires.Sub(ss.expires) < min(sessionRenewAfter, s.idle/2) {
		return "", time.Time{}, false
	}
	ss.expires = expires
	return s.encode(&ss), expires, true
}

// check returns the principal of ss at now, or the 401 cause: an expired
// session, or one the read model refuses (the admin deleted, its password
// or scope changed, the session signed out).
func (s *Sessions) check(ss session, now time.Time) (Principal, string) {
	if cause := s.expired(ss, now); cause != "" {
		return Principal{}, cause
	}
	a, ok := s.admins(ss.login)
	if !ok || a.PasswordHash == "" {
		return Principal{}, "the session's admin no longer exists"
	}
	password := s.fingerprint(a.PasswordHash)
	switch {
	case !hmac.Equal(ss.password[:], password[:]):
		return Principal{}, "the admin's password changed since sign-in; sign in again"
	case scopeOf(a.Provider) != ss.scope:
		return Principal{}, "the admin's provider scope changed since sign-in; sign in again"
	case a.HasSignedOut(ss.ID()):
		return Principal{}, "session signed out; sign in again"
	}
	return principal(a.Login, a.Provider), ""
}

// expired returns why ss is over at now, or "".
func (s *Sessions) expired(ss session, now time.Time) string {
	switch {
	case now.Before(ss.expires):
		return ""
	case !ss.expires.Before(s.ends(&ss)):
		return fmt.Sprintf("session ended: sessions last at most %v; sign in again", s.maxAge)
	}
	return fmt.Sprintf("session expired after %v without a request; sign in again", s.idle)
}

func scopeOf(provider *int64) int64 {
	if provider == nil {
		return 0
	}
	return *provider
}

// sessionKey holds, in the gin context, the session a request was
// authenticated by.
const sessionKey = "tvsm.session"

// authenticate authenticates c by the session token in its Authorization
// header: 401 naming the problem (with WWW-Authenticate: Bearer), or the
// principal set, the wait for HeaderMinPosition done, and a fresh token in
// the answer when due.
func (s *Sessions) authenticate(c *gin.Context, token string) {
	ss, err := s.decode(token)
	if err != nil {
		bearerUnauthorized(c, err.Error())
		return
	}
	if cause := s.expired(ss, s.clock()); cause != "" {
		bearerUnauthorized(c, cause)
		return
	}
	// The read model decides the rest: first let it reach the position
	// the client saw (a sign-out or a password change on another node).
	if !AwaitMinPosition(c) {
		return
	}
	now := s.clock()
	p, cause := s.check(ss, now)
	if cause != "" {
		bearerUnauthorized(c, cause)
		return
	}
	setPrincipal(c, p)
	c.Set(sessionKey, ss)
	if fresh, expires, ok := s.renewed(ss, now); ok {
		h := c.Writer.Header()
		h.Set(HeaderSessionToken, fresh)
		h.Set(HeaderSessionExpires, wire.FormatDateTime(expires))
	}
	c.Next()
}

func bearerUnauthorized(c *gin.Context, cause string) {
	c.Header("WWW-Authenticate", `Bearer realm="`+BasicRealm+`", error="invalid_token"`)
	WriteError(c, Unauthorized(cause))
}

// bearerToken returns the token of a Bearer Authorization header; ok is
// false for any other scheme.
func bearerToken(header string) (token string, ok bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(header), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// sessionJSON is the answer to a sign-in.
type sessionJSON struct {
	Token            string `json:"token"`
	ExpiresAt        string `json:"expires_at"`
	SessionExpiresAt string `json:"session_expires_at"`
	Login            string `json:"login"`
	Provider         *int64 `json:"provider"`
}

// mountSessions adds the sign-in (Basic credentials only: a token cannot
// make another) and the sign-out (the session of the bearer token) to
// engine; like every state-changing route of the Admin API, they take
// JSON only (requireBodyType).
func mountSessions(engine *gin.Engine, s *Sessions, basic, auth gin.HandlerFunc) {
	engine.POST("/api/admin/session", requireBodyType, basic, s.signIn)
	engine.DELETE("/api/admin/session", requireBodyType, auth, s.signOut)
}

// signIn answers a new session of the admin BasicAuth authenticated.
func (s *Sessions) signIn(c *gin.Context) {
	p, _ := CurrentPrincipal(c)
	a, ok := s.admins(p.Login)
	if !ok || a.PasswordHash == "" { // deleted since the check
		unauthorized(c, "invalid login or password")
		return
	}
	token, ss, err := s.start(a)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, sessionJSON{Token: token, ExpiresAt: wire.FormatDateTime(ss.expires),
		SessionExpiresAt: wire.FormatDateTime(s.ends(&ss)), Login: a.Login, Provider: a.Provider})
}

// signOut signs out the session of the request's bearer token: every
// token of it is refused from then on, on every node once its read model
// has applied the sign-out (send the answer's X-TVSM-Position as
// X-TVSM-Min-Position to be sure).
func (s *Sessions) signOut(c *gin.Context) {
	h := c.Writer.Header()
	h.Del(HeaderSessionToken)
	h.Del(HeaderSessionExpires)
	v, ok := c.Get(sessionKey)
	if !ok {
		WriteError(c, BadRequest("DELETE /api/admin/session signs out the session of its token (Authorization: Bearer); Basic credentials have no session"))
		return
	}
	ss := v.(session)
	if err := s.signOuts.SignOut(c.Request.Context(), callerOf(c), ss.ID(), s.ends(&ss)); err != nil {
		WriteError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

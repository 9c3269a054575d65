package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/internal/testkit/testutil"
)

var sessionT0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// sessionAdmins is an in-memory read model of admins whose passwords,
// scopes and signed-out sessions change as the tests say; it records
// sign-outs as the command does.
type sessionAdmins struct {
	t      testing.TB
	clock  *testutil.Clock
	mu     sync.Mutex
	admins map[string]domain.Admin
}

func newSessionAdmins(t testing.TB, clock *testutil.Clock) *sessionAdmins {
	d := &sessionAdmins{t: t, clock: clock, admins: map[string]domain.Admin{}}
	d.setPassword("root", "root-secret")
	d.setPassword("ops7", "ops-secret")
	d.setScope("ops7", 7)
	return d
}

func (d *sessionAdmins) lookup(login string) (domain.Admin, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.admins[login]
	return a, ok
}

func (d *sessionAdmins) setPassword(login, password string) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.admins[login]
	a.Login, a.PasswordHash = login, string(hash)
	d.admins[login] = a
}

func (d *sessionAdmins) setScope(login string, provider int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.admins[login]
	a.Provider = nil
	if provider != 0 {
		a.Provider = &provider
	}
	d.admins[login] = a
}

func (d *sessionAdmins) remove(login string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.admins, login)
}

// SignOut implements SessionSignOut with the domain's decision.
func (d *sessionAdmins) SignOut(_ context.Context, c app.Caller, session string, until time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	dec := domain.AdminDecider()
	a := d.admins[c.Admin]
	events, err := dec.Decide(a, domain.SignOutAdmin{Login: c.Admin, Session: session, Until: until}, d.clock.Now())
	for _, e := range events {
		a = dec.Evolve(a, e)
	}
	d.admins[c.Admin] = a
	return err
}

// sessionRig is a server with the session routes and GET /api/whoami
// behind AdminAuth.
type sessionRig struct {
	srv      *testServer
	clock    *testutil.Clock
	admins   *sessionAdmins
	sessions *Sessions
}

func newSessionRig(t *testing.T, key byte) *sessionRig {
	t.Helper()
	clock := testutil.NewClock(sessionT0)
	admins := newSessionAdmins(t, clock)
	sessions, err := NewSessions(SessionOptions{Key: bytes.Repeat([]byte{key}, MinSessionKeyLen), Admins: admins.lookup,
		SignOuts: admins, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	passwords := NewBcryptAuthenticator(func(login string) (string, *int64, bool) {
		a, ok := admins.lookup(login)
		return a.PasswordHash, a.Provider, ok
	}, BcryptOptions{DummyCost: bcrypt.MinCost, Now: clock.Now})
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		auth := AdminAuth(passwords, sessions)
		mountSessions(e, sessions, BasicAuth(passwords), auth)
		e.GET("/api/whoami", auth, func(c *gin.Context) {
			p, _ := CurrentPrincipal(c)
			c.JSON(http.StatusOK, gin.H{"login": p.Login, "provider": p.Provider})
		})
	})
	return &sessionRig{srv: srv, clock: clock, admins: admins, sessions: sessions}
}

// signIn signs login in and returns the answer.
func (r *sessionRig) signIn(t *testing.T, login, password string) sessionJSON {
	t.Helper()
	resp, body := r.srv.do(t, http.MethodPost, "/api/admin/session", nil, "Authorization", basic(login, password), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in %s: %d %s", login, resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("sign-in answered Cache-Control %q, want no-store", cc)
	}
	var s sessionJSON
	if err := json.Unmarshal(body, &s); err != nil || s.Token == "" {
		t.Fatalf("sign-in answer %s: %v", body, err)
	}
	return s
}

// whoami reads /api/whoami with token.
func (r *sessionRig) whoami(t *testing.T, token string) (*http.Response, []byte) {
	t.Helper()
	return r.srv.get(t, "/api/whoami", "Authorization", "Bearer "+token)
}

// refused checks that token is answered 401 with cause, a Bearer challenge,
// and no trace of the token.
func (r *sessionRig) refused(t *testing.T, token, cause string) {
	t.Helper()
	resp, body := r.whoami(t, token)
	assertJSONResponse(t, resp, body, http.StatusUnauthorized, map[string]any{"error": CodeUnauthorized, "cause": cause})
	if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="tvsm", error="invalid_token"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	if len(token) >= 8 && (bytes.Contains(body, []byte(token)) || strings.Contains(r.srv.logs.String(), token)) {
		t.Errorf("the refusal or the log repeats the token: %s", body)
	}
}

func TestSessionSignInAndUse(t *testing.T) {
	r := newSessionRig(t, 1)
	// Given a sign-in with Basic credentials,
	s := r.signIn(t, "ops7", "ops-secret")
	if s.Login != "ops7" || s.Provider == nil || *s.Provider != 7 ||
		s.ExpiresAt != "2026-11-22T12:20:00+0000" || s.SessionExpiresAt != "2026-11-23T00:00:00+0000" {
		t.Errorf("sign-in answered %+v", s)
	}
	// when the token is used, it acts for the admin, in its scope,
	resp, body := r.whoami(t, s.Token)
	assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"login": "ops7", "provider": 7})
	// and the token is never logged.
	if strings.Contains(r.srv.logs.String(), s.Token) {
		t.Error("the log holds the token")
	}
	// A token cannot sign in: only Basic credentials can.
	resp, body = r.srv.do(t, http.MethodPost, "/api/admin/session", nil, "Authorization", "Bearer "+s.Token, "Content-Type", "application/json")
	assertJSONResponse(t, resp, body, http.StatusUnauthorized, map[string]any{"cause": "Basic authentication required"})
	// Wrong credentials make no session.
	resp, body = r.srv.do(t, http.MethodPost, "/api/admin/session", nil, "Authorization", basic("ops7", "wrong"), "Content-Type", "application/json")
	assertJSONResponse(t, resp, body, http.StatusUnauthorized, map[string]any{"cause": "invalid login or password"})
}

// TestSessionExpiresWhenIdle: a token lasts Idle; a request a minute or
// more into it gets a fresh one, which lasts Idle from then; the session
// ends MaxAge after sign-in however it is used.
func TestSessionExpiresWhenIdle(t *testing.T) {
	r := newSessionRig(t, 2)
	s := r.signIn(t, "root", "root-secret")

	// Within the first minute answers renew nothing.
	r.clock.Advance(59 * time.Second)
	resp, _ := r.whoami(t, s.Token)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderSessionToken) != "" {
		t.Fatalf("at 59 s: %d, renewed %v", resp.StatusCode, resp.Header.Get(HeaderSessionToken) != "")
	}
	// A minute in, the answer carries a fresh token of the same session.
	r.clock.Advance(time.Second)
	resp, _ = r.whoami(t, s.Token)
	fresh := resp.Header.Get(HeaderSessionToken)
	if resp.StatusCode != http.StatusOK || fresh == "" || fresh == s.Token ||
		resp.Header.Get(HeaderSessionExpires) != "2026-11-22T12:21:00+0000" {
		t.Fatalf("at 60 s: %d, fresh token %v, expires %q", resp.StatusCode, fresh != "", resp.Header.Get(HeaderSessionExpires))
	}
	// The first token expires after 20 minutes idle; the fresh one lasts
	// a minute more.
	r.clock.Advance(19 * time.Minute)
	r.refused(t, s.Token, "session expired after 20m0s without a request; sign in again")
	resp, body := r.whoami(t, fresh)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the fresh token: %d %s", resp.StatusCode, body)
	}
	// Used every 10 minutes, the session lasts 12 hours, no more.
	token := resp.Header.Get(HeaderSessionToken)
	for r.clock.Now().Before(sessionT0.Add(12*time.Hour - 10*time.Minute)) {
		r.clock.Advance(10 * time.Minute)
		resp, body := r.whoami(t, token)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("at %v: %d %s", r.clock.Now().Sub(sessionT0), resp.StatusCode, body)
		}
		if next := resp.Header.Get(HeaderSessionToken); next != "" {
			token = next
		}
	}
	r.clock.Advance(10 * time.Minute)
	r.refused(t, token, "session ended: sessions last at most 12h0m0s; sign in again")

	// Left alone, a new session ends after 20 minutes.
	s = r.signIn(t, "root", "root-secret")
	r.clock.Advance(20 * time.Minute)
	r.refused(t, s.Token, "session expired after 20m0s without a request; sign in again")
}

// TestSessionFollowsTheAdmin: a token is refused once its admin's password
// or scope changed, the admin was deleted, or the session signed out; the
// admin's other sessions are not.
func TestSessionFollowsTheAdmin(t *testing.T) {
	r := newSessionRig(t, 3)

	s := r.signIn(t, "ops7", "ops-secret")
	r.admins.setScope("ops7", 8)
	r.refused(t, s.Token, "the admin's provider scope changed since sign-in; sign in again")
	r.admins.setScope("ops7", 0)
	r.refused(t, s.Token, "the admin's provider scope changed since sign-in; sign in again")
	r.admins.setScope("ops7", 7)

	s = r.signIn(t, "ops7", "ops-secret")
	// The same password hashed anew is a new hash: a password change.
	r.admins.setPassword("ops7", "ops-secret")
	r.refused(t, s.Token, "the admin's password changed since sign-in; sign in again")

	s = r.signIn(t, "ops7", "ops-secret")
	r.admins.remove("ops7")
	r.refused(t, s.Token, "the session's admin no longer exists")

	// Sign-out ends that session only.
	kept := r.signIn(t, "root", "root-secret")
	ended := r.signIn(t, "root", "root-secret")
	resp, body := r.srv.do(t, http.MethodDelete, "/api/admin/session", nil, "Authorization", "Bearer "+ended.Token)
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 || resp.Header.Get(HeaderSessionToken) != "" {
		t.Fatalf("sign out: %d %q, renewed %v", resp.StatusCode, body, resp.Header.Get(HeaderSessionToken) != "")
	}
	r.refused(t, ended.Token, "session signed out; sign in again")
	if resp, body := r.whoami(t, kept.Token); resp.StatusCode != http.StatusOK {
		t.Errorf("the admin's other session: %d %s", resp.StatusCode, body)
	}
	// Basic credentials have no session to sign out.
	resp, body = r.srv.do(t, http.MethodDelete, "/api/admin/session", nil, "Authorization", basic("root", "root-secret"))
	assertJSONResponse(t, resp, body, http.StatusBadRequest, map[string]any{"error": CodeBadRequest})
}

// TestSessionTokenTampering: every single-bit change of a token, a token
// of another key, and junk are refused, naming the problem and repeating
// nothing of the token.
func TestSessionTokenTampering(t *testing.T) {
	r := newSessionRig(t, 4)
	s := r.signIn(t, "ops7", "ops-secret")
	raw, err := base64.RawURLEncoding.DecodeString(s.Token)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for bit := range 8 {
			forged := bytes.Clone(raw)
			forged[i] ^= 1 << bit
			if _, err := r.sessions.decode(base64.RawURLEncoding.EncodeToString(forged)); !errors.Is(err, errTokenForged) {
				t.Fatalf("byte %d bit %d flipped: %v, want a bad signature", i, bit, err)
			}
		}
	}
	flipped := bytes.Clone(raw)
	flipped[len(raw)/2] ^= 1
	r.refused(t, base64.RawURLEncoding.EncodeToString(flipped), "session token not issued by this service (bad signature)")

	other := newSessionRig(t, 5).signIn(t, "ops7", "ops-secret")
	r.refused(t, other.Token, "session token not issued by this service (bad signature)")

	for _, junk := range []string{"x", "!!!!!!!!!!", s.Token + "=", s.Token[:20], strings.Repeat("A", 400)} {
		r.refused(t, junk, "malformed session token (Authorization: Bearer)")
	}
	// Base64 long enough to hold a signature is checked for one first.
	r.refused(t, strings.Repeat("A", 70), "session token not issued by this service (bad signature)")
	// An empty token after the scheme.
	resp, body := r.srv.get(t, "/api/whoami", "Authorization", "Bearer ")
	assertJSONResponse(t, resp, body, http.StatusUnauthorized, map[string]any{"cause": "malformed session token (Authorization: Bearer)"})
	// Basic still works beside tokens.
	resp, body = r.srv.get(t, "/api/whoami", "Authorization", basic("root", "root-secret"))
	assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"login": "root"})
}

func TestNewSessionsRefusesAShortKey(t *testing.T) {
	admins := newSessionAdmins(t, testutil.NewClock(sessionT0))
	if _, err := NewSessions(SessionOptions{Key: []byte("short"), Admins: admins.lookup, SignOuts: admins}); err == nil {
		t.Error("a 5-byte key was accepted")
	}
	if _, err := NewSessions(SessionOptions{Key: make([]byte, MinSessionKeyLen)}); err == nil {
		t.Error("sessions without admins were accepted")
	}
}

// FuzzSessionToken feeds arbitrary tokens to the decoder: it never panics,
// fails only with its two errors, and accepts nothing but the tokens the
// signer issued.
func FuzzSessionToken(f *testing.F) {
	s, err := NewSessions(SessionOptions{Key: bytes.Repeat([]byte{9}, MinSessionKeyLen),
		Admins: func(string) (domain.Admin, bool) { return domain.Admin{}, false }, SignOuts: (*sessionAdmins)(nil)})
	if err != nil {
		f.Fatal(err)
	}
	// Not start's random id: the fuzzing workers rebuild this setup, and
	// must find the seed's session the same.
	issued := session{id: [sessionIDLen]byte{1, 2, 3}, login: "ops7", scope: 7, started: sessionT0, expires: sessionT0.Add(time.Hour),
		password: s.fingerprint("$2a$04$abcdefghijklmnopqrstuuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0")}
	valid := s.encode(&issued)
	for _, seed := range []string{valid, valid[:30], "", "AQ", strings.Repeat("_", 300), valid + "x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.decode(token)
		if err != nil {
			if !errors.Is(err, errTokenMalformed) && !errors.Is(err, errTokenForged) {
				t.Fatalf("decode(%q): unexpected error %v", token, err)
			}
			return
		}
		if got != issued {
			t.Fatalf("decode(%q) accepted %+v, which the signer never issued", token, got)
		}
	})
}

// FuzzParseSession feeds arbitrary payloads to the claims decoder (which
// decode reaches only after the signature): it never panics, and what it
// accepts is a session, encoded back, it reads alike.
func FuzzParseSession(f *testing.F) {
	s, err := NewSessions(SessionOptions{Key: bytes.Repeat([]byte{9}, MinSessionKeyLen), Admins: func(string) (domain.Admin, bool) { return domain.Admin{}, false },
		SignOuts: (*sessionAdmins)(nil)})
	if err != nil {
		f.Fatal(err)
	}
	payload := func(ss session) []byte {
		raw, _ := base64.RawURLEncoding.DecodeString(s.encode(&ss))
		return raw[:len(raw)-sessionMACLen]
	}
	f.Add(payload(session{login: "root", scope: 7, started: sessionT0, expires: sessionT0.Add(time.Hour)}))
	f.Add([]byte{sessionTokenVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ss, err := parseSession(b)
		if err != nil {
			if !errors.Is(err, errTokenMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if ss.login == "" || ss.expires.Before(ss.started) || ss.scope < 0 {
			t.Fatalf("%x accepted as %+v", b, ss)
		}
		if again, err := parseSession(payload(ss)); err != nil || again != ss {
			t.Fatalf("%x parsed as %+v, which reads back as %+v (%v)", b, ss, again, err)
		}
	})
}

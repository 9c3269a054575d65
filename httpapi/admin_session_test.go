package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"tvsm/httpapi"
	"tvsm/internal/platform/throttle"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// sessionCall sends a request with a session token and returns the answer
// and its decoded body.
func sessionCall(t *testing.T, env *nodetest.Env, method, path, token string, body any) (*http.Response, obj) {
	t.Helper()
	resp, data := env.DoResponse(t, method, path, "", "", body, nodetest.Bearer(token))
	if len(data) == 0 {
		return resp, obj{}
	}
	return resp, decodeObj(t, data)
}

// TestAdminSessionOverHTTP: a provider-scoped admin signs in with Basic
// credentials and works on the Admin, Provider and Statistics APIs with the
// token, in its scope and as itself; the token is refused once its password
// changes, and a sign-out refuses the token of that session only.
func TestAdminSessionOverHTTP(t *testing.T) {
	env := nodetest.Start(t)
	acme := mustProvider(t, env, "Acme")
	other := mustProvider(t, env, "Other")
	scopedClient(t, env, "ops", acme)

	// Given a sign-in with the admin's Basic credentials,
	resp, data := env.DoResponse(t, http.MethodPost, "/api/admin/session", "ops", "ops-secret", nil, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("sign in: %d (Cache-Control %q) %s", resp.StatusCode, resp.Header.Get("Cache-Control"), data)
	}
	s := decodeObj(t, data)
	token := s.str(t, "token")
	if s.str(t, "login") != "ops" || s.int(t, "provider") != acme {
		t.Errorf("sign-in answered %s", data)
	}
	for _, field := range []string{"expires_at", "session_expires_at"} {
		if _, err := parseDateTime(s.str(t, field)); err != nil {
			t.Errorf("%s: %v", field, err)
		}
	}

	// when the token is used on each API, it acts for the admin in its scope:
	if resp, o := sessionCall(t, env, http.MethodGet, fmt.Sprintf("/api/admin/providers/%d", acme), token, nil); resp.StatusCode != http.StatusOK || o.str(t, "name") != "Acme" {
		t.Errorf("its provider: %d %v", resp.StatusCode, o)
	}
	if resp, o := sessionCall(t, env, http.MethodGet, fmt.Sprintf("/api/admin/providers/%d", other), token, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another provider: %d %v", resp.StatusCode, o)
	}
	resp, o := sessionCall(t, env, http.MethodPost, "/api/provider/accounts", token, accountBody(acme, "anna"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create an account: %d %v", resp.StatusCode, o)
	}
	account := o.id(t)
	resp, o = sessionCall(t, env, http.MethodGet, fmt.Sprintf("/api/provider/accounts/%d/history", account), token, nil)
	if entries := o.list(t); resp.StatusCode != http.StatusOK || len(entries) != 1 || entries[0].str(t, "actor") != "admin:ops" {
		t.Errorf("the account's history: %d %v; want one entry by admin:ops", resp.StatusCode, o)
	}
	day := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	if resp, o := sessionCall(t, env, http.MethodGet, "/api/stats/subscription?from="+day+"&to="+day, token, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("statistics: %d %v", resp.StatusCode, o)
	}

	// A second session; signing the first out leaves the second working.
	second := env.SignIn(t, "ops", "ops-secret")
	resp, data = env.DoResponse(t, http.MethodDelete, "/api/admin/session", "", "", nil, nodetest.Bearer(token))
	if resp.StatusCode != http.StatusNoContent || len(data) != 0 || resp.Header.Get(httpapi.HeaderPosition) == "" {
		t.Fatalf("sign out: %d %q %s", resp.StatusCode, resp.Header.Get(httpapi.HeaderPosition), data)
	}
	if resp, o := sessionCall(t, env, http.MethodGet, "/api/provider/accounts", token, nil); resp.StatusCode != http.StatusUnauthorized ||
		o.str(t, "cause") != "session signed out; sign in again" || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("the signed-out token: %d %v (WWW-Authenticate %q)", resp.StatusCode, o, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, o := sessionCall(t, env, http.MethodGet, "/api/provider/accounts", second, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the other session: %d %v", resp.StatusCode, o)
	}
	// Signing out again is refused as the token is (nothing to sign out).
	if resp, _ := sessionCall(t, env, http.MethodDelete, "/api/admin/session", token, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a second sign-out: %d", resp.StatusCode)
	}

	// When the admin's password changes, its sessions end.
	if status, body := env.Super(t, http.MethodPut, "/api/admin/admins/ops", map[string]any{"password": "a-new-password"}); status != http.StatusOK {
		t.Fatalf("password change: %d %s", status, body)
	}
	if resp, o := sessionCall(t, env, http.MethodGet, "/api/provider/accounts", second, nil); resp.StatusCode != http.StatusUnauthorized ||
		o.str(t, "cause") != "the admin's password changed since sign-in; sign in again" {
		t.Errorf("after the password change: %d %v", resp.StatusCode, o)
	}
	// Basic credentials are untouched by sessions: API clients go on.
	if status, body := env.Do(t, http.MethodGet, "/api/provider/accounts", "ops", "a-new-password", nil); status != http.StatusOK {
		t.Errorf("Basic credentials: %d %s", status, body)
	}
}

// TestAdminSessionRefusals: what is not a token of a live session is
// refused 401 with the problem named and the token not repeated; a token
// cannot sign in; Basic credentials cannot sign out.
func TestAdminSessionRefusals(t *testing.T) {
	env := nodetest.Start(t)
	token := env.SignIn(t, env.SuperLogin, env.SuperPassword)
	forged := []byte(token)
	forged[10] = 'A' // another letter of base64url, in the middle: other bits signed
	if token[10] == 'A' {
		forged[10] = 'B'
	}
	for _, tc := range []struct{ name, token, cause string }{
		{"junk", "not-a-token", "malformed session token (Authorization: Bearer)"},
		{"not base64url", "abc+/=" + token, "malformed session token (Authorization: Bearer)"},
		{"too long", strings.Repeat(token, 3), "malformed session token (Authorization: Bearer)"},
		{"forged", string(forged), "session token not issued by this service (bad signature)"},
	} {
		resp, data := env.DoResponse(t, http.MethodGet, "/api/admin/providers", "", "", nil, nodetest.Bearer(tc.token))
		var e struct{ Cause string }
		_ = json.Unmarshal(data, &e)
		if resp.StatusCode != http.StatusUnauthorized || e.Cause != tc.cause {
			t.Errorf("%s: %d %s; want 401 %q", tc.name, resp.StatusCode, data, tc.cause)
		}
		if bytes.Contains(data, []byte(tc.token)) || bytes.Contains(data, []byte(token[:16])) {
			t.Errorf("%s: the answer repeats the token: %s", tc.name, data)
		}
	}
	if status, body := env.DoHeader(t, http.MethodPost, "/api/admin/session", "", "", nil, nodetest.Bearer(token)); status != http.StatusUnauthorized {
		t.Errorf("sign-in with a token: %d %s", status, body)
	}
	status, body := env.Super(t, http.MethodDelete, "/api/admin/session", nil)
	if status != http.StatusBadRequest || !strings.Contains(string(body), "Authorization: Bearer") {
		t.Errorf("sign-out with Basic credentials: %d %s", status, body)
	}
}

// TestAdminSessionSignInIsThrottled: the sign-in checks the password as
// every Basic request does, failures counted alike: once a login failed
// too often, even its right password is refused 429 until they age out.
func TestAdminSessionSignInIsThrottled(t *testing.T) {
	env := nodetest.StartWith(t, nodetest.Options{AdminLogins: throttle.GuardOptions{LoginLimit: 3, Window: time.Minute}})
	for i := range 3 {
		if status, body := env.Do(t, http.MethodPost, "/api/admin/session", env.SuperLogin, "wrong-password", nil); status != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d %s", i+1, status, body)
		}
	}
	resp, data := env.DoResponse(t, http.MethodPost, "/api/admin/session", env.SuperLogin, env.SuperPassword, nil, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || bytes.Contains(data, []byte("token")) {
		t.Errorf("sign-in after 3 failures: %d (Retry-After %q) %s; want 429 and no token", resp.StatusCode, resp.Header.Get("Retry-After"), data)
	}
}

// TestAdminSessionIdleAndRenewal: a token used a minute or more after it
// was issued comes back renewed; one unused for 20 minutes is refused.
func TestAdminSessionIdleAndRenewal(t *testing.T) {
	clock := testutil.NewClock(time.Now().UTC().Truncate(time.Second))
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now})
	token := env.SignIn(t, env.SuperLogin, env.SuperPassword)
	clock.Advance(5 * time.Minute)
	resp, o := sessionCall(t, env, http.MethodGet, "/api/admin/providers", token, nil)
	fresh := resp.Header.Get(httpapi.HeaderSessionToken)
	if resp.StatusCode != http.StatusOK || fresh == "" || fresh == token {
		t.Fatalf("5 minutes in: %d %v, a fresh token %v", resp.StatusCode, o, fresh != "")
	}
	if want := clock.Now().Add(20 * time.Minute).Format("2006-01-02T15:04:05-0700"); resp.Header.Get(httpapi.HeaderSessionExpires) != want {
		t.Errorf("%s %q, want %q", httpapi.HeaderSessionExpires, resp.Header.Get(httpapi.HeaderSessionExpires), want)
	}
	clock.Advance(15 * time.Minute)
	if resp, o := sessionCall(t, env, http.MethodGet, "/api/admin/providers", token, nil); resp.StatusCode != http.StatusUnauthorized ||
		o.str(t, "cause") != "session expired after 20m0s without a request; sign in again" {
		t.Errorf("the first token 20 minutes in: %d %v", resp.StatusCode, o)
	}
	if resp, o := sessionCall(t, env, http.MethodGet, "/api/admin/providers", fresh, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the fresh token: %d %v", resp.StatusCode, o)
	}
	clock.Advance(20 * time.Minute)
	if resp, o := sessionCall(t, env, http.MethodGet, "/api/admin/providers", fresh, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the fresh token after 20 idle minutes: %d %v", resp.StatusCode, o)
	}
}

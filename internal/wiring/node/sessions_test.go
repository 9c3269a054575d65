package node_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"tvsm/httpapi"
	"tvsm/internal/testkit/nodetest"
)

// readWith reads the Admin API's providers on env with a session token,
// sending minPosition (when set) as X-TVSM-Min-Position; it returns the
// status and the error's cause.
func readWith(t *testing.T, env *nodetest.Env, token, minPosition string) (int, string) {
	t.Helper()
	h := nodetest.Bearer(token)
	if minPosition != "" {
		h.Set(httpapi.HeaderMinPosition, minPosition)
	}
	status, body := env.DoHeader(t, http.MethodGet, "/api/admin/providers", "", "", nil, h)
	var e struct{ Cause string }
	_ = json.Unmarshal(body, &e)
	return status, e.Cause
}

// Two nodes on one store: a session token one issues works on the other,
// and a sign-out or a password change on one refuses the token on the
// other, at once for a request that sends the write's position, and for
// every request once the other node has applied it.
func TestAdminSessionsAcrossNodes(t *testing.T) {
	a := nodetest.Start(t)
	b := nodetest.StartWith(t, nodetest.Options{Share: a})
	superOK(t, a, http.MethodPost, "/api/admin/admins", map[string]any{"login": "ops", "password": "ops-password"})

	// Given sessions opened on node A,
	signedOut := a.SignIn(t, a.SuperLogin, a.SuperPassword)
	other := a.SignIn(t, a.SuperLogin, a.SuperPassword)
	ops := a.SignIn(t, "ops", "ops-password")
	for _, token := range []string{signedOut, other, ops} {
		if status, cause := readWith(t, b, token, ""); status != http.StatusOK {
			t.Fatalf("a token of node A on node B: %d %s", status, cause)
		}
	}

	// when one is signed out on node B,
	resp, body := b.DoResponse(t, http.MethodDelete, "/api/admin/session", "", "", nil, nodetest.Bearer(signedOut))
	pos := resp.Header.Get(httpapi.HeaderPosition)
	if resp.StatusCode != http.StatusNoContent || pos == "" {
		t.Fatalf("sign out on node B: %d %q %s", resp.StatusCode, pos, body)
	}
	// then node A refuses it to a request sending the sign-out's position,
	if status, cause := readWith(t, a, signedOut, pos); status != http.StatusUnauthorized || cause != "session signed out; sign in again" {
		t.Errorf("the signed-out token on node A with %s: %d %q", httpapi.HeaderMinPosition, status, cause)
	}
	// and to every request once it has applied the sign-out, while the
	// admin's other session goes on.
	a.WaitApplied(t, mustPosition(t, pos))
	if status, _ := readWith(t, a, signedOut, ""); status != http.StatusUnauthorized {
		t.Errorf("the signed-out token on node A: %d", status)
	}
	if status, cause := readWith(t, a, other, ""); status != http.StatusOK {
		t.Errorf("the admin's other session on node A: %d %s", status, cause)
	}

	// When ops's password is changed on node A, node B refuses ops's token.
	resp, body = a.DoResponse(t, http.MethodPut, "/api/admin/admins/ops", a.SuperLogin, a.SuperPassword, map[string]any{"password": "new-ops-password"}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("password change: %d %s", resp.StatusCode, body)
	}
	pos = resp.Header.Get(httpapi.HeaderPosition)
	if status, cause := readWith(t, b, ops, pos); status != http.StatusUnauthorized || cause != "the admin's password changed since sign-in; sign in again" {
		t.Errorf("ops's token on node B after the password change: %d %q", status, cause)
	}
}

// Session tokens outlive a restart (the key is derived from the key
// store's), and so do sign-outs (the read model's snapshot keeps them).
func TestAdminSessionsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir})
	kept := env.SignIn(t, env.SuperLogin, env.SuperPassword)
	signedOut := env.SignIn(t, env.SuperLogin, env.SuperPassword)
	if status, body := env.DoHeader(t, http.MethodDelete, "/api/admin/session", "", "", nil, nodetest.Bearer(signedOut)); status != http.StatusNoContent {
		t.Fatalf("sign out: %d %s", status, body)
	}
	env.Close()

	env = nodetest.StartWith(t, nodetest.Options{Dir: dir})
	if status, cause := readWith(t, env, kept, ""); status != http.StatusOK {
		t.Errorf("a session after a restart: %d %s", status, cause)
	}
	if status, cause := readWith(t, env, signedOut, ""); status != http.StatusUnauthorized {
		t.Errorf("a signed-out session after a restart: %d %s", status, cause)
	}
}

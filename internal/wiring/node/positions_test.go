package node_test

import (
	"net/http"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/httpapi"
	"tvsm/internal/testkit/nodetest"
)

// TestReadYourWritesAcrossNodes runs two nodes on one log: a create on
// one answers X-TVSM-Position, and a read of the other sending it as
// X-TVSM-Min-Position shows the new account. A no-op update answers a
// position too.
func TestReadYourWritesAcrossNodes(t *testing.T) {
	a := nodetest.Start(t)
	b := nodetest.StartWith(t, nodetest.Options{Share: a})
	provider := decodeID(t, superOK(t, a, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Two nodes"}))

	resp, body := sendAt(t, a, http.MethodPost, "/api/provider/accounts", map[string]any{
		"login": "alice", "pin_md5": "0123456789abcdef0123456789abcdef", "fullname": "Alice", "provider": provider,
	}, "")
	pos := resp.Header.Get(httpapi.HeaderPosition)
	if resp.StatusCode != http.StatusOK || pos == "" || pos == "0" {
		t.Fatalf("create: %d, %s %q: %s", resp.StatusCode, httpapi.HeaderPosition, pos, body)
	}
	account := decodeID(t, body)
	resp, body = sendAt(t, b, http.MethodGet, "/api/provider/accounts/"+itoa(account), nil, pos)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("read on the other node with %s %s: %d %s", httpapi.HeaderMinPosition, pos, resp.StatusCode, body)
	}
	assertField(t, body, "login", "alice")
	if resp.Header.Get(httpapi.HeaderPosition) != "" {
		t.Errorf("a read answered %s %q", httpapi.HeaderPosition, resp.Header.Get(httpapi.HeaderPosition))
	}

	resp, body = sendAt(t, b, http.MethodPut, "/api/provider/accounts/"+itoa(account), map[string]any{"fullname": "Alice"}, pos)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(httpapi.HeaderPosition) == "" {
		t.Fatalf("no-op update on the other node: %d %q %s", resp.StatusCode, resp.Header.Get(httpapi.HeaderPosition), body)
	}
	if got, err := httpapi.ParsePosition(resp.Header.Get(httpapi.HeaderPosition)); err != nil || got.Compare(mustPosition(t, pos)) < 0 {
		t.Errorf("no-op update answered %v (%v), before the create's %s", got, err, pos)
	}
}

func mustPosition(t *testing.T, s string) eventstore.Position {
	t.Helper()
	p, err := httpapi.ParsePosition(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sendAt sends a request as the superadmin with minPosition (when set) as
// X-TVSM-Min-Position and returns the answer and its body.
func sendAt(t *testing.T, env *nodetest.Env, method, path string, body any, minPosition string) (*http.Response, []byte) {
	t.Helper()
	header := http.Header{}
	if minPosition != "" {
		header.Set(httpapi.HeaderMinPosition, minPosition)
	}
	return env.DoResponse(t, method, path, env.SuperLogin, env.SuperPassword, body, header)
}

// TestMinPositionWaitsAfterAuthentication: a request with a position the
// node will not reach is answered 401 when its credentials are missing or
// wrong (it never waited: the wait ends in 503), and 503 once
// authenticated. The device login, which is the authentication, waits
// before it checks the credentials against the read model.
func TestMinPositionWaitsAfterAuthentication(t *testing.T) {
	env := nodetest.StartWith(t, nodetest.Options{ReadYourWritesTimeout: 100 * time.Millisecond})
	deviceLogin(t, env)
	future := http.Header{httpapi.HeaderMinPosition: {"999999"}}
	for _, tc := range []struct {
		name, method, path, login, password string
		body                                any
		header                              http.Header
		want                                int
	}{
		{"provider API, no credentials", http.MethodGet, "/api/provider/accounts", "", "", nil, future, http.StatusUnauthorized},
		{"provider API, wrong password", http.MethodGet, "/api/provider/accounts", env.SuperLogin, "wrong", nil, future, http.StatusUnauthorized},
		{"device API, no token", http.MethodGet, "/api/device/channels", "", "", nil, future, http.StatusUnauthorized},
		{"device API, bad token", http.MethodGet, "/api/device/channels", "", "", nil,
			http.Header{httpapi.HeaderMinPosition: {"999999"}, "Authorization": {"Bearer nonsense"}}, http.StatusUnauthorized},
		{"provider API, authenticated", http.MethodGet, "/api/provider/accounts", env.SuperLogin, env.SuperPassword, nil, future, http.StatusServiceUnavailable},
		{"device login", http.MethodPost, "/api/device/login", "", "", map[string]any{
			"provider": 1, "login": "multi", "password_md5": "0123456789abcdef0123456789abcdef",
			"device": map[string]any{"unique_id": "late", "class": "phone"},
		}, future, http.StatusServiceUnavailable},
	} {
		resp, body := env.DoResponse(t, tc.method, tc.path, tc.login, tc.password, tc.body, tc.header)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.want)
		}
	}
}

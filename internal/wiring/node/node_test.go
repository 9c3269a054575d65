package node_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

func decodeID(t *testing.T, body []byte) int64 {
	t.Helper()
	var v struct{ ID int64 }
	if err := json.Unmarshal(body, &v); err != nil || v.ID == 0 {
		t.Fatalf("no id in %s (%v)", body, err)
	}
	return v.ID
}

// superOK sends a request as the superadmin and fails the test unless it
// answers 200.
func superOK(t *testing.T, env *nodetest.Env, method, path string, body any) []byte {
	t.Helper()
	status, resp := env.Super(t, method, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, status, resp)
	}
	return resp
}

// A node restarted on the same data answers as before: from its snapshot
// plus the log after it, and, when the snapshot is damaged, from the whole
// log. The bootstrapped superadmin is created once, not on every start.
func TestRestartRestoresState(t *testing.T) {
	dir := t.TempDir()
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir})
	if status, body := env.Do(t, http.MethodGet, "/readyz", "", "", nil); status != http.StatusOK {
		t.Fatalf("readyz after start: %d %s", status, body)
	}
	provider := decodeID(t, superOK(t, env, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Restart"}))
	account := decodeID(t, superOK(t, env, http.MethodPost, "/api/provider/accounts", map[string]any{
		"login": "alice", "pin_md5": "0123456789abcdef0123456789abcdef", "fullname": "Alice", "provider": provider,
	}))
	env.Close() // writes the final snapshot

	snapshot := filepath.Join(dir, "node", "readmodel.snapshot")
	if _, err := os.Stat(snapshot); err != nil {
		t.Fatalf("no snapshot after close: %v", err)
	}
	env = nodetest.StartWith(t, nodetest.Options{Dir: dir})
	got := superOK(t, env, http.MethodGet, "/api/provider/accounts/"+itoa(account), nil)
	assertField(t, got, "login", "alice")
	superOK(t, env, http.MethodPut, "/api/provider/accounts/"+itoa(account), map[string]any{"fullname": "Alice Renamed"})
	admins := superOK(t, env, http.MethodGet, "/api/admin/admins", nil)
	var list struct{ Total int }
	if err := json.Unmarshal(admins, &list); err != nil || list.Total != 1 {
		t.Fatalf("admins after restart: %s (%v); want the one bootstrapped superadmin", admins, err)
	}
	env.Close()

	// A damaged snapshot is only a cache: the node replays the whole log.
	if err := os.WriteFile(snapshot, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	env = nodetest.StartWith(t, nodetest.Options{Dir: dir})
	got = superOK(t, env, http.MethodGet, "/api/provider/accounts/"+itoa(account), nil)
	assertField(t, got, "fullname", "Alice Renamed")
}

func assertField(t *testing.T, body []byte, field, want string) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if v[field] != want {
		t.Fatalf("%s = %v, want %q in %s", field, v[field], want, body)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

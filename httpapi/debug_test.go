package httpapi_test

import (
	"bytes"
	"net/http"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

// TestProfilerForSuperadminsOnly: the profiler answers superadmins, and
// refuses scoped admins (403) and anonymous callers (401).
func TestProfilerForSuperadminsOnly(t *testing.T) {
	env := nodetest.Start(t)
	provider := mustProvider(t, env, "P")
	scoped := scopedClient(t, env, "ops", provider)

	status, body := env.Do(t, http.MethodGet, "/api/admin/debug/pprof/heap?gc=1", nodetest.SuperLogin, nodetest.SuperPassword, nil)
	// A heap profile is gzipped protobuf.
	if status != http.StatusOK || !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		t.Fatalf("superadmin: %d, %d bytes starting %x", status, len(body), body[:min(len(body), 4)])
	}
	if status, body := env.Do(t, http.MethodGet, "/api/admin/debug/pprof/goroutine?debug=1", scoped.login, scoped.pass, nil); status != http.StatusForbidden {
		t.Fatalf("scoped admin: %d %s", status, body)
	}
	if status, _ := env.Do(t, http.MethodGet, "/api/admin/debug/pprof/", "", "", nil); status != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d", status)
	}
}

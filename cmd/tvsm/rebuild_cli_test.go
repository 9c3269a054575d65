package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

func TestRebuildCommandLine(t *testing.T) {
	isolateEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rebuild"}, "rebuild what?"},
		{[]string{"rebuild", "everything"}, `not "everything"`},
		{[]string{"rebuild", "readmodel", "stats"}, `unexpected argument "stats"`},
		{[]string{"rebuild", "--poll", "0", "stats"}, "--poll must be positive"},
		{[]string{"rebuild", "readmodel", "--url", "http://127.0.0.1:1"}, "TVSM_ADMIN_PASSWORD"},
		{[]string{"rebuild", "readmodel", "--password-file", filepath.Join(t.TempDir(), "absent")}, "no such file"},
	} {
		code, stdout, stderr := runCapture(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want %d and %q", c.args, code, stderr, stdout, exitUsage, c.want)
		}
	}
	if code, _, stderr := runCapture(t, "rebuild", "-h"); code != exitOK || !strings.Contains(stderr, "--verify") {
		t.Errorf("rebuild -h: exit %d: %s", code, stderr)
	}
}

// tvsm rebuild against a node: a check exits 0 on a clean node and 1 with
// the differences listed once the live read model is corrupted; a rebuild
// repairs it, the node answering from the new model, and the check exits 0
// again. The statistics are checked and rebuilt the same way.
func TestRebuildCommand(t *testing.T) {
	isolateEnv(t)
	env := nodetest.Start(t)
	status, body := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "CLI"})
	var provider struct{ ID int64 }
	if status != http.StatusOK || json.Unmarshal(body, &provider) != nil {
		t.Fatalf("create provider: %d %s", status, body)
	}
	status, body = env.Super(t, http.MethodPost, "/api/provider/accounts", map[string]any{
		"provider": provider.ID, "login": "alice", "fullname": "Alice", "pin_md5": faultPinMD5})
	var account struct{ ID int64 }
	if status != http.StatusOK || json.Unmarshal(body, &account) != nil {
		t.Fatalf("create account: %d %s", status, body)
	}
	passwordFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(passwordFile, []byte(env.SuperPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TVSM_ADMIN_PASSWORD", env.SuperPassword)
	rebuild := func(args ...string) (int, string, string) {
		t.Helper()
		return runCapture(t, append([]string{"rebuild", "--url", env.URL, "--user", env.SuperLogin, "--poll", "10ms"}, args...)...)
	}

	for _, target := range []string{"readmodel", "stats"} {
		if code, stdout, stderr := rebuild(target, "--verify"); code != exitOK || !strings.Contains(stdout, "no difference") {
			t.Fatalf("check of a clean node's %s: exit %d\n%s%s", target, code, stdout, stderr)
		}
	}
	env.CorruptAccount(t, account.ID, "Mallory")
	code, stdout, stderr := rebuild("readmodel", "--verify")
	if code != exitFailure || !strings.Contains(stdout, "differences between the live state") || !strings.Contains(stdout, "Mallory") ||
		!strings.Contains(stderr, "differences") {
		t.Fatalf("check of a corrupted read model: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("tvsm rebuild readmodel --verify on a corrupted model:\n%s", stdout)
	// Plain progress lines, not a bar: stdout is no terminal.
	if code, stdout, stderr := rebuild("readmodel"); code != exitOK || !strings.Contains(stdout, "started (job") ||
		!strings.Contains(stdout, "the node serves the new version") || strings.Contains(stdout, "\r") {
		t.Fatalf("rebuild: exit %d\n%s%s", code, stdout, stderr)
	}
	status, body = env.Super(t, http.MethodGet, "/api/provider/accounts/"+itoa(account.ID), nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"Alice"`) {
		t.Fatalf("the account after the rebuild: %d %s", status, body)
	}
	if code, stdout, stderr := rebuild("--password-file", passwordFile, "readmodel", "--verify"); code != exitOK {
		t.Fatalf("check after the rebuild: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := rebuild("stats"); code != exitOK {
		t.Fatalf("statistics rebuild: exit %d\n%s%s", code, stdout, stderr)
	}

	t.Setenv("TVSM_ADMIN_PASSWORD", "wrong")
	if code, _, stderr := rebuild("stats", "--verify"); code != exitFailure || !strings.Contains(stderr, "401") {
		t.Fatalf("a wrong password: exit %d %s", code, stderr)
	}
}

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDemoCommandLine(t *testing.T) {
	isolateEnv(t)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(t.TempDir(), "absent")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no data", []string{"demo"}, "--data is required"},
		{"data not empty", []string{"demo", "--data", full}, "is not empty"},
		{"bad days", []string{"demo", "--data", filepath.Join(t.TempDir(), "d"), "--days", "0"}, "--days must be at least 1"},
		{"too many days", []string{"demo", "--data", absent, "--days", "4000"}, "days must be between 1 and 3660"},
		{"extra argument", []string{"demo", "--data", t.TempDir(), "now"}, `unexpected argument "now"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCapture(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("tvsm %v: exit %d, stderr %q; want a usage error saying %q", tc.args, code, stderr, tc.stderr)
			}
			if _, err := os.Stat(absent); err == nil {
				t.Errorf("tvsm %v created %s", tc.args, absent)
			}
		})
	}
}

// TestDemoThenServe writes a small demo, then serves it: the superadmin of
// TVSM_ADMIN_LOGIN signs in and yesterday's statistics are there.
func TestDemoThenServe(t *testing.T) {
	isolateEnv(t)
	t.Setenv("TVSM_ADMIN_LOGIN", "boss")
	t.Setenv("TVSM_ADMIN_PASSWORD", "demo-password")
	dir := filepath.Join(t.TempDir(), "demo")
	started := time.Now()
	code, stdout, stderr := runCapture(t, "demo", "--data", dir, "--days", "3", "--accounts", "20", "--quiet")
	if code != exitOK || !strings.Contains(stdout, "statistics closed through") || !strings.Contains(stdout, "superadmin boss") {
		t.Fatalf("tvsm demo: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// serve's own bootstrap (root) is not used: the demo made an admin.
	log, exited, _ := startServe(t, "--http", "127.0.0.1:0", "--data", dir)
	addr := waitForListening(t, log, exited)
	// The demo's last day is the one before it started. A midnight since
	// then makes the day before now the newest, which serve closes a minute
	// (the grace) later: either may be the last closed.
	yesterday := started.UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	newest := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/stats/device?from="+yesterday+"&to="+yesterday, nil)
	req.SetBasicAuth("boss", "demo-password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if closed := resp.Header.Get("X-TVSM-Closed-Through"); resp.StatusCode != http.StatusOK || (closed != yesterday && closed != newest) || !strings.Contains(string(body), `"class":"stb"`) {
		t.Fatalf("yesterday's statistics of the demo: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

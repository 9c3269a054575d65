package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// isolateEnv blanks every TVSM_* variable of the test process: run reads the
// real environment, and an empty variable counts as unset.
func isolateEnv(t testing.TB) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TVSM_") {
			t.Setenv(k, "")
		}
	}
}

func runCapture(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunCommandLine(t *testing.T) {
	isolateEnv(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring; "" means must be empty
		stderr string // substring; "" means must be empty
	}{
		{name: "no command", args: nil, code: exitUsage, stderr: "Usage:"},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitUsage, stderr: `unknown command "frobnicate"`},
		{name: "help", args: []string{"help"}, code: exitOK, stdout: "tvsm serve [flags]"},
		{name: "--help", args: []string{"--help"}, code: exitOK, stdout: "tvsm version"},
		{name: "help serve", args: []string{"help", "serve"}, code: exitOK, stdout: "-eventstore backend"},
		{name: "help unknown", args: []string{"help", "x"}, code: exitUsage, stderr: `unknown command "x"`},
		{name: "version", args: []string{"version"}, code: exitOK, stdout: "tvsm dev\ngo: go1."},
		{name: "version with argument", args: []string{"version", "x"}, code: exitUsage, stderr: `unexpected argument "x"`},
		{name: "serve -h", args: []string{"serve", "-h"}, code: exitOK, stderr: "Usage: tvsm serve [flags]"},
		{name: "serve bad flag", args: []string{"serve", "--http", "nope"}, code: exitUsage, stderr: `invalid value "nope" for flag -http`},
		{name: "serve extra argument", args: []string{"serve", "now"}, code: exitUsage, stderr: `unexpected argument "now"`},
		{name: "serve unknown feature", args: []string{"serve", "--features", "teleport"}, code: exitUsage, stderr: `unknown feature "teleport"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCapture(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			check := func(what, got, want string) {
				if want == "" && got != "" {
					t.Errorf("%s = %q, want nothing", what, got)
				}
				if !strings.Contains(got, want) {
					t.Errorf("%s lacks %q:\n%s", what, want, got)
				}
			}
			check("stdout", stdout, tc.stdout)
			check("stderr", stderr, tc.stderr)
		})
	}
}

func TestServeConfigFromEnvironment(t *testing.T) {
	isolateEnv(t)
	t.Setenv("TVSM_STATS", "ftp://nope")
	code, _, stderr := runCapture(t, "serve")
	if code != exitUsage || !strings.Contains(stderr, "env TVSM_STATS") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestServeFailsOnUnreachableBackends(t *testing.T) {
	isolateEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Port 1 on loopback: nothing listens, so the store is unavailable.
		{[]string{"--eventstore", "esdb://127.0.0.1:1?tls=false", "--stats-embedded-on-shared-store", "true"},
			"event store: esdb: esdb://127.0.0.1:1?tls=false: not reachable"},
		{[]string{"--stats", "clickhouse://127.0.0.1:1/tvsm"}, "stats: "},
	} {
		// serve waits for an EventStoreDB to answer until it is stopped.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var out, errOut bytes.Buffer
		code := run(ctx, append([]string{"serve", "--data", t.TempDir(), "--http", "127.0.0.1:0"}, tc.args...), &out, &errOut)
		cancel()
		if code != exitFailure || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut.String())
		}
	}
}

func TestServeListenFailure(t *testing.T) {
	isolateEnv(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	code, _, stderr := runCapture(t, "serve", "--data", t.TempDir(), "--http", busy.Addr().String())
	if code != exitFailure || !strings.Contains(stderr, "listen on "+busy.Addr().String()) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestServe runs `tvsm serve` in-process on a free port with a fresh data
// directory, checks it answers over real HTTP, then stops it like SIGTERM.
func TestServe(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data") // does not exist yet: serve creates it
	stderr, exited, cancel := startServe(t, "--http", "127.0.0.1:0", "--data", data, "--admin-login-failures", "2")
	addr := waitForListening(t, stderr, exited)
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Fatalf("GET /healthz = %d %s", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(data, "events")); err != nil {
		t.Errorf("embedded event store not in the data directory: %v", err)
	}
	// admin_login_failures: two wrong passwords, then even the right one waits.
	for i, want := range []int{http.StatusUnauthorized, http.StatusUnauthorized, http.StatusTooManyRequests} {
		password := "wrong"
		if i == 2 {
			password = "s3cret-root"
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/admin/providers", nil)
		req.SetBasicAuth("root", password)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("login %d as root: %d, want %d", i+1, resp.StatusCode, want)
		}
	}

	cancel() // what SIGINT/SIGTERM do
	select {
	case code := <-exited:
		if code != exitOK {
			t.Fatalf("serve exited %d, want 0; log:\n%s", code, stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not stop within 10s of cancellation; log:\n%s", stderr)
	}
	for _, want := range []string{`"msg":"shutting down"`, `"msg":"stopped"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %s", want)
		}
	}
	if _, err := client.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

// startServe runs `tvsm serve` in-process with args, a JSON log, a 5 s
// shutdown timeout and the superadmin root (password s3cret-root), until
// cancel (what SIGINT/SIGTERM do) or the test's end. It returns the log
// and the exit code's channel.
func startServe(t testing.TB, args ...string) (stderr *testutil.SyncBuffer, exited chan int, cancel func()) {
	t.Helper()
	isolateEnv(t)
	t.Setenv("TVSM_ADMIN_PASSWORD", "s3cret-root")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stderr, exited = &testutil.SyncBuffer{}, make(chan int, 1)
	args = append([]string{"serve", "--log-format", "json", "--shutdown-timeout", "5s", "--admin-login", "root"}, args...)
	go func() { exited <- run(ctx, args, io.Discard, stderr) }()
	return stderr, exited, cancel
}

// waitForListening reads the JSON log until the "listening" line and returns
// its address (port 0 was asked for, so only the log knows it).
func waitForListening(t testing.TB, log *testutil.SyncBuffer, exited <-chan int) string {
	t.Helper()
	addrs := waitForListeners(t, log, exited, 1)
	if addr, ok := addrs["api"]; ok {
		return addr
	}
	return addrs[""] // a process with one unnamed listener (tvsm esdb-double)
}

// waitForListeners reads the JSON log until n "listening" lines are there
// and returns their addresses by listener name.
func waitForListeners(t testing.TB, log *testutil.SyncBuffer, exited <-chan int, n int) map[string]string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		addrs := map[string]string{}
		scanner := bufio.NewScanner(strings.NewReader(log.String()))
		for scanner.Scan() {
			var rec struct{ Msg, Addr, Listener string }
			if json.Unmarshal(scanner.Bytes(), &rec) == nil && rec.Msg == "listening" {
				addrs[rec.Listener] = rec.Addr
			}
		}
		if len(addrs) >= n {
			return addrs
		}
		select {
		case code := <-exited:
			t.Fatalf("serve exited %d before listening; log:\n%s", code, log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("not %d listening lines within 15s; log:\n%s", n, log)
	return nil
}

// TestServeOpsListener: with --ops-http, /metrics and the profiler answer
// on the operators' listener only; the API's listener, which devices
// reach, answers 404 for them. The probes answer on both.
func TestServeOpsListener(t *testing.T) {
	stderr, exited, cancel := startServe(t, "--http", "127.0.0.1:0", "--ops-http", "127.0.0.1:0", "--data", t.TempDir())
	addrs := waitForListeners(t, stderr, exited, 2)
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(addr, path string, auth bool) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if auth {
			req.SetBasicAuth("root", "s3cret-root")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s%s: %v", addr, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	api, ops := addrs["api"], addrs["ops"]
	for _, c := range []struct {
		addr, path string
		auth       bool
		status     int
		contains   string
	}{
		{api, "/metrics", false, http.StatusNotFound, "not_found"},
		{api, "/api/admin/debug/pprof/", true, http.StatusNotFound, "not_found"},
		{api, "/healthz", false, http.StatusOK, "ok"},
		{api, "/api/admin/providers", true, http.StatusOK, "data"},
		{ops, "/metrics", false, http.StatusOK, "tvsm_password_checks_total"},
		{ops, "/debug/pprof/", false, http.StatusOK, "goroutine"},
		{ops, "/debug/pprof/goroutine?debug=1", false, http.StatusOK, "goroutine profile"},
		{ops, "/healthz", false, http.StatusOK, "ok"},
		{ops, "/readyz", false, http.StatusOK, "ready"},
		{ops, "/api/admin/providers", true, http.StatusNotFound, "not_found"},
	} {
		status, body := get(c.addr, c.path, c.auth)
		if status != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("GET %s on %s: %d %.200s; want %d with %q", c.path, c.addr, status, body, c.status, c.contains)
		}
	}
	cancel()
	select {
	case code := <-exited:
		if code != exitOK {
			t.Fatalf("serve exited %d; log:\n%s", code, stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeMetricsForSuperadmins: without --ops-http, /metrics is on the
// API's listener, which devices and anyone else reach: it answers a
// superadmin's Basic credentials only (401 without or with wrong ones, 403
// for an admin scoped to a provider).
func TestServeMetricsForSuperadmins(t *testing.T) {
	stderr, exited, cancel := startServe(t, "--http", "127.0.0.1:0", "--data", t.TempDir())
	addr := waitForListening(t, stderr, exited)
	defer func() {
		cancel()
		<-exited
	}()
	admin := api{t: t, base: "http://" + addr, c: &http.Client{Timeout: 5 * time.Second}, password: "s3cret-root"}
	var provider struct{ ID int64 }
	admin.ok(http.MethodPost, "/api/admin/providers", map[string]any{"name": "Scoped ISP"}, &provider)
	admin.ok(http.MethodPost, "/api/admin/admins", map[string]any{"login": "ops7", "password": "ops7-secret", "provider": provider.ID}, nil)
	for _, c := range []struct {
		name            string
		login, password string
		status          int
		contains        string
	}{
		{"anonymous", "", "", http.StatusUnauthorized, `"unauthorized"`},
		{"wrong password", "root", "guess", http.StatusUnauthorized, `"unauthorized"`},
		{"scoped admin", "ops7", "ops7-secret", http.StatusForbidden, `"forbidden"`},
		{"superadmin", "root", "s3cret-root", http.StatusOK, "tvsm_password_checks_total"},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		if c.login != "" {
			req.SetBasicAuth(c.login, c.password)
		}
		resp, err := admin.c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.contains) {
			t.Errorf("GET /metrics as %s: %d %.200s; want %d with %q", c.name, resp.StatusCode, body, c.status, c.contains)
		}
	}
}

// TestSimulateExitsNonZeroWithTheCause: tvsm simulate on a node where its
// tariff does not exist exits 1 and prints the node's answer.
func TestSimulateExitsNonZeroWithTheCause(t *testing.T) {
	env := nodetest.Start(t)
	if status, body := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "P"}); status != http.StatusOK {
		t.Fatalf("provider: %d %s", status, body)
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"simulate", "-url", env.URL, "-admin", env.SuperLogin + ":" + env.SuperPassword, "-tariff", "999",
		"-devices", "1", "-progress", "0"}, &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "status 400: tarif: not found") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// runMainEnv makes the test binary run as tvsm itself (see TestMain): the
// process tests start it with the arguments of a tvsm command.
const runMainEnv = "TVSM_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// process is a tvsm command running as a child process of the test.
type process struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	log    *testutil.SyncBuffer
	exited chan int
}

// startProcess starts `tvsm args...` with env added to a clean TVSM_*
// environment, and stops it (SIGKILL) at the end of the test if it still
// runs.
func startProcess(t testing.TB, name string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(cleanEnv(), runMainEnv+"=1")
	cmd.Env = append(cmd.Env, env...)
	p := &process{t: t, name: name, cmd: cmd, log: &testutil.SyncBuffer{}, exited: make(chan int, 1)}
	cmd.Stdout, cmd.Stderr = io.Discard, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		p.exited <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// testMasterKeyEnv gives nodes on a shared store their one master key.
const testMasterKeyEnv = "TVSM_MASTER_KEY=dHZzbSB0ZXN0IG1hc3RlciBrZXksIDMyIGJ5dGVzISE="

// cleanEnv is the test's environment without TVSM_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TVSM_") {
			env = append(env, kv)
		}
	}
	return env
}

// addr waits for the process's "listening" log line and returns its
// address.
func (p *process) addr() string {
	p.t.Helper()
	return waitForListening(p.t, p.log, p.exited)
}

// stop ends the process with sig and returns its exit code.
func (p *process) stop(sig os.Signal) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	select {
	case code := <-p.exited:
		return code
	case <-time.After(20 * time.Second):
		p.t.Fatalf("%s did not exit within 20s of %v; log:\n%s", p.name, sig, p.log)
		return -1
	}
}

// api is an HTTP client of a node, as its superadmin root.
type api struct {
	t        *testing.T
	base     string
	c        *http.Client
	password string
}

// call sends body (JSON) and decodes the answer into out (when not nil),
// returning the status.
func (a api) call(method, path string, body any, out any) int {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	req.SetBasicAuth("root", a.password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.c.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if text, ok := out.(*string); ok {
		*text = string(b)
	} else if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			a.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 {
		a.t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

func (a api) ok(method, path string, body any, out any) {
	a.t.Helper()
	if code := a.call(method, path, body, out); code != http.StatusOK {
		a.t.Fatalf("%s %s: status %d, want 200", method, path, code)
	}
}

// TestServeOnESDBDouble runs the protocol double and `tvsm serve` on it as
// two processes, as docs/eventstore.md describes, and does the basics over
// HTTP: a provider, an account, the account list, a command, statistics.
// Then it kills the double (SIGKILL) and starts it again on the same data
// and address: the node reconnects by itself, has lost nothing and takes
// writes again.
func TestServeOnESDBDouble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	esdbDir := filepath.Join(dir, "esdb")
	double := startProcess(t, "esdb-double", nil, "esdb-double", "--data", esdbDir, "--listen", "127.0.0.1:0", "--log-format", "json")
	storeAddr := double.addr()

	node := startProcess(t, "serve", []string{"TVSM_ADMIN_LOGIN=root", "TVSM_ADMIN_PASSWORD=esdb-double-test", testMasterKeyEnv},
		"serve", "--http", "127.0.0.1:0", "--data", filepath.Join(dir, "node"), "--log-format", "json",
		"--eventstore", "esdb://"+storeAddr+"?tls=false", "--stats-embedded-on-shared-store", "true")
	a := api{t: t, base: "http://" + node.addr(), c: &http.Client{Timeout: 10 * time.Second}, password: "esdb-double-test"}

	var provider struct{ ID int64 }
	a.ok(http.MethodPost, "/api/admin/providers", map[string]any{"name": "Double ISP"}, &provider)
	var account struct {
		ID    int64
		Login string
	}
	a.ok(http.MethodPost, "/api/provider/accounts", map[string]any{
		"provider": provider.ID, "login": "alice", "fullname": "Alice", "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055",
	}, &account)
	if account.ID <= 0 || account.Login != "alice" {
		t.Fatalf("created account %+v", account)
	}
	if code := a.call(http.MethodPost, "/api/provider/accounts", map[string]any{
		"provider": provider.ID, "login": "alice", "fullname": "Alice again", "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055",
	}, nil); code != http.StatusBadRequest {
		t.Fatalf("a second alice: status %d, want 400 (login taken)", code)
	}
	var list struct {
		Data  []struct{ Login string }
		Total int
	}
	a.ok(http.MethodGet, "/api/provider/accounts", nil, &list)
	if list.Total != 1 || len(list.Data) != 1 || list.Data[0].Login != "alice" {
		t.Fatalf("account list %+v", list)
	}
	var sent struct {
		Response bool
		SendID   int64 `json:"send_id"`
	}
	a.ok(http.MethodPost, "/api/provider/commands/send/accounts?broadcast=false", map[string]any{
		"ids": []int64{account.ID}, "commands": []map[string]any{{"command": "user_message", "type": "notify", "text": "hello"}},
	}, &sent)
	if !sent.Response || sent.SendID <= 0 {
		t.Fatalf("send answer %+v", sent)
	}
	var receipts map[string]any
	a.ok(http.MethodGet, fmt.Sprintf("/api/provider/commands/%d", sent.SendID), nil, &receipts)
	day := time.Now().UTC().Format(time.DateOnly)
	var stat struct {
		From         string
		ProviderStat []struct {
			ProviderID int64 `json:"provider_id"`
		} `json:"provider_stat"`
	}
	a.ok(http.MethodGet, "/api/stats/subscription?from="+day+"&to="+day, nil, &stat)
	if stat.From != day || len(stat.ProviderStat) != 1 || stat.ProviderStat[0].ProviderID != provider.ID {
		t.Fatalf("subscription statistics %+v", stat)
	}

	// The store dies and comes back on the same data and address.
	if code := double.stop(syscall.SIGKILL); code != -1 {
		t.Logf("double exited %d", code)
	}
	double = startProcess(t, "esdb-double", nil, "esdb-double", "--data", esdbDir, "--listen", storeAddr, "--log-format", "json")
	double.addr()
	deadline := time.Now().Add(15 * time.Second)
	for a.call(http.MethodPost, "/api/provider/accounts", map[string]any{
		"provider": provider.ID, "login": "bob", "fullname": "Bob", "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055",
	}, nil) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("no account created within 15s of the store's return; node log:\n%s", node.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.ok(http.MethodGet, "/api/provider/accounts", nil, &list)
	if list.Total != 2 {
		t.Fatalf("after the store's restart: %d accounts, want alice and bob", list.Total)
	}

	if code := node.stop(syscall.SIGTERM); code != exitOK {
		t.Fatalf("serve exited %d; log:\n%s", code, node.log)
	}
	if code := double.stop(syscall.SIGTERM); code != exitOK {
		t.Fatalf("esdb-double exited %d; log:\n%s", code, double.log)
	}
}

// TestServeRefusesOldEventStoreDB: serve on an EventStoreDB older than the
// backend needs (the double announcing 22.3.0) exits at start with an
// error naming the version found and the one needed.
func TestServeRefusesOldEventStoreDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	double := startProcess(t, "esdb-double", nil, "esdb-double", "--data", filepath.Join(dir, "esdb"),
		"--listen", "127.0.0.1:0", "--log-format", "json", "--server-version", "22.3.0")
	storeAddr := double.addr()
	node := startProcess(t, "serve", []string{"TVSM_ADMIN_LOGIN=root", "TVSM_ADMIN_PASSWORD=esdb-double-test", testMasterKeyEnv},
		"serve", "--http", "127.0.0.1:0", "--data", filepath.Join(dir, "node"), "--log-format", "json",
		"--eventstore", "esdb://"+storeAddr+"?tls=false", "--stats-embedded-on-shared-store", "true")
	select {
	case code := <-node.exited:
		if code == exitOK {
			t.Fatalf("serve exited 0 on EventStoreDB 22.3.0; log:\n%s", node.log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still running 30s after start on EventStoreDB 22.3.0; log:\n%s", node.log)
	}
	for _, want := range []string{"EventStoreDB 22.3.0", "needs 22.6.0 or newer"} {
		if !strings.Contains(node.log.String(), want) {
			t.Errorf("serve's log lacks %q:\n%s", want, node.log)
		}
	}
}

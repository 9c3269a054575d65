package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tvsm/internal/platform/backup"
)

const backupPassword = "backup-test-pw"

// backupNode is a tvsm serve process on the embedded store, as its
// superadmin root.
type backupNode struct {
	t    testing.TB
	data string
	proc *process
	base string
	http *http.Client
}

// startBackupNode starts a node on data and waits until it is ready.
func startBackupNode(t testing.TB, data string) *backupNode {
	t.Helper()
	n := &backupNode{t: t, data: data, http: &http.Client{Timeout: 30 * time.Second}}
	n.proc = startProcess(t, "serve", []string{"TVSM_ADMIN_LOGIN=root", "TVSM_ADMIN_PASSWORD=" + backupPassword},
		"serve", "--http", "127.0.0.1:0", "--data", data, "--log-format", "json", "--shutdown-timeout", "5s")
	n.base = "http://" + n.proc.addr()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if status, _ := n.do(context.Background(), http.MethodGet, "/readyz", nil); status == http.StatusOK {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("node on %s not ready within 60s; log:\n%s", data, n.proc.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends a request; status 0 is a transport failure.
func (n *backupNode) do(ctx context.Context, method, path string, body any) (int, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.base+path, rd)
	if err != nil {
		n.t.Error(err)
		return 0, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("root", backupPassword)
	resp, err := n.http.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// create posts body and returns the new object's id.
func (n *backupNode) create(path string, body any) int64 {
	n.t.Helper()
	status, b := n.do(context.Background(), http.MethodPost, path, body)
	var obj struct{ ID int64 }
	if status != http.StatusOK || json.Unmarshal(b, &obj) != nil || obj.ID <= 0 {
		n.t.Fatalf("POST %s: %d %s", path, status, b)
	}
	return obj.ID
}

// accounts returns the provider's accounts by login, counting each.
func (n *backupNode) accounts(provider int64) map[string][]int64 {
	n.t.Helper()
	status, b := n.do(context.Background(), http.MethodGet, fmt.Sprintf("/api/provider/accounts?provider=%d&limit=0", provider), nil)
	var list struct {
		Data []struct {
			ID    int64  `json:"id"`
			Login string `json:"login"`
		} `json:"data"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &list) != nil {
		n.t.Fatalf("list accounts: %d %s", status, b)
	}
	byLogin := map[string][]int64{}
	for _, a := range list.Data {
		byLogin[a.Login] = append(byLogin[a.Login], a.ID)
	}
	return byLogin
}

// runTvsm runs a tvsm command in-process with the superadmin's password in
// the environment.
func runTvsm(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	isolateEnv(t)
	t.Setenv("TVSM_ADMIN_LOGIN", "root")
	t.Setenv("TVSM_ADMIN_PASSWORD", backupPassword)
	return runCapture(t, args...)
}

// Given a node under 16 concurrent writers, when it is backed up, the
// backup verified and restored into a new directory, then a node started
// on it serves every account acknowledged before the backup began, each
// once, and none the source node does not hold (each with the source's
// id); and a check of its read model against its log finds no difference.
func TestBackupUnderConcurrentWritersRestores(t *testing.T) {
	dir := t.TempDir()
	src := startBackupNode(t, filepath.Join(dir, "data"))
	provider := src.create("/api/admin/providers", map[string]any{"name": "Backup ISP"})
	early := src.create("/api/provider/accounts", account(provider, "early"))
	// A stop writes the snapshots, which the backup then carries: the node
	// started on it loads them and reads the log after them.
	if code := src.proc.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("the node exited %d on SIGTERM; log:\n%s", code, src.proc.log)
	}
	src = startBackupNode(t, src.data)

	const writers = 16 // as startAccountWriters runs
	w := startAccountWriters(t, src, provider)
	w.waitFor(t, 400)
	before := w.snapshot()

	bk := filepath.Join(dir, "backup")
	code, stdout, stderr := runTvsm(t, "backup", "--url", src.base, "--to", bk, "--include-keys")
	if code != exitOK {
		t.Fatalf("backup: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("tvsm backup under %d writers (%d creates acknowledged before it):\n%s", writers, len(before), stdout)
	w.waitFor(t, 100) // the node keeps serving writes after it
	w.end()
	if entries, err := os.ReadDir(filepath.Join(src.data, "backups")); err != nil || len(entries) != 0 {
		t.Errorf("the node kept staged backups after the copy: %v %v", entries, err)
	}

	if code, stdout, stderr := runTvsm(t, "backup", "verify", bk); code != exitOK {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	restored := filepath.Join(dir, "restored")
	if code, stdout, stderr := runTvsm(t, "restore", bk, "--data", restored); code != exitOK {
		t.Fatalf("restore: exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := backup.ReadManifest(bk)
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range backup.Snapshots {
		if !m.Has(snap) {
			t.Errorf("the backup carries no %s", snap)
		}
	}

	dst := startBackupNode(t, restored)
	got := dst.accounts(provider)
	final := src.accounts(provider)
	before["early"] = early
	for login, id := range before {
		if ids := got[login]; len(ids) != 1 || ids[0] != id {
			t.Errorf("account %s (id %d), acknowledged before the backup, restored as %v", login, id, ids)
		}
	}
	for login, ids := range got {
		if len(ids) != 1 || len(final[login]) != 1 || final[login][0] != ids[0] {
			t.Errorf("restored account %s %v; the source holds %v", login, ids, final[login])
		}
	}
	// 100 creates were acknowledged after the backup ended, of which at
	// most one per writer was sent before: the rest are not in it.
	if len(got) > len(final)-100+writers {
		t.Errorf("the restored node holds %d accounts, the source %d after 100 more creates", len(got), len(final))
	}
	t.Logf("%d accounts acknowledged before the backup, %d in it (position %d, %d events), %d in the source at the end",
		len(before), len(got), m.Position, m.Events, len(final))

	code, stdout, stderr = runTvsm(t, "rebuild", "readmodel", "--verify", "--url", dst.base, "--poll", "20ms")
	if code != exitOK || !strings.Contains(stdout, "no difference") {
		t.Fatalf("check of the restored node's read model: exit %d\n%s%s", code, stdout, stderr)
	}
}

// stallingProxy forwards to a node and holds the request for the second
// file of a backup until release is closed, telling stalled when it does.
type stallingProxy struct {
	*httptest.Server
	stalled, release chan struct{}
	files            atomic.Int32
}

func newStallingProxy(t *testing.T, target string) *stallingProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{stalled: make(chan struct{}), release: make(chan struct{})}
	forward := httputil.NewSingleHostReverseProxy(u)
	forward.ErrorLog = log.New(io.Discard, "", 0) // a killed node is the point
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/file") && p.files.Add(1) == 2 {
			close(p.stalled)
			<-p.release
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		select {
		case <-p.release:
		default:
			close(p.release)
		}
		p.Close()
	})
	return p
}

// Given a backup copying its files, when the CLI is killed (SIGKILL)
// half-way, then the directory it leaves is not a backup verify accepts,
// the node keeps serving reads and writes, and the next backup succeeds.
func TestBackupKilledCLILeavesNoBackup(t *testing.T) {
	dir := t.TempDir()
	src := startBackupNode(t, filepath.Join(dir, "data"))
	provider := src.create("/api/admin/providers", map[string]any{"name": "Kill ISP"})
	for i := range 20 {
		src.create("/api/provider/accounts", account(provider, fmt.Sprintf("k%d", i)))
	}
	proxy := newStallingProxy(t, src.base)
	bk := filepath.Join(dir, "cut")
	cli := startProcess(t, "backup", []string{"TVSM_ADMIN_LOGIN=root", "TVSM_ADMIN_PASSWORD=" + backupPassword},
		"backup", "--url", proxy.URL, "--to", bk)
	select {
	case <-proxy.stalled:
	case code := <-cli.exited:
		t.Fatalf("the backup ended (exit %d) before its second file; log:\n%s", code, cli.log)
	case <-time.After(60 * time.Second):
		t.Fatalf("the backup did not reach its second file in 60s; log:\n%s", cli.log)
	}
	cli.stop(syscall.SIGKILL)
	close(proxy.release)

	if code, stdout, stderr := runTvsm(t, "backup", "verify", bk); code != exitFailure || !strings.Contains(stderr, "not a complete backup") {
		t.Fatalf("verify of a backup whose CLI was killed: exit %d\n%s%s", code, stdout, stderr)
	}
	if status, _ := src.do(context.Background(), http.MethodGet, "/readyz", nil); status != http.StatusOK {
		t.Fatalf("the node after the CLI died: readyz %d", status)
	}
	src.create("/api/provider/accounts", account(provider, "after-kill"))
	again := filepath.Join(dir, "again")
	if code, stdout, stderr := runTvsm(t, "backup", "--url", src.base, "--to", again); code != exitOK {
		t.Fatalf("a backup after the killed one: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runTvsm(t, "backup", "verify", again); code != exitOK {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	if entries, err := os.ReadDir(filepath.Join(src.data, "backups")); err != nil || len(entries) != 0 {
		t.Errorf("staged backups left on the node: %v %v", entries, err)
	}
}

// Given a backup copying its files, when the node is killed (SIGKILL)
// half-way, then the CLI fails, the directory is not a backup verify
// accepts, and the restarted node serves and holds no staged copy.
func TestBackupKilledNodeLeavesNoBackup(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	src := startBackupNode(t, data)
	provider := src.create("/api/admin/providers", map[string]any{"name": "Kill ISP"})
	src.create("/api/provider/accounts", account(provider, "k"))
	proxy := newStallingProxy(t, src.base)
	bk := filepath.Join(dir, "cut")
	isolateEnv(t)
	t.Setenv("TVSM_ADMIN_LOGIN", "root")
	t.Setenv("TVSM_ADMIN_PASSWORD", backupPassword)
	done := make(chan [3]any, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"backup", "--url", proxy.URL, "--to", bk}, &out, &errOut)
		done <- [3]any{code, out.String(), errOut.String()}
	}()
	select {
	case <-proxy.stalled:
	case r := <-done:
		t.Fatalf("the backup ended before its second file: %v", r)
	case <-time.After(60 * time.Second):
		t.Fatal("the backup did not reach its second file in 60s")
	}
	src.proc.stop(syscall.SIGKILL)
	close(proxy.release)
	r := <-done
	if r[0] != exitFailure || !strings.Contains(r[2].(string), "incomplete") {
		t.Fatalf("backup from a node killed under it: exit %v\n%s%s", r[0], r[1], r[2])
	}
	if code, stdout, stderr := runTvsm(t, "backup", "verify", bk); code != exitFailure {
		t.Fatalf("verify of a backup whose node was killed: exit %d\n%s%s", code, stdout, stderr)
	}
	src = startBackupNode(t, data)
	if got := src.accounts(provider); len(got["k"]) != 1 {
		t.Fatalf("the restarted node lost the account: %v", got)
	}
	if entries, err := os.ReadDir(filepath.Join(data, "backups")); !errors.Is(err, fs.ErrNotExist) && (err != nil || len(entries) != 0) {
		t.Errorf("staged backups left on the restarted node: %v %v", entries, err)
	}
}

// Given a node on EventStoreDB (the protocol double), when it is asked for
// a backup, then tvsm backup exits 1 saying the node does not own its log
// and pointing to EventStoreDB's own procedure, and writes no backup.
func TestBackupRefusedOnEventStoreDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	double := startProcess(t, "esdb-double", nil, "esdb-double", "--data", filepath.Join(dir, "esdb"), "--listen", "127.0.0.1:0", "--log-format", "json")
	storeAddr := double.addr()
	n := startProcess(t, "serve", []string{"TVSM_ADMIN_LOGIN=root", "TVSM_ADMIN_PASSWORD=" + backupPassword, testMasterKeyEnv},
		"serve", "--http", "127.0.0.1:0", "--data", filepath.Join(dir, "node"), "--log-format", "json",
		"--eventstore", "esdb://"+storeAddr+"?tls=false", "--stats-embedded-on-shared-store", "true")
	base := "http://" + n.addr()
	bk := filepath.Join(dir, "backup")
	code, stdout, stderr := runTvsm(t, "backup", "--url", base, "--to", bk)
	if code != exitFailure || !strings.Contains(stderr, "does not own") || !strings.Contains(stderr, "developers.eventstore.com") {
		t.Fatalf("backup of a node on EventStoreDB: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := backup.ReadManifest(bk); err == nil {
		t.Fatal("a backup of a node on EventStoreDB has a manifest")
	}
}

// Bad command lines exit 2 naming what is wrong, before any request.
func TestBackupCommandLine(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backup"}, "--to DIR is required"},
		{[]string{"backup", "--to", full}, "is not empty"},
		{[]string{"backup", "--to", filepath.Join(full, "new"), "extra"}, `unexpected argument "extra"`},
		{[]string{"backup", "verify"}, "verify what?"},
		{[]string{"restore"}, "restore what?"},
		{[]string{"restore", full}, "--data NEWDIR is required"},
		{[]string{"backup", "--to", filepath.Join(full, "new"), "--rate", "-1"}, "--rate -1"},
		{[]string{"backup", "--to", filepath.Join(full, "new"), "--since", filepath.Join(full, "none")}, "--since: "},
	} {
		code, _, stderr := runTvsm(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("tvsm %v: exit %d, %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if code, stdout, _ := runTvsm(t, "help"); code != exitOK || !strings.Contains(stdout, "tvsm backup --url URL --to DIR [--since EARLIER]") ||
		!strings.Contains(stdout, "tvsm backup verify DIR [DIR2 ...]") || !strings.Contains(stdout, "tvsm restore DIR [DIR2 ...] --data NEWDIR") {
		t.Errorf("tvsm help does not list the backup commands:\n%s", stdout)
	}
}

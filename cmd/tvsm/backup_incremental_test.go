package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tvsm/internal/platform/backup"
)

// accountWriters creates accounts from 16 writers until stopped, and
// records each acknowledged one.
type accountWriters struct {
	stop  context.CancelFunc
	wg    sync.WaitGroup
	mu    sync.Mutex
	acked map[string]int64 // login → id
	count atomic.Int64
}

func startAccountWriters(t testing.TB, n *backupNode, provider int64) *accountWriters {
	ctx, stop := context.WithCancel(context.Background())
	w := &accountWriters{stop: stop, acked: map[string]int64{}}
	for i := range 16 {
		w.wg.Go(func() {
			for j := 0; ctx.Err() == nil; j++ {
				login := fmt.Sprintf("w%d-%d", i, j)
				status, b := n.do(ctx, http.MethodPost, "/api/provider/accounts", map[string]any{
					"provider": provider, "login": login, "fullname": "Writer " + login, "pin_md5": faultPinMD5})
				if ctx.Err() != nil {
					return // cut off: the outcome is unknown
				}
				var obj struct{ ID int64 }
				if status != http.StatusOK || json.Unmarshal(b, &obj) != nil || obj.ID <= 0 {
					t.Errorf("create %s: %d %s", login, status, b)
					return
				}
				w.mu.Lock()
				w.acked[login] = obj.ID
				w.mu.Unlock()
				w.count.Add(1)
			}
		})
	}
	t.Cleanup(w.end)
	return w
}

// waitFor waits until the writers have made n more creates.
func (w *accountWriters) waitFor(t testing.TB, n int64) {
	t.Helper()
	want := w.count.Load() + n
	for deadline := time.Now().Add(2 * time.Minute); w.count.Load() < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("16 writers made %d of %d creates in 2 minutes", w.count.Load(), want)
		}
	}
}

func (w *accountWriters) snapshot() map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int64, len(w.acked))
	for k, v := range w.acked {
		out[k] = v
	}
	return out
}

func (w *accountWriters) end() {
	w.stop()
	w.wg.Wait()
}

// Given a node under 16 writers with a full backup, when more is written
// and an incremental backup is made since the full one, then the
// incremental copies less than the whole, verify accepts the chain (and
// the incremental alone names what it needs), restore refuses a chain
// with a backup missing, out of order or changed, and a node started on
// the chain restored serves every account acknowledged before the
// incremental began, each once with the source's id, none the source
// does not hold, and a read model that matches its log.
func TestIncrementalBackupChainRestores(t *testing.T) {
	dir := t.TempDir()
	src := startBackupNode(t, filepath.Join(dir, "data"))
	provider := src.create("/api/admin/providers", map[string]any{"name": "Chain ISP"})
	for i := range 20 {
		src.create("/api/provider/accounts", account(provider, fmt.Sprintf("early-%d", i)))
	}
	// A stop flushes the log to sstables, which the incremental leaves to
	// the full backup.
	if code := src.proc.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("the node exited %d on SIGTERM; log:\n%s", code, src.proc.log)
	}
	src = startBackupNode(t, src.data)
	writers := startAccountWriters(t, src, provider)
	writers.waitFor(t, 200)

	full := filepath.Join(dir, "full")
	if code, stdout, stderr := runTvsm(t, "backup", "--url", src.base, "--to", full, "--include-keys"); code != exitOK {
		t.Fatalf("full backup: exit %d\n%s%s", code, stdout, stderr)
	}
	writers.waitFor(t, 200)
	before := writers.snapshot()
	incr := filepath.Join(dir, "incr")
	code, stdout, stderr := runTvsm(t, "backup", "--url", src.base, "--to", incr, "--since", full, "--include-keys")
	if code != exitOK {
		t.Fatalf("incremental backup: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("incremental backup under 16 writers:\n%s", stdout)
	writers.waitFor(t, 100) // the node keeps serving writes after it
	writers.end()

	fm, err := backup.ReadManifest(full)
	if err != nil {
		t.Fatal(err)
	}
	im, err := backup.ReadManifest(incr)
	if err != nil {
		t.Fatal(err)
	}
	if im.Parent == nil || im.Parent.ID != fm.ID || im.Parent.Position != fm.Position || im.Position < fm.Position {
		t.Fatalf("the incremental's parent %+v, position %d; the full backup %s at %d", im.Parent, im.Position, fm.ID, fm.Position)
	}
	if im.StoredSize() >= im.TotalSize() {
		t.Errorf("the incremental holds %d of %d bytes itself: it copied everything", im.StoredSize(), im.TotalSize())
	}
	left := 0
	for _, f := range im.Files {
		if f.InParent {
			left++
			if _, err := os.Stat(filepath.Join(incr, filepath.FromSlash(f.Path))); err == nil {
				t.Errorf("%s is left to the full backup and copied too", f.Path)
			}
		}
	}
	if left == 0 {
		t.Errorf("the incremental leaves no sstable to the full backup: %+v", im.Files)
	}

	if code, stdout, stderr := runTvsm(t, "backup", "verify", incr); code != exitOK || !strings.Contains(stdout, "made since backup "+fm.ID) {
		t.Fatalf("verify of the incremental alone: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runTvsm(t, "backup", "verify", full, incr); code != exitOK || !strings.Contains(stdout, "complete chain of 2 backups") {
		t.Fatalf("verify of the chain: exit %d\n%s%s", code, stdout, stderr)
	}

	// A copy of the full backup whose manifest was changed is not the
	// parent the incremental was made since.
	changed := filepath.Join(dir, "changed")
	copyTree(t, full, changed)
	data, err := os.ReadFile(filepath.Join(changed, backup.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(changed, backup.ManifestName), []byte(strings.Replace(string(data), `"tvsm_version"`, `"tvsm_version" `, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		chain []string
		want  string
	}{
		{[]string{incr}, "which is missing"},
		{[]string{incr, full}, "which is missing"},
		{[]string{full, full}, "is a full backup"},
		{[]string{changed, incr}, "it was changed or replaced"},
		{[]string{full, incr, incr}, "not since"},
	} {
		into := filepath.Join(dir, "refused")
		args := append(append([]string{"restore"}, c.chain...), "--data", into, "--master-key-file", filepath.Join(dir, "refused.key"))
		code, stdout, stderr := runTvsm(t, args...)
		if code != exitFailure || !strings.Contains(stderr, c.want) {
			t.Errorf("restore of the chain %v: exit %d, want 1 and %q\n%s%s", c.chain, code, c.want, stdout, stderr)
		}
		if _, err := os.Stat(into); err == nil {
			t.Errorf("restore of the chain %v wrote %s", c.chain, into)
		}
	}

	restored := filepath.Join(dir, "restored")
	if code, stdout, stderr := runTvsm(t, "restore", full, incr, "--data", restored); code != exitOK {
		t.Fatalf("restore of the chain: exit %d\n%s%s", code, stdout, stderr)
	}
	dst := startBackupNode(t, restored)
	got := dst.accounts(provider)
	final := src.accounts(provider)
	for login, id := range before {
		if ids := got[login]; len(ids) != 1 || ids[0] != id {
			t.Errorf("account %s (id %d), acknowledged before the incremental backup, restored as %v", login, id, ids)
		}
	}
	for i := range 20 {
		if ids := got[fmt.Sprintf("early-%d", i)]; len(ids) != 1 {
			t.Errorf("early account %d restored as %v", i, ids)
		}
	}
	for login, ids := range got {
		if len(ids) != 1 || len(final[login]) != 1 || final[login][0] != ids[0] {
			t.Errorf("restored account %s %v; the source holds %v", login, ids, final[login])
		}
	}
	// 100 creates were acknowledged after the incremental ended, of which
	// at most one per writer was sent before: the rest are not in it.
	if len(got) > len(final)-100+16 {
		t.Errorf("the restored node holds %d accounts, the source %d after 100 more creates", len(got), len(final))
	}
	t.Logf("%d accounts acknowledged before the incremental, %d restored (full at %d, incremental at %d, %d of %d bytes copied), %d in the source",
		len(before), len(got), fm.Position, im.Position, im.StoredSize(), im.TotalSize(), len(final))
	code, stdout, stderr = runTvsm(t, "rebuild", "readmodel", "--verify", "--url", dst.base, "--poll", "20ms")
	if code != exitOK || !strings.Contains(stdout, "no difference") {
		t.Fatalf("check of the restored node's read model: exit %d\n%s%s", code, stdout, stderr)
	}
}

// Given a node, when it is asked for a backup since a backup of another
// node's log, then tvsm backup exits 1 saying so and writes no backup.
func TestIncrementalBackupRefusesAnotherLog(t *testing.T) {
	dir := t.TempDir()
	a := startBackupNode(t, filepath.Join(dir, "a"))
	b := startBackupNode(t, filepath.Join(dir, "b"))
	for _, n := range []*backupNode{a, b} {
		p := n.create("/api/admin/providers", map[string]any{"name": "Other ISP"})
		n.create("/api/provider/accounts", account(p, "x"))
	}
	fromA := filepath.Join(dir, "from-a")
	if code, stdout, stderr := runTvsm(t, "backup", "--url", a.base, "--to", fromA); code != exitOK {
		t.Fatalf("backup of a: exit %d\n%s%s", code, stdout, stderr)
	}
	ofB := filepath.Join(dir, "of-b")
	code, stdout, stderr := runTvsm(t, "backup", "--url", b.base, "--to", ofB, "--since", filepath.Join(fromA, backup.ManifestName))
	if code != exitFailure || !strings.Contains(stderr, "not of this node's log") {
		t.Fatalf("backup of b since a backup of a: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := backup.ReadManifest(ofB); err == nil {
		t.Fatal("the refused backup has a manifest")
	}
}

// copyTree copies the files under from to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

package restore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/internal/platform/backup"
	"tvsm/internal/tools/restore"
)

// makeBackup writes a backup of a store of n events into a new directory,
// as a node and tvsm backup lay it out, and returns the directory.
func makeBackup(t *testing.T, n int) string {
	t.Helper()
	s, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		ev := eventstore.EventData{ID: eventstore.DeriveEventID("r", i), Type: "T.v1", Data: []byte(`{}`)}
		if _, err := s.Append(context.Background(), "s", eventstore.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "backup")
	sum, err := s.Checkpoint(context.Background(), filepath.Join(dir, backup.EventsDir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(backup.KeysFile)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m := backup.Manifest{Format: backup.Format, Store: "embedded", StoreFormat: sum.Format, Position: sum.Last, Events: sum.Events}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		size, h, err := backup.HashFile(p)
		m.Files = append(m.Files, backup.File{Path: filepath.ToSlash(rel), Size: size, SHA256: h})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := backup.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Given a backup, Verify accepts it as written, and refuses it once a
// file is changed, cut short or removed, or the manifest's count is not
// what the log holds.
func TestVerifyFindsEveryChange(t *testing.T) {
	if _, err := restore.Verify(makeBackup(t, 30)); err != nil {
		t.Fatalf("a backup as written: %v", err)
	}
	sst := func(dir string) string {
		ssts, _ := filepath.Glob(filepath.Join(dir, backup.EventsDir, "*.sst"))
		if len(ssts) == 0 {
			t.Fatal("no sstable in the backup")
		}
		return ssts[0]
	}
	for name, change := range map[string]func(dir string){
		"a byte flipped": func(dir string) {
			p := sst(dir)
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			os.WriteFile(p, b, 0o600)
		},
		"cut short":     func(dir string) { os.Truncate(sst(dir), 10) },
		"removed":       func(dir string) { os.Remove(sst(dir)) },
		"no manifest":   func(dir string) { os.Remove(filepath.Join(dir, backup.ManifestName)) },
		"count differs": func(dir string) { rewriteManifest(t, dir, func(m *backup.Manifest) { m.Events++; m.Position++ }) },
		"a path outside": func(dir string) {
			rewriteManifest(t, dir, func(m *backup.Manifest) { m.Files[0].Path = "../x" })
		},
		"no key file": func(dir string) {
			rewriteManifest(t, dir, func(m *backup.Manifest) {
				for i, f := range m.Files {
					if f.Path == backup.KeysFile {
						m.Files = append(m.Files[:i], m.Files[i+1:]...)
						return
					}
				}
			})
		},
	} {
		dir := makeBackup(t, 30)
		change(dir)
		if _, err := restore.Verify(dir); err == nil {
			t.Errorf("%s: verify accepted it", name)
		}
	}
}

func rewriteManifest(t *testing.T, dir string, change func(*backup.Manifest)) {
	t.Helper()
	m, err := backup.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	change(&m)
	os.Remove(filepath.Join(dir, backup.ManifestName))
	if err := backup.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// Given a backup, Into refuses a target that holds anything and leaves it
// as it was; into a new directory it lays out a store that opens with
// every event.
func TestIntoRefusesANonEmptyTarget(t *testing.T) {
	dir := makeBackup(t, 5)
	target := t.TempDir()
	keep := filepath.Join(target, "keep")
	os.WriteFile(keep, []byte("x"), 0o600)
	if _, err := restore.Into(dir, target, filepath.Join(t.TempDir(), "mk")); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("restore into a non-empty directory: %v", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 1 {
		t.Fatalf("the target was changed: %v", entries)
	}
	fresh := filepath.Join(t.TempDir(), "data")
	m, err := restore.Into(dir, fresh, filepath.Join(t.TempDir(), "mk"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		b, err := os.ReadFile(filepath.Join(fresh, filepath.FromSlash(f.Path)))
		sum := sha256.Sum256(b)
		if err != nil || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Fatalf("%s restored: %v", f.Path, err)
		}
	}
	s, err := embedded.Open(filepath.Join(fresh, backup.EventsDir), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if head, _ := s.Head(context.Background()); head.Commit != 5 {
		t.Fatalf("the restored store's head is %d, want 5", head.Commit)
	}
}

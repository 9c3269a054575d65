package backup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"tvsm/internal/platform/backup"
)

func write(t *testing.T, dir, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Given a staged backup hashed whole, when a later one is staged with an
// sstable kept, a new one, a segment that grew, a key file that changed
// and (after a restart, which reuses segment names: no cache) a segment
// that changed under its name, and hashed since the first (with the
// node's cache, and without it), then the kept sstable is left to the
// first, the grown segment keeps only its new end, whose bytes after the
// first's make the whole file, and the changed files are whole.
func TestHashTreeSinceAnEarlierBackup(t *testing.T) {
	seg := bytes.Repeat([]byte("record-"), 5000)
	grown := append(append([]byte(nil), seg...), []byte("more records")...)
	other := bytes.Repeat([]byte("x"), 40000)
	for _, withCache := range []bool{true, false} {
		cache := backup.NewHashCache()
		first := t.TempDir()
		write(t, first, "events/000004.sst", []byte("sstable four"))
		write(t, first, "events/commitlog/0000000000000007.seg", seg)
		write(t, first, "events/commitlog/0000000000000008.seg", other)
		write(t, first, "keys/subject-keys", []byte("keys v1"))
		firstFiles, err := backup.HashTree(context.Background(), first, nil, nil, cache)
		if err != nil {
			t.Fatal(err)
		}
		if !withCache {
			cache = nil // a restarted node
		}
		second := t.TempDir()
		write(t, second, "events/000004.sst", []byte("sstable four"))
		write(t, second, "events/000009.sst", []byte("sstable nine"))
		write(t, second, "events/commitlog/0000000000000007.seg", grown)
		changed := append([]byte("y"), other[1:]...)
		if withCache {
			changed = other // within one process a segment only grows
		}
		write(t, second, "events/commitlog/0000000000000008.seg", append(changed, 'z'))
		write(t, second, "keys/subject-keys", []byte("keys v2, longer"))
		files, err := backup.HashTree(context.Background(), second, firstFiles, backup.NewPacer(1<<30), cache)
		if err != nil {
			t.Fatal(err)
		}
		m := backup.Manifest{Files: files}
		want := map[string]struct {
			inParent bool
			prefix   int64
			whole    []byte
		}{
			"events/000004.sst":                     {inParent: true, whole: []byte("sstable four")},
			"events/000009.sst":                     {whole: []byte("sstable nine")},
			"events/commitlog/0000000000000007.seg": {prefix: int64(len(seg)), whole: grown},
			"events/commitlog/0000000000000008.seg": {whole: append(changed, 'z')},
			"keys/subject-keys":                     {whole: []byte("keys v2, longer")},
		}
		if withCache {
			w := want["events/commitlog/0000000000000008.seg"]
			w.prefix = int64(len(other))
			want["events/commitlog/0000000000000008.seg"] = w
		}
		if len(files) != len(want) {
			t.Fatalf("cache %v: %d files, want %d: %+v", withCache, len(files), len(want), files)
		}
		for path, w := range want {
			f, ok := m.File(path)
			if !ok || f.InParent != w.inParent || f.ParentPrefix != w.prefix || f.Size != int64(len(w.whole)) || f.SHA256 != sum(w.whole) {
				t.Errorf("cache %v: %s: %+v, want in_parent %v, prefix %d, %d bytes", withCache, path, f, w.inParent, w.prefix, len(w.whole))
				continue
			}
			if f.InParent {
				continue
			}
			held, err := os.ReadFile(filepath.Join(second, filepath.FromSlash(path)))
			if err != nil {
				t.Fatal(err)
			}
			size, tail := f.Stored()
			if !bytes.Equal(held, w.whole[w.prefix:]) || int64(len(held)) != size || sum(held) != tail {
				t.Errorf("cache %v: %s holds %d bytes (stored %d, %s), want the %d after the first %d", withCache, path, len(held), size, tail, len(w.whole)-int(w.prefix), w.prefix)
			}
		}
	}
}

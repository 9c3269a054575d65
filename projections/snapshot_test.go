package projections

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"tvsm/eventstore"
)

// patternWriter writes n deterministic pseudo-random bytes in small chunks.
func patternWriter(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		var x uint32 = 2463534242
		buf := make([]byte, 1000)
		for n > 0 {
			for i := range buf {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				buf[i] = byte(x)
			}
			k := min(n, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				return err
			}
			n -= k
		}
		return nil
	}
}

func digest(write func(io.Writer) error) [32]byte {
	h := sha256.New()
	write(h)
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

func readDigest(path string) (eventstore.Position, [32]byte, error) {
	h := sha256.New()
	p, err := ReadSnapshot(path, func(r io.Reader) error {
		_, err := io.Copy(h, r)
		return err
	})
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return p, d, err
}

func TestSnapshotRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "readmodel.snap")
	for _, tc := range []struct {
		pos  eventstore.Position
		size int
	}{
		{eventstore.Beginning, 0},
		{eventstore.Position{Commit: 1, Prepare: 1}, 1},
		{eventstore.Position{Commit: 1 << 40, Prepare: 1<<40 - 7}, 3<<20 + 17}, // bigger than the buffers
	} {
		if err := WriteSnapshot(path, tc.pos, patternWriter(tc.size)); err != nil {
			t.Fatal(err)
		}
		got, d, err := readDigest(path)
		if err != nil {
			t.Fatalf("size %d: %v", tc.size, err)
		}
		if got != tc.pos {
			t.Errorf("size %d: position %v, want %v", tc.size, got, tc.pos)
		}
		if d != digest(patternWriter(tc.size)) {
			t.Errorf("size %d: payload differs", tc.size)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the snapshot", len(entries))
	}
}

func TestSnapshotMissing(t *testing.T) {
	_, err := ReadSnapshot(filepath.Join(t.TempDir(), "none.snap"), func(io.Reader) error {
		t.Error("read called for a missing snapshot")
		return nil
	})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	if errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("a missing snapshot reported as corrupt: %v", err)
	}
}

func TestSnapshotCorruptionDetected(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.snap")
	const size = 100_000
	if err := WriteSnapshot(good, eventstore.Position{Commit: 9, Prepare: 9}, patternWriter(size)); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	damage := map[string][]byte{}
	for name, off := range map[string]int{
		"magic": 0, "version": 9, "position": 15,
		"payload start": snapshotHeaderLen, "payload middle": snapshotHeaderLen + size/2,
		"length": len(orig) - snapshotTrailerLen + 3, "crc": len(orig) - 1,
	} {
		b := bytes.Clone(orig)
		b[off] ^= 0x40
		damage["flip "+name] = b
	}
	for _, n := range []int{0, 5, snapshotHeaderLen, snapshotHeaderLen + snapshotTrailerLen - 1, len(orig) / 2, len(orig) - 1} {
		damage["truncated to "+strconv.Itoa(n)] = orig[:n]
	}
	damage["extra byte"] = append(bytes.Clone(orig), 0)
	for name, content := range damage {
		path := filepath.Join(dir, "bad.snap")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		called := false
		_, err := ReadSnapshot(path, func(io.Reader) error { called = true; return nil })
		if !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: err = %v, want ErrCorruptSnapshot", name, err)
		}
		if called {
			t.Errorf("%s: read was given unverified data", name)
		}
	}
}

func TestSnapshotFailedWriteKeepsOldSnapshot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rm.snap")
	old := eventstore.Position{Commit: 5, Prepare: 5}
	if err := WriteSnapshot(path, old, patternWriter(1000)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("encoder failed")
	err := WriteSnapshot(path, eventstore.Position{Commit: 6, Prepare: 6}, func(w io.Writer) error {
		patternWriter(500_000)(w)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WriteSnapshot = %v, want the write function's error", err)
	}
	got, d, err := readDigest(path)
	if err != nil || got != old || d != digest(patternWriter(1000)) {
		t.Fatalf("after a failed write: pos %v err %v, want the old snapshot intact", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d files after a failed write, want 1", len(entries))
	}
}

func TestSnapshotIgnoresAndClearsLeftoverTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rm.snap")
	if err := WriteSnapshot(path, eventstore.Position{Commit: 3, Prepare: 3}, patternWriter(10)); err != nil {
		t.Fatal(err)
	}
	leftover := path + ".999" + tempSuffix // a crash before rename
	if err := os.WriteFile(leftover, []byte("TVSMSNAP half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := readDigest(path); err != nil || got.Commit != 3 {
		t.Fatalf("ReadSnapshot = %v, %v; want the renamed snapshot", got, err)
	}
	if err := WriteSnapshot(path, eventstore.Position{Commit: 4, Prepare: 4}, patternWriter(10)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover temp file not removed by the next write: %v", err)
	}
}

func TestSnapshotReadError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rm.snap")
	if err := WriteSnapshot(path, eventstore.Position{Commit: 1, Prepare: 1}, patternWriter(10)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("decode failed")
	_, err := ReadSnapshot(path, func(io.Reader) error { return boom })
	if !errors.Is(err, boom) || errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("err = %v, want the read function's error", err)
	}
}

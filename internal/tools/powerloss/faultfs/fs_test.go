package faultfs_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"testing"

	"tvsm/internal/tools/powerloss/faultfs"
)

// requireFUSEEnv makes the tests fail, instead of skipping, where the file
// system cannot be mounted (CI sets it where /dev/fuse is present).
const requireFUSEEnv = "TVSM_REQUIRE_FUSE"

// mount mounts a new file system on a temporary directory, and unmounts it
// when the test ends. Without /dev/fuse or the right to mount, the test
// skips.
func mount(t *testing.T) (*faultfs.FS, string) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv(requireFUSEEnv) != "" {
		skip = t.Fatalf
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		skip("FUSE: %v (set %s=1 to fail instead)", err, requireFUSEEnv)
	}
	f, dir := faultfs.New(), t.TempDir()
	if err := f.Mount(dir); err != nil {
		skip("FUSE: %v (set %s=1 to fail instead)", err, requireFUSEEnv)
	}
	t.Cleanup(func() {
		f.CutPower("end of test")
		f.Release()
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, dir
}

// powerLoss cuts the power, lets the frozen operations fail, and mounts
// again what the loss leaves.
func powerLoss(t *testing.T, f *faultfs.FS, dir string, loss faultfs.Loss, seed uint64) faultfs.Report {
	t.Helper()
	f.CutPower("test")
	f.Release()
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	report, err := f.Restore(loss, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Mount(dir); err != nil {
		t.Fatal(err)
	}
	return report
}

// writeFile writes data to a new file at path and, when sync, fsyncs it.
func writeFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// appendFile writes data at the end of the file at path and, when sync,
// fsyncs it.
func appendFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// A synced file in a synced directory: what a power loss must keep.
func syncedFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	writeFile(t, path, data, true)
	syncDir(t, dir)
	return path
}

func TestPowerLossDropsWhatWasNotSynced(t *testing.T) {
	f, dir := mount(t)
	// Given a synced file, then a write to it not synced.
	path := syncedFile(t, dir, "log", []byte("synced "))
	appendFile(t, path, []byte("unsynced"), false)
	if got := readFile(t, path); string(got) != "synced unsynced" {
		t.Fatalf("before the loss: %q", got)
	}
	// When the power is lost, unsynced data dropped.
	report := powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.DropUnsynced, Dirs: faultfs.KeepSyncedDirs}, 1)
	// Then the file holds what was synced, and no more.
	if got := readFile(t, path); string(got) != "synced " {
		t.Fatalf("after the loss: %q, want %q", got, "synced ")
	}
	if report.Files != 1 || report.PagesKept != 0 {
		t.Errorf("report %+v: want one file, nothing kept", report)
	}
	// And the file system works on: a write synced now survives the next loss.
	appendFile(t, path, []byte("again"), true)
	powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.DropUnsynced, Dirs: faultfs.KeepSyncedDirs}, 2)
	if got := readFile(t, path); string(got) != "synced again" {
		t.Fatalf("after the second loss: %q", got)
	}
}

func TestPowerLossCanKeepWhatWasNotSynced(t *testing.T) {
	f, dir := mount(t)
	// Given a synced file, a write to it and a new file, neither synced.
	path := syncedFile(t, dir, "log", []byte("synced "))
	appendFile(t, path, []byte("unsynced"), false)
	writeFile(t, filepath.Join(dir, "new"), []byte("new"), false)
	// When the power is lost, the kernel having written everything back.
	powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.KeepUnsynced, Dirs: faultfs.KeepAllDirs}, 1)
	// Then everything is there, as after a crash of the program alone.
	if got := readFile(t, path); string(got) != "synced unsynced" {
		t.Errorf("log: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "new")); string(got) != "new" {
		t.Errorf("new: %q", got)
	}
}

func TestNewFileNeedsItsDirectorySynced(t *testing.T) {
	f, dir := mount(t)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, dir)
	// Given two files with their data synced in a new directory, and the
	// directory synced after the first only.
	writeFile(t, filepath.Join(sub, "first"), []byte("1"), true)
	syncDir(t, sub)
	writeFile(t, filepath.Join(sub, "second"), []byte("2"), true)
	// When the power is lost, keeping only directory changes synced.
	report := powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.DropUnsynced, Dirs: faultfs.KeepSyncedDirs}, 1)
	// Then the first file is there, the second not.
	if got := readFile(t, filepath.Join(sub, "first")); string(got) != "1" {
		t.Errorf("first: %q", got)
	}
	if exists(t, filepath.Join(sub, "second")) {
		t.Error("second survived without its directory synced")
	}
	if report.DirChanges != 1 || report.DirChangesKept != 0 {
		t.Errorf("report %+v: want one directory change, lost", report)
	}
}

func TestJournalKeepsDirectoryChangesInOrder(t *testing.T) {
	// Given files created one after another, nothing synced since, over
	// several losses drawn differently.
	seen := map[int]bool{}
	for seed := range uint64(12) {
		f, dir := mount(t)
		names := []string{"a", "b", "c", "d"}
		for _, name := range names {
			writeFile(t, filepath.Join(dir, name), nil, false)
		}
		// When the power is lost, a journal keeping changes in order.
		powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.DropUnsynced, Dirs: faultfs.KeepJournaledDirs}, seed)
		// Then the files that survive are the first ones created.
		kept := 0
		for _, name := range names {
			if exists(t, filepath.Join(dir, name)) {
				kept++
			}
		}
		for i, name := range names {
			if exists(t, filepath.Join(dir, name)) != (i < kept) {
				t.Fatalf("seed %d: %s survived out of order (%d kept)", seed, name, kept)
			}
		}
		seen[kept] = true
	}
	if len(seen) < 2 {
		t.Errorf("every loss kept the same files (%v): the cut is not drawn", seen)
	}
}

func TestFsyncCommitsTheJournal(t *testing.T) {
	f, dir := mount(t)
	// Given a file created, then another file fsynced (a journal commit).
	writeFile(t, filepath.Join(dir, "created"), []byte("data"), false)
	writeFile(t, filepath.Join(dir, "synced"), []byte("x"), true)
	// When the power is lost, with a journal.
	powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.DropUnsynced, Dirs: faultfs.KeepJournaledDirs}, 1)
	// Then both names survive; the first file's data, never synced, does not.
	if got := readFile(t, filepath.Join(dir, "created")); len(got) != 0 {
		t.Errorf("created: %q, want empty", got)
	}
	if got := readFile(t, filepath.Join(dir, "synced")); string(got) != "x" {
		t.Errorf("synced: %q", got)
	}
}

func TestRenameSurvivesWhole(t *testing.T) {
	// Given a file written and synced under a temporary name, then renamed
	// over the old version, over several losses.
	for seed := range uint64(8) {
		f, dir := mount(t)
		final := syncedFile(t, dir, "state", []byte("old"))
		tmp := filepath.Join(dir, "state.tmp")
		writeFile(t, tmp, []byte("new"), true)
		if err := os.Rename(tmp, final); err != nil {
			t.Fatal(err)
		}
		// When the power is lost, with a journal.
		powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.DropUnsynced, Dirs: faultfs.KeepJournaledDirs}, seed)
		// Then the state is the old or the new one, whole.
		got := string(readFile(t, final))
		if got != "old" && got != "new" {
			t.Fatalf("seed %d: state %q", seed, got)
		}
	}
}

func TestTornWriteKeepsWholeSectors(t *testing.T) {
	const size = 8192
	outcomes := map[string]bool{}
	for seed := range uint64(6) {
		f, dir := mount(t)
		// Given a synced file of zeros, then 4 KiB of x written over it,
		// not synced.
		path := syncedFile(t, dir, "seg", make([]byte, size))
		fh, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt(bytes.Repeat([]byte("x"), 4096), 1024); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		// When the power is lost during that write.
		powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.TearLastWrite, Dirs: faultfs.KeepSyncedDirs}, seed)
		// Then each 512-byte sector holds the old bytes or the new, whole.
		got := readFile(t, path)
		if len(got) != size {
			t.Fatalf("seed %d: size %d", seed, len(got))
		}
		pattern := ""
		for off := 0; off < size; off += 512 {
			sector := got[off : off+512]
			switch {
			case bytes.Count(sector, []byte("x")) == 512 && off >= 1024 && off < 1024+4096:
				pattern += "x"
			case bytes.Count(sector, []byte{0}) == 512:
				pattern += "0"
			default:
				t.Fatalf("seed %d: sector at %d mixed or out of the write", seed, off)
			}
		}
		outcomes[pattern] = true
	}
	if len(outcomes) < 2 {
		t.Errorf("every torn write kept the same sectors: %v", outcomes)
	}
}

func TestPagesSurviveWhole(t *testing.T) {
	const pages = 16
	for _, data := range []faultfs.DataLoss{faultfs.KeepSomePages, faultfs.KeepFirstPages} {
		for seed := range uint64(4) {
			f, dir := mount(t)
			// Given a synced file of 16 pages of a, then b written over it
			// all, not synced.
			path := syncedFile(t, dir, "f", bytes.Repeat([]byte("a"), pages*4096))
			fh, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.WriteAt(bytes.Repeat([]byte("b"), pages*4096), 0); err != nil {
				t.Fatal(err)
			}
			fh.Close()
			// When the power is lost with some pages written back.
			powerLoss(t, f, dir, faultfs.Loss{Data: data, Dirs: faultfs.KeepSyncedDirs}, seed)
			// Then each page is all a or all b; with KeepFirstPages the
			// b pages come first.
			got := readFile(t, path)
			var kinds []byte
			for p := range pages {
				page := got[p*4096 : (p+1)*4096]
				if c := page[0]; bytes.Count(page, []byte{c}) != 4096 {
					t.Fatalf("%v, seed %d: page %d mixed", data, seed, p)
				}
				kinds = append(kinds, page[0])
			}
			if data == faultfs.KeepFirstPages && !slices.IsSorted(reverse(kinds)) {
				t.Errorf("%v, seed %d: pages %s, want the kept (b) first", data, seed, kinds)
			}
		}
	}
}

func reverse(b []byte) []byte {
	r := slices.Clone(b)
	slices.Reverse(r)
	return r
}

func TestSizesOnlyLeavesZeros(t *testing.T) {
	f, dir := mount(t)
	// Given a synced file, then appended to without a sync.
	path := syncedFile(t, dir, "f", []byte("head"))
	appendFile(t, path, []byte("tail"), false)
	// When the power is lost, the new size journaled, not the data.
	powerLoss(t, f, dir, faultfs.Loss{Data: faultfs.KeepSizesOnly, Dirs: faultfs.KeepSyncedDirs}, 1)
	// Then the file has its new size, and zeros where the data was.
	if got := readFile(t, path); string(got) != "head\x00\x00\x00\x00" {
		t.Errorf("%q", got)
	}
}

func TestTriggerCutsThePowerAtTheNthOperation(t *testing.T) {
	for _, before := range []bool{true, false} {
		f, dir := mount(t)
		path := syncedFile(t, dir, "data.log", nil)
		// Given a trigger on the second fsync of a .log file.
		f.Arm(faultfs.Trigger{Op: faultfs.OpFsync, Path: regexp.MustCompile(`\.log$`), Before: before, Nth: 2})
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		// When a program writes and fsyncs twice.
		if _, err := fh.Write([]byte("one ")); err != nil {
			t.Fatal(err)
		}
		if err := fh.Sync(); err != nil {
			t.Fatalf("the first fsync: %v", err)
		}
		if _, err := fh.Write([]byte("two")); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- fh.Sync() }()
		// Then the power is cut at the second fsync, which waits until
		// released, and fails.
		<-f.Lost()
		select {
		case err := <-done:
			t.Fatalf("the second fsync returned %v while the power was off", err)
		default:
		}
		f.Release()
		if err := <-done; !errors.Is(err, syscall.EIO) {
			t.Errorf("the second fsync: %v, want EIO", err)
		}
		fh.Close()
		t.Logf("cause: %s", f.Cause())
		if err := f.Unmount(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Restore(faultfs.Loss{Data: faultfs.DropUnsynced, Dirs: faultfs.KeepSyncedDirs}, rand.New(rand.NewPCG(1, 1))); err != nil {
			t.Fatal(err)
		}
		if err := f.Mount(dir); err != nil {
			t.Fatal(err)
		}
		// And the second write survives when the cut came after its fsync.
		want := "one two"
		if before {
			want = "one "
		}
		if got := readFile(t, path); string(got) != want {
			t.Errorf("before %v: %q, want %q", before, got, want)
		}
	}
}

func TestChainedTriggerCountsFromItsFirstOperation(t *testing.T) {
	f, dir := mount(t)
	// Given a trigger on the second write after the creation of a file
	// named b, and two writes to a file a before it.
	f.Arm(faultfs.Trigger{Op: faultfs.OpCreate, Path: regexp.MustCompile(`(^|/)b$`), Nth: 1,
		Then: &faultfs.Trigger{Op: faultfs.OpWrite, Nth: 2}})
	a := filepath.Join(dir, "a")
	writeFile(t, a, []byte("1"), true)
	appendFile(t, a, []byte("2"), true)
	// When b is created and written twice.
	b := filepath.Join(dir, "b")
	writeFile(t, b, []byte("first "), true)
	fh, err := os.OpenFile(b, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.Lost():
		t.Fatalf("the power went before the second write to b: %s", f.Cause())
	default:
	}
	done := make(chan error, 1)
	go func() {
		_, err := fh.Write([]byte("second"))
		done <- err
	}()
	// Then the power goes at that second write, after it took effect.
	<-f.Lost()
	f.Release()
	if err := <-done; !errors.Is(err, syscall.EIO) {
		t.Errorf("the second write: %v, want EIO", err)
	}
	fh.Close()
	t.Logf("cause: %s", f.Cause())
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Restore(faultfs.Loss{Data: faultfs.KeepUnsynced, Dirs: faultfs.KeepAllDirs}, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	if err := f.Mount(dir); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, b); string(got) != "first second" {
		t.Errorf("b: %q", got)
	}
}

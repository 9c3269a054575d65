package testutil

import (
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

// RawFsync measures how many fsyncs a second the disk under a directory
// makes: 4 KiB writes appended one after the other to a new file, each
// followed by fdatasync. That is what a write-ahead log does on a fresh
// store, with nothing else in the way. Benchmarks of durable writes run it
// in slices between slices of their own work, so that a disk whose speed
// changes during the run (a shared machine's) slows both alike, and report
// their rate against Rate.
type RawFsync struct {
	f       *os.File
	written int64
	fsyncs  int
	elapsed time.Duration
	each    []time.Duration // of every write and fsync, for Quantile
}

// rawFsyncFileMax is how large the file grows before it starts again.
const rawFsyncFileMax = 64 << 20

// NewRawFsync creates the file in dir; the test's cleanup removes it.
func NewRawFsync(tb testing.TB, dir string) *RawFsync {
	tb.Helper()
	f, err := os.CreateTemp(dir, "raw-fsync-*")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		f.Close()
		os.Remove(f.Name())
	})
	return &RawFsync{f: f}
}

// Run writes and fsyncs for about d (at least once).
func (r *RawFsync) Run(tb testing.TB, d time.Duration) {
	tb.Helper()
	if r.written >= rawFsyncFileMax { // a new file again, untimed
		if err := r.f.Truncate(0); err != nil {
			tb.Fatal(err)
		}
		if _, err := r.f.Seek(0, 0); err != nil {
			tb.Fatal(err)
		}
		if err := r.f.Sync(); err != nil {
			tb.Fatal(err)
		}
		r.written = 0
	}
	block := make([]byte, 4096)
	start := time.Now()
	for n := 0; n == 0 || time.Since(start) < d; n++ {
		one := time.Now()
		if _, err := r.f.Write(block); err != nil {
			tb.Fatal(err)
		}
		if err := syscall.Fdatasync(int(r.f.Fd())); err != nil {
			tb.Fatalf("fdatasync: %v", err)
		}
		r.each = append(r.each, time.Since(one))
		r.written += int64(len(block))
		r.fsyncs++
	}
	r.elapsed += time.Since(start)
}

// Rate is the fsyncs per second of every Run so far.
func (r *RawFsync) Rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.fsyncs) / r.elapsed.Seconds()
}

// Quantile is the time of one write and fsync that a fraction q of them
// took at most (0.99: the 99th percentile), zero before the first Run.
func (r *RawFsync) Quantile(q float64) time.Duration {
	if len(r.each) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(r.each))
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

// Duration is one fsync at Rate.
func (r *RawFsync) Duration() time.Duration {
	if r.fsyncs == 0 {
		return 0
	}
	return r.elapsed / time.Duration(r.fsyncs)
}

package readmodel

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkLoadSnapshot1M reports how long start-up takes to load a
// snapshot of 1,000,000 typical accounts (s/load), and the snapshot's
// size. Run it once:
//
//	go test -run '^$' -bench LoadSnapshot1M -benchtime 1x ./projections/readmodel/
func BenchmarkLoadSnapshot1M(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "readmodel.snap")
	src := New(nil)
	buildTypical(src, n, 10)
	if _, err := src.WriteSnapshot(path); err != nil {
		b.Fatal(err)
	}
	want := src.Stats()
	src = nil
	runtime.GC()
	for b.Loop() {
		m := New(nil)
		if _, err := m.LoadSnapshot(path); err != nil {
			b.Fatal(err)
		}
		if got := m.Stats(); got != want {
			b.Fatalf("loaded %+v, wrote %+v", got, want)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/load")
	if fi, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
	}
}

// BenchmarkWriteSnapshot1M reports how long writing a snapshot of
// 1,000,000 typical accounts takes.
func BenchmarkWriteSnapshot1M(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "readmodel.snap")
	m := New(nil)
	buildTypical(m, n, 10)
	for b.Loop() {
		if _, err := m.WriteSnapshot(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/write")
}

// BenchmarkSnapshotCapture1M reports how long WriteSnapshot holds the read
// lock for 1,000,000 typical accounts whose devices have all connected:
// the capture of record pointers and authorisation maps.
func BenchmarkSnapshotCapture1M(b *testing.B) {
	m := New(nil)
	buildTypical(m, 1_000_000, 10)
	for b.Loop() {
		if c := m.capture(); len(c.accounts) == 0 {
			b.Fatal("empty capture")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/capture")
}

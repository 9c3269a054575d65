package app

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// runWorkers runs op b.N times in total, spread over workers goroutines.
func runWorkers(b *testing.B, workers int, op func(worker int) error) {
	b.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(w); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

// BenchmarkExecuteCacheHit: 64 goroutines, each on its own existing
// aggregate (cached), each command appending one event. Appends of
// concurrent commands share fsyncs (group commit).
func BenchmarkExecuteCacheHit(b *testing.B) {
	benchmarkExecute(b, add{N: 1})
}

// BenchmarkExecuteCacheHitNoChange: as above, but the command changes
// nothing: the cached decision is verified with a tail read, nothing is
// appended.
func BenchmarkExecuteCacheHitNoChange(b *testing.B) {
	benchmarkExecute(b, add{N: 0})
}

func benchmarkExecute(b *testing.B, cmd any) {
	const workers = 64
	e := newEmbeddedEnv(b)
	x := e.executor(nil, Options{})
	streams := make([]string, workers)
	for i := range streams {
		streams[i] = fmt.Sprintf("counter-%d", i)
		mustExec(b, x, streams[i], create{Name: "bench"})
	}
	groups0, appends0 := e.stats()
	m := meta("bench")
	b.ReportAllocs()
	runWorkers(b, workers, func(w int) error {
		_, err := Execute(e.ctx, x, streams[w], counterDecider, cmd, m)
		return err
	})
	if groups, appends := e.stats(); groups > groups0 {
		b.ReportMetric(float64(appends-appends0)/float64(groups-groups0), "appends/fsync")
	}
}

// BenchmarkIDAllocatorNext: one fsynced append per block, amortised over
// the block; with a large block the in-memory path shows.
func BenchmarkIDAllocatorNext(b *testing.B) {
	for _, size := range []int{100, 10000} {
		b.Run(fmt.Sprintf("block=%d", size), func(b *testing.B) {
			e := newEmbeddedEnv(b)
			a := e.executor(nil, Options{IDBlockSize: size}).IDs("account")
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := a.Next(e.ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIDAllocatorNextParallel: GOMAXPROCS goroutines share one
// allocator (block size 100).
func BenchmarkIDAllocatorNextParallel(b *testing.B) {
	e := newEmbeddedEnv(b)
	a := e.executor(nil, Options{}).IDs("account")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.Next(e.ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkStreamLockUncontended: what every command pays to serialise on
// its stream when no other command holds it (nearly always). The context
// is a request's (cancellable), as in a handler.
func BenchmarkStreamLockUncontended(b *testing.B) {
	var locks streamLocks
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := make([]string, 1024)
	for i := range streams {
		streams[i] = fmt.Sprintf("account-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		h, err := locks.lock(ctx, streams[i%len(streams)])
		if err != nil {
			b.Fatal(err)
		}
		h.unlock()
	}
}

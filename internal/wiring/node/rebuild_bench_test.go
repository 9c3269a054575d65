package node_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tvsm/eventstore/embedded"
	"tvsm/internal/tools/demo"
	"tvsm/internal/wiring/node"
	"tvsm/projections"
)

// benchHistory is a demo history written once per test binary: 60 days,
// 2,000 accounts (about 140,000 events, most of them viewing reports).
var benchHistory struct {
	once sync.Once
	dir  string
	err  error
}

func rebuildBenchData(b *testing.B) string {
	b.Helper()
	benchHistory.once.Do(func() {
		dir, err := os.MkdirTemp("", "tvsm-rebuild-bench-")
		if err != nil {
			benchHistory.err = err
			return
		}
		store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			benchHistory.err = err
			return
		}
		_, err = demo.Run(context.Background(), demo.Options{DataDir: dir, Store: store, Days: 60, Accounts: 2000,
			AdminPassword: "bench-password", Logger: slog.New(slog.DiscardHandler)})
		benchHistory.dir, benchHistory.err = dir, errors.Join(err, store.Close())
	})
	if benchHistory.err != nil {
		b.Fatal(benchHistory.err)
	}
	return benchHistory.dir
}

// startBenchNode starts a node on the demo history without its snapshots
// and returns once both the read model and the statistics have caught up
// with the log: what a rebuild of both costs at start.
func startBenchNode(b *testing.B, dir string) (*node.Node, func()) {
	b.Helper()
	for _, name := range []string{"readmodel.snapshot", "stats-embedded.snapshot"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	n, err := node.Start(context.Background(), store, node.Options{DataDir: dir, Logger: log, AdminPassword: "bench-password",
		NodeName: "bench", StatsBatchInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.StatsRunner.Progress().Wait(ctx, n.Runner.Progress().Position()); err != nil {
		b.Fatal(err)
	}
	return n, func() {
		n.Close()
		store.Close()
	}
}

// BenchmarkRebuild measures rebuilds and checks of the read model and the
// statistics inside an idle node on a demo history, beside their
// reference: the start of a node on the same data without its snapshots,
// which replays both from the whole log (and opens the stores, starts the
// dispatcher). Run with -count to interleave them:
//
//	go test -run '^$' -bench BenchmarkRebuild -benchtime 1x -count 3 ./internal/wiring/node/
func BenchmarkRebuild(b *testing.B) {
	dir := rebuildBenchData(b)
	b.Run("start without snapshots", func(b *testing.B) {
		for b.Loop() {
			_, stop := startBenchNode(b, dir)
			b.StopTimer()
			stop()
			b.StartTimer()
		}
	})
	n, stop := startBenchNode(b, dir)
	defer stop()
	for _, c := range []struct {
		name, target string
		verify       bool
	}{
		{"rebuild readmodel", node.RebuildReadModel, false},
		{"verify readmodel", node.RebuildReadModel, true},
		{"rebuild stats", node.RebuildStats, false},
		{"verify stats", node.RebuildStats, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var st projections.RebuildStatus
			for b.Loop() {
				st = runJob(b, n, c.target, c.verify)
			}
			b.ReportMetric(float64(st.Applied), "events")
			b.ReportMetric(st.Rate(st.Finished), "events/s")
		})
	}
}

// runJob runs a job to its end; it must succeed and find no difference.
func runJob(b *testing.B, n *node.Node, target string, verify bool) projections.RebuildStatus {
	b.Helper()
	st, err := n.Rebuilds.Start(target, verify)
	if err != nil {
		b.Fatal(err)
	}
	for st.State == projections.RebuildRunning {
		time.Sleep(time.Millisecond)
		st, _ = n.Rebuilds.Status(st.ID)
	}
	if st.State != projections.RebuildDone || st.DifferenceCount != 0 {
		b.Fatalf("%s (verify %v): %+v", target, verify, st)
	}
	return st
}

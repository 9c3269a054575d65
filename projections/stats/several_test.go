package stats_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/internal/testkit/chtest"
	"tvsm/projections"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

// TestFiveNodesGiveWhatOneGives: every node of a cluster runs the
// statistics projector over the one log and writes into the one shared fact
// store. Five projectors, each taking the log in batches of its own size,
// running the close job at its own moments (one never: its days close by
// events, as on a node replaying the log), one of them restarted from its
// snapshot midway (so it writes part of the log twice), all interleaved,
// leave a store that answers every question as the store of a single
// projector does: nothing counted twice, every day closed once in effect.
// On ClickHouse (the store several nodes share) and on the embedded store
// (shared here within one process).
func TestFiveNodesGiveWhatOneGives(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(t *testing.T) stats.FactStore
	}{
		{"embedded", func(t *testing.T) stats.FactStore { return openFacts(t, t.TempDir()) }},
		{"clickhouse", openClickHouse},
	} {
		t.Run(backend.name, func(t *testing.T) {
			ctx := context.Background()
			steps := scenario()
			one := newEnv(t, stats.ProjectorOptions{})
			alone := backend.open(t)
			one.p = one.projector(alone)
			one.feed(steps, true)
			log := one.log

			shared := backend.open(t)
			paths := make([]string, 5)
			nodes := make([]*stats.Projector, len(paths))
			for k := range nodes {
				paths[k] = filepath.Join(t.TempDir(), "stats.snapshot")
				nodes[k] = newProjector(t, shared, paths[k])
			}
			// Node 2 writes a snapshot at step 5, then closes days and
			// applies events, and crashes after step 9.
			const restarted, snapshotAt, crashAt = 2, 5, 9
			next := 0 // log index of the step's first event
			for i, s := range steps {
				if s.events == nil {
					for k, p := range nodes[:4] { // node 4 runs no close job
						if err := p.CloseDue(ctx, ts(s.at).Add(time.Duration(k)*13*time.Second)); err != nil {
							t.Fatal(err)
						}
					}
					continue
				}
				events := log[next : next+len(s.events)]
				next += len(s.events)
				for j := range nodes {
					k := (i + j) % len(nodes) // another node first at every step
					apply(t, nodes[k], events, k+1, projections.Live)
				}
				switch i {
				case snapshotAt:
					if err := nodes[restarted].WriteSnapshot(ctx); err != nil {
						t.Fatal(err)
					}
				case crashAt:
					// The node crashed after writing facts its snapshot does
					// not hold; its successor takes the log again from there.
					nodes[restarted] = newProjector(t, shared, paths[restarted])
					from, err := nodes[restarted].Restore(ctx)
					if err != nil || from.IsZero() {
						t.Fatalf("restore: %v, %v", from, err)
					}
					apply(t, nodes[restarted], after(log[:next], from), 2, projections.Live)
				}
			}
			if next != len(log) {
				t.Fatalf("fed %d of %d events", next, len(log))
			}
			got, want := dump(t, shared, false), dump(t, alone, false)
			if want == "" {
				t.Fatal("the scenario wrote nothing")
			}
			checkText(t, "facts of five nodes against one", got, want)
		})
	}
}

func newProjector(t *testing.T, facts stats.FactStore, snapshot string) *stats.Projector {
	t.Helper()
	p, err := stats.NewProjector(facts, stats.ProjectorOptions{SnapshotPath: snapshot, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// after returns the events of log after pos.
func after(log []eventstore.RecordedEvent, pos eventstore.Position) []eventstore.RecordedEvent {
	for i, e := range log {
		if e.Position.After(pos) {
			return log[i:]
		}
	}
	return nil
}

var chDatabases atomic.Int64

// openClickHouse opens a fact store on a new database of the package's
// ClickHouse server.
func openClickHouse(t *testing.T) stats.FactStore {
	t.Helper()
	url := chtest.Shared(t).URL(fmt.Sprintf("several_%d_%d", os.Getpid(), chDatabases.Add(1)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := clickhouse.Open(ctx, url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

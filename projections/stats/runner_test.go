package stats_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	esembedded "tvsm/eventstore/embedded"
	"tvsm/projections"
	"tvsm/projections/stats"
)

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunnerOverTheEventStore runs the projector the way a node does: a
// real embedded event store, a runner, a snapshot, a restart.
func TestRunnerOverTheEventStore(t *testing.T) {
	ctx := context.Background()
	store, err := esembedded.Open(t.TempDir(), esembedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := newEnv(t, stats.ProjectorOptions{SnapshotPath: filepath.Join(t.TempDir(), "stats.snapshot")})

	// Appends the scenario's events, and some the projector must pass over
	// (another stream kind, an event type it does not read).
	var head eventstore.Position
	appendAll := func(steps []step) {
		for _, s := range steps {
			for _, ev := range s.events {
				rec := e.record(ts(s.at), ev)
				res, err := store.Append(ctx, rec.Stream, eventstore.Any, eventstore.EventData{ID: rec.ID, Type: rec.Type, Data: rec.Data, Metadata: rec.Metadata})
				if err != nil {
					t.Fatal(err)
				}
				head = res.Position
			}
		}
	}
	steps := scenario()
	steps = append(steps[:2:2], append([]step{{"2026-03-01 10:30:00", []domain.Event{
		domain.ProviderCreated{ProviderID: 3, Name: "other", Enabled: true},
		domain.DeviceDisconnected{DeviceID: 500, Account: 100, Provider: 1, Code: 1000},
	}}}, steps[2:]...)...)
	appendAll(steps[:5])

	run := func(p *stats.Projector) (stop func()) {
		from, err := p.Restore(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := projections.NewRunner(store, e.reg, p, projections.SnapshotCheckpoints{Position: from}, projections.RunnerOptions{})
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = r.Run(runCtx)
		}()
		return func() { cancel(); <-done }
	}
	stop := run(e.p)
	waitFor(t, "the projector to apply the log", func() bool { return !head.After(e.p.Position()) })
	if err := e.p.WriteSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	stop()

	appendAll(steps[5:]) // while the node is down
	restarted := e.projector(e.facts)
	stop = run(restarted)
	defer stop()
	waitFor(t, "the restarted projector to apply the log", func() bool { return !head.After(restarted.Position()) })
	if err := restarted.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Exactly what feeding the scenario directly gives.
	direct := newEnv(t, stats.ProjectorOptions{})
	direct.feed(scenario(), false)
	checkText(t, "facts", dump(t, e.facts, false), dump(t, direct.facts, false))
}

func TestSchedulerClosesDaysAndSnapshots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats.snapshot")
	e := newEnv(t, stats.ProjectorOptions{SnapshotPath: path})
	e.at("2026-03-01 10:00:00", tariffCreated(10, 1))
	ready := false
	s, err := stats.StartScheduler(e.p, stats.SchedulerOptions{
		CloseSpec: "@every 1h", // the test runs the job itself
		Ready:     func() bool { return ready },
		Clock:     func() time.Time { return ts("2026-03-03 12:00:00") },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Replayed viewing waits for FlushRows; the job writes it even before
	// the projector has caught up, but closes no day.
	rec := e.record(ts("2026-03-01 11:00:00"), watched(100, 500, 60, "2026-03-01 10:30:00"))
	if err := projections.ApplyRecorded(context.Background(), e.reg, e.p, []eventstore.RecordedEvent{rec}, projections.Replay); err != nil {
		t.Fatal(err)
	}
	s.CloseDue()
	if _, ok := e.p.ClosedThrough(); ok {
		t.Fatal("the job closed days before the projector caught up")
	}
	if ids, err := e.facts.ActiveAccounts(context.Background(), 1, day("2026-03-01")); err != nil || len(ids) != 1 {
		t.Fatalf("viewing not written by the job: %v, %v", ids, err)
	}
	ready = true
	s.CloseDue()
	if d, ok := e.p.ClosedThrough(); !ok || d != day("2026-03-02") {
		t.Fatalf("closed through %v, %v; want 2026-03-02", d, ok)
	}
	s.Stop()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no snapshot after Stop: %v", err)
	}
	if _, err := stats.StartScheduler(e.p, stats.SchedulerOptions{CloseSpec: "every day"}); err == nil {
		t.Error("a bad cron spec was accepted")
	}
}

// TestSchedulerRunsOnItsOwn checks the cron wiring: with a one-second
// schedule the job closes the due days without being called.
func TestSchedulerRunsOnItsOwn(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	e.at("2026-03-01 10:00:00", tariffCreated(10, 1))
	s, err := stats.StartScheduler(e.p, stats.SchedulerOptions{
		CloseSpec: "@every 1s",
		Clock:     func() time.Time { return ts("2026-03-02 12:00:00") },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	waitFor(t, "the close job", func() bool {
		d, ok := e.p.ClosedThrough()
		return ok && d == day("2026-03-01")
	})
}

package stats_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
	"tvsm/projections/stats"
)

// step is a moment of the scenario: events stamped at a time, or (events
// nil) the close job running at that time.
type step struct {
	at     string
	events []domain.Event
}

// scenario is ten days of two providers: subscriptions coming and going,
// accounts switched off and on, devices, viewing reported on time, late,
// and beyond the window, and quiet days closed by the job.
func scenario() []step {
	return []step{
		{"2026-03-01 09:00:00", []domain.Event{tariffCreated(10, 1), tariffCreated(11, 1), tariffCreated(20, 2)}},
		{"2026-03-01 10:00:00", []domain.Event{
			accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-03-01 00:00:00"), bound(100, 500, domain.DeviceSTB),
			accountCreated(101, 1, true), subscribed(101, 2, 11, "2026-02-01 00:00:00", "2026-03-04 12:00:00"),
			accountCreated(200, 2, true), subscribed(200, 3, 20, "2026-03-01 00:00:00"), bound(200, 600, domain.DeviceWeb),
		}},
		{"2026-03-01 21:00:00", []domain.Event{watched(100, 500, 1200, "2026-03-01 20:00:00")}},
		{"2026-03-02 00:10:00", []domain.Event{watched(101, 501, 300, "2026-03-01 23:55:00")}},
		{"2026-03-02 08:00:00", []domain.Event{enabled(101, false), bound(101, 501, domain.DeviceTablet)}},
		{"2026-03-02 18:00:00", []domain.Event{domain.ViewingReported{DeviceID: 600, Account: 200, Provider: 2, Class: domain.DeviceWeb,
			Sessions: []domain.ViewingSession{{Channel: 9, Mode: domain.ViewingDVR, Start: ts("2026-03-02 17:00:00"), Seconds: 900}}}}},
		{"2026-03-03 00:01:00", nil}, // the job closes 2 March
		{"2026-03-04 00:01:00", nil}, // and the quiet 3 March
		{"2026-03-04 09:00:00", []domain.Event{enabled(101, true), subscribed(100, 4, 11, "2026-02-20 00:00:00")}},
		{"2026-03-05 10:00:00", []domain.Event{watched(100, 500, 60, "2026-03-03 22:00:00", "2026-03-05 09:00:00")}},
		{"2026-03-07 10:00:00", []domain.Event{unbound(100, 500), domain.AccountDeleted{AccountID: 101}}},
		{"2026-03-09 10:00:00", []domain.Event{watched(100, 500, 60, "2026-03-04 10:00:00")}}, // beyond the window
		{"2026-03-10 10:00:00", []domain.Event{enabled(200, false)}},
	}
}

// feed records the scenario's events in e.log and applies each step in
// Live mode, running the close job at its steps when closeJob is set.
func (e *env) feed(steps []step, closeJob bool) {
	e.t.Helper()
	for _, s := range steps {
		if s.events == nil {
			if closeJob {
				e.closeDue(s.at)
			}
			continue
		}
		e.at(s.at, s.events...)
	}
}

// apply delivers events to p in batches of n.
func apply(t testing.TB, p *stats.Projector, events []eventstore.RecordedEvent, n int, mode projections.Mode) {
	t.Helper()
	for len(events) > 0 {
		k := min(n, len(events))
		if err := projections.ApplyRecorded(context.Background(), registry(), p, events[:k], mode); err != nil {
			t.Fatal(err)
		}
		events = events[k:]
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRedeliveredEventsChangeNothing(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	e.feed(scenario(), true)
	want := dump(t, e.facts, true)
	if want == "" {
		t.Fatal("the scenario wrote nothing")
	}
	apply(t, e.p, e.log, 5, projections.Live)
	apply(t, e.p, e.log, len(e.log), projections.Replay)
	apply(t, e.p, e.log[len(e.log)/2:], 3, projections.Live)
	checkText(t, "facts after redelivery", dump(t, e.facts, true), want)
}

func TestReplayGivesWhatLiveGave(t *testing.T) {
	live := newEnv(t, stats.ProjectorOptions{})
	live.feed(scenario(), true)

	for _, n := range []int{1, 4, 1000} {
		replay := newEnv(t, stats.ProjectorOptions{FlushRows: 7})
		apply(t, replay.p, live.log, n, projections.Replay)
		checkText(t, "replayed facts", dump(t, replay.facts, false), dump(t, live.facts, false))
	}
}

// TestCrashBetweenApplyAndSnapshot kills the projector after it applied
// (and wrote) events that its last snapshot does not hold: the restarted
// projector gets them again and must end with exactly the facts of a run
// without a crash.
func TestCrashBetweenApplyAndSnapshot(t *testing.T) {
	clean := newEnv(t, stats.ProjectorOptions{})
	clean.feed(scenario(), false)
	want := dump(t, clean.facts, true)
	log := clean.log

	for _, cut := range []int{1, 9, len(log) / 2, len(log) - 1} {
		path := filepath.Join(t.TempDir(), "stats.snapshot")
		e := newEnv(t, stats.ProjectorOptions{SnapshotPath: path})
		apply(t, e.p, log[:cut], 2, projections.Live)
		if err := e.p.WriteSnapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		apply(t, e.p, log[cut:len(log)-1], 2, projections.Live) // written, then the crash

		restarted := e.projector(e.facts)
		pos, err := restarted.Restore(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if pos != log[cut-1].Position {
			t.Fatalf("cut %d: restored at %v, want %v", cut, pos, log[cut-1].Position)
		}
		apply(t, restarted, log, 3, projections.Live) // at least once: from the start
		checkText(t, "facts after the crash", dump(t, e.facts, true), want)
	}
}

func TestRestoreWithAnotherFactStoreRecomputesEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats.snapshot")
	first := newEnv(t, stats.ProjectorOptions{SnapshotPath: path})
	first.feed(scenario(), false)
	if err := first.p.WriteSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}

	// A new, empty fact store (the operator switched backends, or emptied
	// it) beside the old snapshot.
	fresh := openFacts(t, t.TempDir())
	p := first.projector(fresh)
	pos, err := p.Restore(context.Background())
	if err != nil || pos != eventstore.Beginning {
		t.Fatalf("Restore = %v, %v; want the beginning of the log", pos, err)
	}
	apply(t, p, first.log, 100, projections.Live)
	checkText(t, "recomputed facts", dump(t, fresh, true), dump(t, first.facts, true))

	// The same store, but another window: the snapshot does not fit.
	other := first.opts
	other.Window = 5
	q, err := stats.NewProjector(first.facts, other)
	if err != nil {
		t.Fatal(err)
	}
	if pos, err := q.Restore(context.Background()); err != nil || pos != eventstore.Beginning {
		t.Fatalf("Restore with another window = %v, %v; want the beginning", pos, err)
	}
	// The fitting projector resumes after the snapshot.
	if pos, err := first.projector(first.facts).Restore(context.Background()); err != nil || pos != first.log[len(first.log)-1].Position {
		t.Fatalf("Restore = %v, %v; want %v", pos, err, first.log[len(first.log)-1].Position)
	}
}

func TestCloseDueClosesQuietDays(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{Grace: stats.DefaultGrace})
	e.closeDue("2026-03-01 12:00:00") // nothing applied yet: nothing to close
	e.at("2026-03-01 10:00:00", tariffCreated(10, 1), accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-03-01 00:00:00"))
	closed := func() string {
		d, ok := e.p.ClosedThrough()
		if !ok {
			return "none"
		}
		return d.String()
	}
	for _, c := range []struct{ now, want string }{
		{"2026-03-01 23:59:59", "none"},
		{"2026-03-02 00:00:30", "none"}, // within the grace
		{"2026-03-02 00:01:00", "2026-03-01"},
		{"2026-03-02 00:05:00", "2026-03-01"},
		{"2026-03-05 12:00:00", "2026-03-04"},
	} {
		e.closeDue(c.now)
		if got := closed(); got != c.want {
			t.Errorf("after the job at %s: closed through %s, want %s", c.now, got, c.want)
		}
	}
	// An event stamped before the open day counts for the open day.
	e.at("2026-03-04 23:59:59", enabled(100, false))
	e.at("2026-03-06 10:00:00", enabled(100, false))
	checkText(t, "rows", e.subRows("2026-03-01", "2026-03-06"), `
2026-03-01 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0
2026-03-02 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0
2026-03-03 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0
2026-03-04 p1 t10 enabled=1 devices=0 active=0 disabled=0 with_devices=0
2026-03-05 p1 t10 enabled=0 devices=0 active=0 disabled=1 with_devices=0`)
}

package stats_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
	"tvsm/projections/stats"
)

// replay applies the events of the log after after and up to through to
// p, in Replay mode, as projections.ReplayTo would.
func (e *env) replay(p *stats.Projector, after, through eventstore.Position) {
	e.t.Helper()
	var batch []eventstore.RecordedEvent
	for _, ev := range e.log {
		if ev.Position.After(after) && !ev.Position.After(through) {
			batch = append(batch, ev)
		}
	}
	if err := projections.ApplyRecorded(context.Background(), e.reg, p, batch, projections.Replay); err != nil {
		e.t.Fatal(err)
	}
}

// check compares the live statistics of e with a projector replayed to
// their position, and returns the differences.
func (e *env) check() (lines []string, total int) {
	e.t.Helper()
	ctx := context.Background()
	capture, err := e.p.Capture(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	fresh, err := e.p.Beside(openFacts(e.t, e.t.TempDir()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.replay(fresh, eventstore.Beginning, capture.At)
	lines, total, err = fresh.Differences(ctx, capture, 20)
	if err != nil {
		e.t.Fatal(err)
	}
	return lines, total
}

func history(e *env) {
	e.at("2026-03-01 09:00:00", tariffCreated(10, 1), accountCreated(100, 1, true), subscribed(100, 1, 10, "2026-02-01 00:00:00"),
		bound(100, 500, domain.DeviceSTB))
	e.at("2026-03-01 21:00:00", watched(100, 500, 300, "2026-03-01 20:00:00"))
	e.at("2026-03-02 10:00:00", accountCreated(101, 1, true), subscribed(101, 2, 10, "2026-03-02 00:00:00"), bound(101, 501, domain.DeviceTV))
	e.at("2026-03-03 08:00:00", watched(101, 501, 120, "2026-03-03 07:00:00", "2026-03-02 23:00:00"))
	e.closeDue("2026-03-04 01:00:00") // the clock closes 3 March: no event passed its midnight
}

// A check finds no difference between clean statistics and a replay, and
// finds a fact the log does not hold.
func TestCheckFindsWhatTheLogDoesNotHold(t *testing.T) {
	e := newEnv(t, stats.ProjectorOptions{})
	history(e)
	if lines, total := e.check(); total != 0 {
		t.Fatalf("clean statistics differ from a replay:\n%s", strings.Join(lines, "\n"))
	}
	bogus := stats.ViewingFact{Day: day("2026-03-02"), Provider: 1, Account: 100, Device: 500, Class: "stb", Channel: 7, Live: true, Seconds: 4242, Position: 1 << 40}
	if err := e.facts.WriteViewing(context.Background(), []stats.ViewingFact{bogus}); err != nil {
		t.Fatal(err)
	}
	lines, total := e.check()
	if total == 0 || !strings.Contains(strings.Join(lines, "\n"), "LiveSeconds:4542") {
		t.Fatalf("%d differences, want the injected viewing (300+4242 s):\n%s", total, strings.Join(lines, "\n"))
	}
}

// A rebuild takes over: the store holds the rebuilt facts (an injected
// fact is gone), the projector goes on from the rebuilt state, and its
// snapshot is of that state.
func TestTakeOver(t *testing.T) {
	ctx := context.Background()
	snapshot := filepath.Join(t.TempDir(), "stats.snapshot")
	e := newEnv(t, stats.ProjectorOptions{SnapshotPath: snapshot})
	history(e)
	if err := e.p.WriteSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	bogus := stats.ViewingFact{Day: day("2026-03-02"), Provider: 1, Account: 100, Device: 500, Class: "stb", Channel: 7, Live: true, Seconds: 4242, Position: 1 << 40}
	if err := e.facts.WriteViewing(ctx, []stats.ViewingFact{bogus}); err != nil {
		t.Fatal(err)
	}
	closed, _ := e.p.ClosedThrough()

	beside, err := e.facts.Beside(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := e.p.Beside(beside)
	if err != nil {
		t.Fatal(err)
	}
	half := e.log[len(e.log)/2].Position
	e.replay(fresh, eventstore.Beginning, half)
	err = e.p.TakeOver(ctx, fresh, func(through eventstore.Position) error {
		if _, err := os.Stat(snapshot); err != nil {
			t.Errorf("the snapshot is gone before the facts are replaced: %v", err)
		}
		e.replay(fresh, half, through)
		return nil
	}, func() error {
		if _, err := os.Stat(snapshot); !os.IsNotExist(err) {
			t.Errorf("the snapshot is still there when the facts are replaced: %v", err)
		}
		return e.facts.Replace(ctx, beside)
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := e.p.ClosedThrough(); !ok || d != closed {
		t.Fatalf("closed through %v after the take-over, %v before", d, closed)
	}
	if lines, total := e.check(); total != 0 {
		t.Fatalf("the statistics after the take-over differ from a replay:\n%s", strings.Join(lines, "\n"))
	}
	if strings.Contains(accountTotals(t, e.facts, "2026-03-01", "2026-03-05"), "4242") {
		t.Fatal("the injected fact survived the rebuild")
	}
	// The projector goes on from the rebuilt state, and its snapshot is
	// of it.
	e.at("2026-03-05 10:00:00", enabled(101, false))
	if lines, total := e.check(); total != 0 {
		t.Fatalf("after more events:\n%s", strings.Join(lines, "\n"))
	}
	restored := e.projector(e.facts)
	if _, err := os.Stat(snapshot); err != nil {
		t.Fatalf("no snapshot after the take-over: %v", err)
	}
	if pos, err := restored.Restore(ctx); err != nil || pos.IsZero() {
		t.Fatalf("restore the snapshot written after the take-over: %v %v", pos, err)
	}
}

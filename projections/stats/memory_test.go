package stats_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
	"tvsm/projections/stats"
)

// accountEvents returns n typical accounts of provider 1 (one subscription
// to one of 100 tariffs, one or two devices), stamped on 1 March, and a
// viewing report of each on 2 March.
func accountEvents(e *env, n int) (setup, viewing []eventstore.RecordedEvent) {
	at := ts("2026-03-01 10:00:00")
	for t := range int64(100) {
		setup = append(setup, e.record(at, tariffCreated(1000+t, 1)))
	}
	for i := range int64(n) {
		id := 1 + i
		setup = append(setup,
			e.record(at, accountCreated(id, 1, i%10 != 0)),
			e.record(at, subscribed(id, id, 1000+i%100, "2026-02-01 00:00:00")),
			e.record(at, bound(id, 2*id, domain.DeviceSTB)))
		if i%2 == 0 {
			setup = append(setup, e.record(at, bound(id, 2*id+1, domain.DevicePhone)))
		}
	}
	for i := range int64(n) {
		id := 1 + i
		viewing = append(viewing, e.record(ts("2026-03-02 20:00:00"), domain.ViewingReported{DeviceID: 2 * id, Account: id, Provider: 1, Class: domain.DeviceSTB,
			Sessions: []domain.ViewingSession{
				{Channel: 1 + i%200, Mode: domain.ViewingLive, Start: ts("2026-03-02 19:00:00"), Seconds: 1800},
				{Channel: 1 + (i+1)%200, Mode: domain.ViewingDVR, Start: ts("2026-03-02 19:30:00"), Seconds: 600},
			}}))
	}
	return setup, viewing
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryPerAccount holds the projector's memory to 400 bytes per
// typical account, the window's end states included (100,000 accounts:
// 40 MB at most).
func TestMemoryPerAccount(t *testing.T) {
	const n = 20_000
	e := newEnv(t, stats.ProjectorOptions{})
	setup, _ := accountEvents(e, n)
	e.rec.Log, e.log = nil, nil
	before := heap()
	apply(t, e.p, setup, 4096, projections.Replay)
	if err := e.p.CloseDue(context.Background(), ts("2026-03-06 00:00:00")); err != nil {
		t.Fatal(err)
	}
	after := heap()
	runtime.KeepAlive(e.p)
	runtime.KeepAlive(setup)
	per := float64(after-before) / n
	t.Logf("%.0f bytes per account", per)
	if per > 400 {
		t.Errorf("%.0f bytes per account, want at most 400", per)
	}
}

// BenchmarkViewingReplay measures the projector replaying viewing reports
// (two sessions each) into the embedded fact store; events/s is the figure.
func BenchmarkViewingReplay(b *testing.B) {
	const n = 20_000
	e := newEnv(b, stats.ProjectorOptions{})
	setup, viewing := accountEvents(e, n)
	apply(b, e.p, setup, 4096, projections.Replay)
	b.ResetTimer()
	events := 0
	for i := range b.N {
		// Fresh positions each round, so nothing is skipped as applied.
		batch := make([]eventstore.RecordedEvent, len(viewing))
		for j, ev := range viewing {
			ev.Position.Commit += uint64((i + 1) * 10 * n)
			ev.Position.Prepare = ev.Position.Commit
			batch[j] = ev
		}
		apply(b, e.p, batch, 4096, projections.Replay)
		events += len(batch)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkCloseDay100k measures closing one day of 100,000 accounts.
func BenchmarkCloseDay100k(b *testing.B) {
	e := newEnv(b, stats.ProjectorOptions{})
	setup, _ := accountEvents(e, 100_000)
	apply(b, e.p, setup, 4096, projections.Replay)
	now := ts("2026-03-02 00:01:00")
	b.ResetTimer()
	for range b.N {
		if err := e.p.CloseDue(context.Background(), now); err != nil {
			b.Fatal(err)
		}
		now = now.Add(24 * time.Hour)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/day")
}

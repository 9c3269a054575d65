package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"tvsm/internal/testkit/chtest"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
	"tvsm/projections/stats/statstest"
)

func viewingFact(d stats.Day, account, channel int64, live bool, seconds int64, pos uint64, idx int32) stats.ViewingFact {
	return stats.ViewingFact{Day: d, Provider: 1, Account: account, Device: account * 10, Class: "stb",
		Channel: channel, Live: live, Seconds: seconds, Position: pos, Index: idx}
}

func totals(t *testing.T, s stats.FactStore, r stats.Range) []stats.AccountChannelTotal {
	t.Helper()
	var out []stats.AccountChannelTotal
	if err := s.AccountChannelTotals(t.Context(), r, func(a stats.AccountChannelTotal) error {
		out = append(out, a)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClassSeenAcrossStores runs two stores on one database, as two nodes
// do: what one store skips as already written must not hide an earlier day
// written by the other.
func TestClassSeenAcrossStores(t *testing.T) {
	url := chtest.Shared(t).URL(freshDB())
	a, b := openURL(t, url), openURL(t, url)
	ctx := t.Context()
	d1, d2, d3 := statstest.D("2026-01-01"), statstest.D("2026-01-02"), statstest.D("2026-01-03")
	write := func(s stats.FactStore, d stats.Day) {
		t.Helper()
		if err := s.WriteClassSeen(ctx, []stats.DeviceClassSeen{{Provider: 1, Class: "tv", Day: d}}); err != nil {
			t.Fatal(err)
		}
	}
	write(a, d3)
	write(b, d2)
	write(a, d3) // skipped by a: changes nothing
	for _, s := range []stats.FactStore{a, b} {
		if got, _ := s.DeviceClassTotals(ctx, stats.Range{From: d1, To: d2}); len(got) != 1 {
			t.Fatalf("DeviceClassTotals to %v: %+v; want tv first seen on %v", d2, got, d2)
		}
	}
	write(a, d1) // earlier than a's own: sent
	if got, _ := b.DeviceClassTotals(ctx, stats.Range{From: d1, To: d1}); len(got) != 1 {
		t.Fatalf("DeviceClassTotals on %v: %+v; want tv", d1, got)
	}
}

// TestMergesChangeNothing reads before and after forcing every merge: FINAL
// must already give the merged answer.
func TestMergesChangeNothing(t *testing.T) {
	db := freshDB()
	s := openURL(t, chtest.Shared(t).URL(db))
	ctx := t.Context()
	d := statstest.D("2026-02-27")
	for v := range uint64(5) {
		row := stats.SubscriptionDay{Day: d, Provider: 1, Tariff: 1, Enabled: int64(v), Version: 10 - v}
		if err := s.WriteSubscriptionDays(ctx, []stats.SubscriptionDay{row}); err != nil {
			t.Fatal(err)
		}
		// Same account, channel and day: distinct sessions, both count.
		facts := []stats.ViewingFact{viewingFact(d, 7, 1, true, 60, 100, 0), viewingFact(d, 7, 1, true, 60, 101, 0)}
		if err := s.WriteViewing(ctx, facts); err != nil {
			t.Fatal(err)
		}
	}
	r := stats.Range{From: d, To: d}
	read := func() ([]stats.SubscriptionDay, []stats.AccountChannelTotal) {
		rows, err := stats.AllSubscriptionDays(ctx, s, r)
		if err != nil {
			t.Fatal(err)
		}
		return rows, totals(t, s, r)
	}
	subs, views := read()
	wantSubs := []stats.SubscriptionDay{{Day: d, Provider: 1, Tariff: 1, Enabled: 0, Version: 10}}
	wantViews := []stats.AccountChannelTotal{{Provider: 1, Account: 7, Channel: 1, LiveSeconds: 120}}
	if !slices.Equal(subs, wantSubs) || !slices.Equal(views, wantViews) {
		t.Fatalf("before merges: %+v %+v; want %+v %+v", subs, views, wantSubs, wantViews)
	}
	for _, table := range []string{"subscription_days", "viewing", "class_seen"} {
		if err := rawConn(t).Exec(ctx, fmt.Sprintf("OPTIMIZE TABLE %s.%s FINAL", db, table)); err != nil {
			t.Fatal(err)
		}
	}
	subs, views = read()
	if !slices.Equal(subs, wantSubs) || !slices.Equal(views, wantViews) {
		t.Fatalf("after merges: %+v %+v; want %+v %+v", subs, views, wantSubs, wantViews)
	}
}

// TestLargeWritesAreSplit writes more facts than one batch takes.
func TestLargeWritesAreSplit(t *testing.T) {
	defer clickhouse.SetMaxBatchRows(1000)()
	s := newStore(t)
	d := statstest.D("2026-03-31")
	var facts []stats.ViewingFact
	for i := range 3500 {
		facts = append(facts, viewingFact(d+stats.Day(i%2), int64(i), 1, i%3 == 0, 10, uint64(i), 0))
	}
	if err := s.WriteViewing(t.Context(), facts); err != nil {
		t.Fatal(err)
	}
	if got := totals(t, s, stats.Range{From: d, To: d + 1}); len(got) != 3500 {
		t.Fatalf("%d accounts back, want 3500", len(got))
	}
}

// TestEarlyStopsReleaseConnections stops many long streams after one row;
// each must give its connection back (the pool holds 10).
func TestEarlyStopsReleaseConnections(t *testing.T) {
	s := newStore(t)
	d := statstest.D("2026-04-30")
	var facts []stats.ViewingFact
	for i := range 20_000 {
		facts = append(facts, viewingFact(d, int64(i), int64(i%7), true, 10, uint64(i), 0))
	}
	if err := s.WriteViewing(t.Context(), facts); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	r := stats.Range{From: d, To: d}
	for range 30 {
		if err := s.AccountChannelTotals(t.Context(), r, func(stats.AccountChannelTotal) error { return stop }); !errors.Is(err, stop) {
			t.Fatalf("AccountChannelTotals: %v, want the callback's error", err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if got, err := s.ActiveAccounts(ctx, 1, d); err != nil || len(got) != 20_000 {
		t.Fatalf("ActiveAccounts after early stops: %d, %v; want 20000", len(got), err)
	}
}

// TestDaysRoundTrip writes days at the edges of months, years and the Date
// type and reads each back by an exact one-day range.
func TestDaysRoundTrip(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	var days []stats.Day
	for _, str := range []string{"1970-01-01", "1970-01-02", "1999-12-31", "2000-02-29", "2024-03-01", "2026-12-31", "2027-01-01", "2100-01-01", "2105-12-31"} {
		days = append(days, statstest.D(str))
	}
	var rows []stats.SubscriptionDay
	var facts []stats.ViewingFact
	for i, d := range days {
		rows = append(rows, stats.SubscriptionDay{Day: d, Provider: 1, Tariff: int64(i), Version: 1})
		facts = append(facts, viewingFact(d, int64(i), 1, true, 1, uint64(i), 0))
	}
	if err := s.WriteSubscriptionDays(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteViewing(ctx, facts); err != nil {
		t.Fatal(err)
	}
	for i, d := range days {
		got, err := stats.AllSubscriptionDays(ctx, s, stats.Range{From: d, To: d})
		if err != nil || len(got) != 1 || got[0] != rows[i] {
			t.Errorf("SubscriptionDays on %v: %+v, %v; want [%+v]", d, got, err, rows[i])
		}
		active, err := s.ActiveAccounts(ctx, 1, d)
		if err != nil || !slices.Equal(active, []int64{int64(i)}) {
			t.Errorf("ActiveAccounts on %v: %v, %v; want [%d]", d, active, err, i)
		}
	}
}

// TestDaysOutsideDateRefused checks that a day a Date column cannot hold is
// refused, not wrapped into another date.
func TestDaysOutsideDateRefused(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	for _, d := range []stats.Day{-1, statstest.D("2106-01-01")} {
		if err := s.WriteViewing(ctx, []stats.ViewingFact{viewingFact(d, 1, 1, true, 1, 1, 0)}); err == nil {
			t.Errorf("WriteViewing on day %v accepted", d)
		}
		if err := s.WriteSubscriptionDays(ctx, []stats.SubscriptionDay{{Day: d, Provider: 1}}); err == nil {
			t.Errorf("WriteSubscriptionDays on day %v accepted", d)
		}
		if err := s.WriteClassSeen(ctx, []stats.DeviceClassSeen{{Provider: 1, Class: "tv", Day: d}}); err == nil {
			t.Errorf("WriteClassSeen on day %v accepted", d)
		}
	}
	if got := totals(t, s, stats.Range{From: 0, To: statstest.D("2105-12-31")}); len(got) != 0 {
		t.Errorf("refused facts were stored: %+v", got)
	}
}

// TestLongRangesReadInWindows reads three years of one provider (read as
// several windows of days at once) and of every provider (one query):
// each gives exactly the rows written, in order; a callback stopping early
// stops the read and gives every connection back.
func TestLongRangesReadInWindows(t *testing.T) {
	s := newStore(t)
	first, last := statstest.D("2023-01-01"), statstest.D("2025-12-31")
	var want []stats.SubscriptionDay
	for p := int64(1); p <= 2; p++ {
		for d := first; d <= last; d++ {
			for tariff := int64(1); tariff <= 3; tariff++ {
				want = append(want, stats.SubscriptionDay{Day: d, Provider: p, Tariff: p*10 + tariff, Enabled: int64(d), Version: 1})
			}
		}
	}
	if err := s.WriteSubscriptionDays(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	one := len(want) / 2
	for _, c := range []struct {
		r    stats.Range
		want []stats.SubscriptionDay
	}{
		{stats.Range{From: first, To: last, Provider: 1}, want[:one]},
		{stats.Range{From: first, To: last, Provider: 2}, want[one:]},
		{stats.Range{From: first, To: last}, want},
		{stats.Range{From: first + 100, To: last - 100, Provider: 2}, want[one+300 : len(want)-300]},
	} {
		got, err := stats.AllSubscriptionDays(t.Context(), s, c.r)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%+v: %d rows, want %d (first %+v, want %+v)", c.r, len(got), len(c.want), got[:1], c.want[:1])
		}
	}
	stop := errors.New("stop")
	r := stats.Range{From: first, To: last, Provider: 1}
	for _, after := range []int{1, one / 3, one - 1} {
		for range 10 {
			n := 0
			err := s.SubscriptionDays(t.Context(), r, func(stats.SubscriptionDay) error {
				n++
				if n == after {
					return stop
				}
				return nil
			})
			if !errors.Is(err, stop) || n != after {
				t.Fatalf("stopping after %d rows: %v after %d rows", after, err, n)
			}
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if got, err := stats.AllSubscriptionDays(ctx, s, r); err != nil || len(got) != one {
		t.Fatalf("after early stops: %d rows, %v; want %d", len(got), err, one)
	}
}

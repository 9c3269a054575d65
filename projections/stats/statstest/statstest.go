// Package statstest is the conformance suite of stats.FactStore: one table
// of cases (writes, then queries with exact expected answers) that every
// backend runs, so the embedded store and ClickHouse give the same answers
// for the same facts.
//
//	func TestConformance(t *testing.T) {
//		statstest.Run(t, func(t *testing.T) stats.FactStore {
//			s := openFresh(t) // empty; registers its own t.Cleanup(s.Close)
//			return s
//		})
//	}
//
// The contract the cases pin down, beyond the comments of stats.FactStore:
//   - Subscription rows: the row with the highest Version of a key wins, in
//     one call or across calls; a lower Version never replaces a higher one.
//     Rows come back with the Version that won. Ties with different data
//     are not tested (the projector writes equal data at equal versions).
//   - Viewing facts: the key (Position, Index) determines every other field
//     (the projector derives them from the event), so a rewrite is always of
//     identical data and must not count twice.
//   - DeviceClassTotals returns one row per (provider, class) first seen on
//     or before r.To, zeros included when nothing was viewed in r; viewing
//     of a class not yet seen by r.To is left out. UniqueDevices counts the
//     distinct devices of the class with a fact in r.
//   - ActiveAccounts returns account ids in ascending order.
//   - Empty answers may be nil or empty slices.
package statstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"tvsm/projections/stats"
)

// Factory returns a fresh, empty store and registers its cleanup.
type Factory func(t *testing.T) stats.FactStore

// Run runs every case against stores made by open.
func Run(t *testing.T, open Factory) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			for i, w := range c.writes {
				if err := w(ctx, s); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			for _, q := range c.checks {
				q(t, ctx, s)
			}
		})
	}
	t.Run("StreamStopsOnError", func(t *testing.T) { testStreamStops(t, open(t)) })
	t.Run("ManyAccountsStreamInOrder", func(t *testing.T) { testManyAccounts(t, open(t)) })
	t.Run("ConcurrentWrites", func(t *testing.T) { testConcurrentWrites(t, open(t)) })
}

// D returns the day of a "YYYY-MM-DD" date; it panics on a bad date.
func D(s string) stats.Day {
	d, err := stats.ParseDay(s)
	if err != nil {
		panic(fmt.Sprintf("statstest: day %q: %v", s, err))
	}
	return d
}

type write func(ctx context.Context, s stats.FactStore) error

type check func(t *testing.T, ctx context.Context, s stats.FactStore)

type testCase struct {
	name   string
	writes []write
	checks []check
}

func subs(rows ...stats.SubscriptionDay) write {
	return func(ctx context.Context, s stats.FactStore) error { return s.WriteSubscriptionDays(ctx, rows) }
}

func viewing(facts ...stats.ViewingFact) write {
	return func(ctx context.Context, s stats.FactStore) error { return s.WriteViewing(ctx, facts) }
}

func seen(rows ...stats.DeviceClassSeen) write {
	return func(ctx context.Context, s stats.FactStore) error { return s.WriteClassSeen(ctx, rows) }
}

func wantSubs(r stats.Range, want ...stats.SubscriptionDay) check {
	return func(t *testing.T, ctx context.Context, s stats.FactStore) {
		t.Helper()
		got, err := stats.AllSubscriptionDays(ctx, s, r)
		if err != nil {
			t.Fatalf("SubscriptionDays(%+v): %v", r, err)
		}
		if !equalRows(got, want) {
			t.Errorf("SubscriptionDays(%+v):\n got %+v\nwant %+v", r, got, want)
		}
	}
}

func wantClasses(r stats.Range, want ...stats.DeviceClassTotal) check {
	return func(t *testing.T, ctx context.Context, s stats.FactStore) {
		t.Helper()
		got, err := s.DeviceClassTotals(ctx, r)
		if err != nil {
			t.Fatalf("DeviceClassTotals(%+v): %v", r, err)
		}
		if !equalRows(got, want) {
			t.Errorf("DeviceClassTotals(%+v):\n got %+v\nwant %+v", r, got, want)
		}
	}
}

func wantAccounts(r stats.Range, want ...stats.AccountChannelTotal) check {
	return func(t *testing.T, ctx context.Context, s stats.FactStore) {
		t.Helper()
		got, err := collect(ctx, s, r)
		if err != nil {
			t.Fatalf("AccountChannelTotals(%+v): %v", r, err)
		}
		if !equalRows(got, want) {
			t.Errorf("AccountChannelTotals(%+v):\n got %+v\nwant %+v", r, got, want)
		}
	}
}

func wantActive(provider int64, d stats.Day, want ...int64) check {
	return func(t *testing.T, ctx context.Context, s stats.FactStore) {
		t.Helper()
		got, err := s.ActiveAccounts(ctx, provider, d)
		if err != nil {
			t.Fatalf("ActiveAccounts(%d, %v): %v", provider, d, err)
		}
		if !equalRows(got, want) {
			t.Errorf("ActiveAccounts(%d, %v) = %v, want %v", provider, d, got, want)
		}
	}
}

func collect(ctx context.Context, s stats.FactStore, r stats.Range) ([]stats.AccountChannelTotal, error) {
	var out []stats.AccountChannelTotal
	err := s.AccountChannelTotals(ctx, r, func(row stats.AccountChannelTotal) error {
		out = append(out, row)
		return nil
	})
	return out, err
}

// equalRows compares slices, nil and empty being equal.
func equalRows[T comparable](got, want []T) bool {
	return len(got) == len(want) && (len(got) == 0 || slices.Equal(got, want))
}

// testStreamStops checks that an error from fn ends AccountChannelTotals
// and is returned.
func testStreamStops(t *testing.T, s stats.FactStore) {
	ctx := context.Background()
	if err := s.WriteViewing(ctx, []stats.ViewingFact{
		fact(D("2026-03-01"), 1, 100, 1000, "stb", 7, true, 60, 1, 0),
		fact(D("2026-03-01"), 1, 101, 1001, "stb", 7, true, 60, 2, 0),
		fact(D("2026-03-01"), 1, 102, 1002, "stb", 7, true, 60, 3, 0),
	}); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("enough")
	calls := 0
	err := s.AccountChannelTotals(ctx, stats.Range{From: D("2026-03-01"), To: D("2026-03-01")}, func(stats.AccountChannelTotal) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Errorf("AccountChannelTotals returned %v, want the callback's error", err)
	}
	if calls != 1 {
		t.Errorf("callback called %d times after returning an error, want 1", calls)
	}
}

// testManyAccounts writes thousands of facts in shuffled order and batches
// and checks the stream comes out ordered, complete and summed.
func testManyAccounts(t *testing.T, s stats.FactStore) {
	ctx := context.Background()
	const accounts, channels, days = 1500, 3, 4
	from := D("2026-05-01")
	var facts []stats.ViewingFact
	var want []stats.AccountChannelTotal
	pos := uint64(1)
	for _, p := range []int64{1, 2} {
		for a := int64(1); a <= accounts; a++ {
			for ch := int64(1); ch <= channels; ch++ {
				acct := p*100_000 + a
				for d := range stats.Day(days) {
					facts = append(facts, fact(from+d, p, acct, acct*10, "tv", ch, d%2 == 0, 60*ch, pos, int32(d)))
				}
				pos++
				want = append(want, stats.AccountChannelTotal{Provider: p, Account: acct, Channel: ch, LiveSeconds: 2 * 60 * ch, DVRSeconds: 2 * 60 * ch})
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(facts), func(i, j int) { facts[i], facts[j] = facts[j], facts[i] })
	for chunk := range slices.Chunk(facts, 5000) {
		if err := s.WriteViewing(ctx, chunk); err != nil {
			t.Fatal(err)
		}
	}
	wantAccounts(stats.Range{From: from, To: from + days - 1}, want...)(t, ctx, s)
	half := len(want) / 2
	wantAccounts(stats.Range{From: from, To: from + days - 1, Provider: 2}, want[half:]...)(t, ctx, s)
}

// testConcurrentWrites writes from several goroutines at once (the store
// must be safe for concurrent use) and checks nothing was lost.
func testConcurrentWrites(t *testing.T, s stats.FactStore) {
	ctx := context.Background()
	d := D("2026-06-01")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range int64(4) {
		wg.Go(func() {
			for i := range int64(25) {
				acct := 1000 + g*100 + i
				if err := s.WriteViewing(ctx, []stats.ViewingFact{fact(d, 1, acct, acct, "web", 1, true, 30, uint64(acct), 0)}); err != nil {
					errs <- err
					return
				}
				if err := s.WriteSubscriptionDays(ctx, []stats.SubscriptionDay{{Day: d, Provider: 1, Tariff: acct, Enabled: i, Version: 1}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, err := stats.AllSubscriptionDays(ctx, s, stats.Range{From: d, To: d})
	if err != nil || len(rows) != 100 {
		t.Fatalf("SubscriptionDays after concurrent writes: %d rows, %v; want 100", len(rows), err)
	}
	active, err := s.ActiveAccounts(ctx, 1, d)
	if err != nil || len(active) != 100 || !slices.IsSorted(active) {
		t.Fatalf("ActiveAccounts after concurrent writes: %d accounts (sorted %v), %v; want 100 sorted", len(active), slices.IsSorted(active), err)
	}
}

func fact(d stats.Day, provider, account, device int64, class string, channel int64, live bool, seconds int64, pos uint64, idx int32) stats.ViewingFact {
	return stats.ViewingFact{Day: d, Provider: provider, Account: account, Device: device, Class: class,
		Channel: channel, Live: live, Seconds: seconds, Position: pos, Index: idx}
}

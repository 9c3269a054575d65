package statstest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"tvsm/projections/stats"
)

// ReplacerFactory returns a fresh, empty store and registers its cleanup.
type ReplacerFactory func(t *testing.T) stats.Replacer

// RunReplacer checks a stats.Replacer: Replace puts the facts written
// beside in place of the store's own, readers and writers of the store
// meanwhile wait rather than fail, and Discard drops what was written
// beside.
func RunReplacer(t *testing.T, open ReplacerFactory) {
	ctx := context.Background()
	d := D("2026-03-01")
	old := stats.ViewingFact{Day: d, Provider: 1, Account: 10, Device: 1, Class: "tv", Channel: 7, Live: true, Seconds: 60, Position: 1}
	fresh := stats.ViewingFact{Day: d, Provider: 1, Account: 20, Device: 2, Class: "tv", Channel: 7, Live: true, Seconds: 90, Position: 2}
	accounts := func(t *testing.T, s stats.FactStore) []int64 {
		t.Helper()
		ids, err := s.ActiveAccounts(ctx, 1, d)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	// filled returns a store holding old and a store beside it holding
	// fresh.
	filled := func(t *testing.T) (stats.Replacer, stats.FactStore) {
		t.Helper()
		s := open(t)
		if err := s.WriteViewing(ctx, []stats.ViewingFact{old}); err != nil {
			t.Fatal(err)
		}
		beside, err := s.Beside(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ids := accounts(t, beside); len(ids) != 0 {
			t.Fatalf("a store beside starts with %v", ids)
		}
		if err := beside.WriteViewing(ctx, []stats.ViewingFact{fresh}); err != nil {
			t.Fatal(err)
		}
		return s, beside
	}

	t.Run("Replace", func(t *testing.T) {
		s, beside := filled(t)
		row := stats.SubscriptionDay{Day: d, Provider: 1, Tariff: 3, Enabled: 1, Version: 5}
		if err := beside.WriteSubscriptionDays(ctx, []stats.SubscriptionDay{row}); err != nil {
			t.Fatal(err)
		}
		// Readers and writers while the facts are replaced wait for it.
		var failed atomic.Value
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := int32(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.ActiveAccounts(ctx, 1, d); err != nil {
					failed.Store(err)
					return
				}
				later := stats.ViewingFact{Day: d, Provider: 1, Account: 20, Device: 2, Class: "tv", Channel: 7, Seconds: 1, Position: 3, Index: i}
				if err := s.WriteViewing(ctx, []stats.ViewingFact{later}); err != nil {
					failed.Store(err)
					return
				}
			}
		})
		err := s.Replace(ctx, beside)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if err, _ := failed.Load().(error); err != nil {
			t.Fatalf("an operation during Replace: %v", err)
		}
		if ids := accounts(t, s); len(ids) != 1 || ids[0] != 20 {
			t.Fatalf("after Replace the store has the viewing of %v, want [20] (the facts written beside)", ids)
		}
		if rows, err := stats.AllSubscriptionDays(ctx, s, stats.Range{From: d, To: d}); err != nil || len(rows) != 1 || rows[0] != row {
			t.Fatalf("rows after Replace: %+v %v", rows, err)
		}
		if _, err := beside.ActiveAccounts(ctx, 1, d); !errors.Is(err, stats.ErrUnavailable) {
			t.Fatalf("the store beside after Replace: %v, want closed", err)
		}
		// Again: a second rebuild finds nothing of the first beside.
		beside, err = s.Beside(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ids := accounts(t, beside); len(ids) != 0 {
			t.Fatalf("a second store beside starts with %v", ids)
		}
		if err := s.Discard(beside); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Discard", func(t *testing.T) {
		s, beside := filled(t)
		if err := s.Discard(beside); err != nil {
			t.Fatal(err)
		}
		if ids := accounts(t, s); len(ids) != 1 || ids[0] != 10 {
			t.Fatalf("after Discard the store has the viewing of %v, want its own [10]", ids)
		}
		beside, err := s.Beside(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Discard(beside)
		if ids := accounts(t, beside); len(ids) != 0 {
			t.Fatalf("a store beside after Discard starts with %v", ids)
		}
	})
}

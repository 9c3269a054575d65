package embedded_test

import (
	"context"
	"errors"
	"testing"

	"tvsm/projections/stats"
	"tvsm/projections/stats/embedded"
	"tvsm/projections/stats/statstest"
)

func open(t *testing.T, dir string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	statstest.Run(t, func(t *testing.T) stats.FactStore { return open(t, t.TempDir()) })
}

// TestReopen checks that facts survive closing and reopening the directory.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := statstest.D("2026-03-01")
	s := open(t, dir)
	row := stats.SubscriptionDay{Day: d, Provider: 1, Tariff: 2, Enabled: 3, Version: 4}
	if err := s.WriteSubscriptionDays(ctx, []stats.SubscriptionDay{row}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteViewing(ctx, []stats.ViewingFact{{Day: d, Provider: 1, Account: 5, Device: 6, Class: "tv", Channel: 7, Live: true, Seconds: 60, Position: 8}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := stats.AllSubscriptionDays(ctx, s, stats.Range{From: d, To: d}); !errors.Is(err, stats.ErrUnavailable) {
		t.Errorf("query after Close: %v, want ErrUnavailable", err)
	}

	s = open(t, dir)
	rows, err := stats.AllSubscriptionDays(ctx, s, stats.Range{From: d, To: d})
	if err != nil || len(rows) != 1 || rows[0] != row {
		t.Errorf("after reopening: %+v, %v; want [%+v]", rows, err, row)
	}
	active, err := s.ActiveAccounts(ctx, 1, d)
	if err != nil || len(active) != 1 || active[0] != 5 {
		t.Errorf("ActiveAccounts after reopening: %v, %v; want [5]", active, err)
	}
}

func TestReplacer(t *testing.T) {
	statstest.RunReplacer(t, func(t *testing.T) stats.Replacer { return open(t, t.TempDir()+"/stats") })
}

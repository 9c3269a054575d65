package clickhouse_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"tvsm/internal/testkit/chtest"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
	"tvsm/projections/stats/statstest"
)

// calls runs every FactStore method once, naming it.
var calls = []struct {
	name string
	call func(context.Context, stats.FactStore) error
}{
	{"WriteSubscriptionDays", func(ctx context.Context, s stats.FactStore) error {
		return s.WriteSubscriptionDays(ctx, []stats.SubscriptionDay{{Day: day0, Provider: 1, Tariff: 1, Version: 1}})
	}},
	{"WriteViewing", func(ctx context.Context, s stats.FactStore) error {
		return s.WriteViewing(ctx, []stats.ViewingFact{{Day: day0, Provider: 1, Account: 1, Class: "tv", Seconds: 1, Position: 1}})
	}},
	{"WriteClassSeen", func(ctx context.Context, s stats.FactStore) error {
		// A new class each time: the store skips classes it already wrote.
		classSeq++
		return s.WriteClassSeen(ctx, []stats.DeviceClassSeen{{Provider: classSeq, Class: "tv", Day: day0}})
	}},
	{"SubscriptionDays", func(ctx context.Context, s stats.FactStore) error {
		_, err := stats.AllSubscriptionDays(ctx, s, stats.Range{From: day0, To: day0})
		return err
	}},
	{"DeviceClassTotals", func(ctx context.Context, s stats.FactStore) error {
		_, err := s.DeviceClassTotals(ctx, stats.Range{From: day0, To: day0})
		return err
	}},
	{"AccountChannelTotals", func(ctx context.Context, s stats.FactStore) error {
		return s.AccountChannelTotals(ctx, stats.Range{From: day0, To: day0}, func(stats.AccountChannelTotal) error { return nil })
	}},
	{"ActiveAccounts", func(ctx context.Context, s stats.FactStore) error {
		_, err := s.ActiveAccounts(ctx, 1, day0)
		return err
	}},
}

var (
	day0     = statstest.D("2026-07-01")
	classSeq int64
)

// TestServerStopAndRestart stops the server under an open store: every
// method fails with ErrUnavailable, and works again once the server is back,
// on the same store, with the data written before.
func TestServerStopAndRestart(t *testing.T) {
	srv := chtest.StartOwn(t)
	s := openURL(t, srv.URL("restart"))
	ctx := t.Context()
	for _, c := range calls {
		if err := c.call(ctx, s); err != nil {
			t.Fatalf("%s before the stop: %v", c.name, err)
		}
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if err := c.call(ctx, s); !errors.Is(err, stats.ErrUnavailable) {
			t.Errorf("%s with the server stopped: %v, want ErrUnavailable", c.name, err)
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if err := c.call(ctx, s); err != nil {
			t.Errorf("%s after the restart: %v", c.name, err)
		}
	}
	active, err := s.ActiveAccounts(ctx, 1, day0)
	if err != nil || len(active) != 1 || active[0] != 1 {
		t.Errorf("ActiveAccounts after the restart: %v, %v; want [1]", active, err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	s, err := clickhouse.Open(t.Context(), "clickhouse://"+addr+"/tvsm?dial_timeout=1s")
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded with no server")
	}
	if !errors.Is(err, stats.ErrUnavailable) {
		t.Fatalf("Open with no server: %v, want ErrUnavailable", err)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s := newStore(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, c := range calls {
		if err := c.call(t.Context(), s); !errors.Is(err, stats.ErrUnavailable) {
			t.Errorf("%s after Close: %v, want ErrUnavailable", c.name, err)
		}
	}
}

func TestCanceledContextIsNotUnavailable(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, c := range calls {
		err := c.call(ctx, s)
		if !errors.Is(err, context.Canceled) || errors.Is(err, stats.ErrUnavailable) {
			t.Errorf("%s with a canceled context: %v, want context.Canceled only", c.name, err)
		}
	}
}

package query_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app/query"
	"tvsm/projections"
	"tvsm/projections/readmodel"
	"tvsm/projections/stats"
	"tvsm/projections/stats/embedded"
	"tvsm/projections/stats/statstest"
)

// callLog is a SubscriptionWriter noting its calls, failing at failAt.
type callLog struct {
	calls  []string
	failAt int
}

var errWriter = errors.New("client went away")

func (l *callLog) note(s string) error {
	l.calls = append(l.calls, s)
	if len(l.calls) == l.failAt {
		return errWriter
	}
	return nil
}

func (l *callLog) BeginProvider(p int64) error { return l.note(fmt.Sprint("begin ", p)) }
func (l *callLog) Day(d stats.Day) error       { return l.note(fmt.Sprint("day ", d)) }
func (l *callLog) EndProvider() error          { return l.note("end") }
func (l *callLog) Tariff(r *stats.SubscriptionDay, name string) error {
	return l.note(fmt.Sprintf("tariff %d %q enabled=%d", r.Tariff, name, r.Enabled))
}

// subscriptionService has providers 1–4 (2 and 4 with rows on two days)
// and rows of provider 5, since deleted.
func subscriptionService(t *testing.T) *query.Statistics {
	t.Helper()
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	model := readmodel.New(reg)
	rec := statstest.NewRecorder(reg)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var batch []eventstore.RecordedEvent
	for _, ev := range []domain.Event{
		domain.ProviderCreated{ProviderID: 1, Name: "One", Enabled: true},
		domain.ProviderCreated{ProviderID: 2, Name: "Two", Enabled: true},
		domain.ProviderCreated{ProviderID: 3, Name: "Three", Enabled: true},
		domain.ProviderCreated{ProviderID: 4, Name: "Four", Enabled: true},
		domain.TariffCreated{TariffID: 20, Provider: 2, Name: `Two "basic"`, Enabled: true, Channels: []int64{}},
		domain.TariffCreated{TariffID: 40, Provider: 4, Name: "Four", Enabled: true, Channels: []int64{}},
	} {
		batch = append(batch, rec.Record(at, ev))
	}
	if err := projections.ApplyRecorded(context.Background(), reg, model, batch, projections.Live); err != nil {
		t.Fatal(err)
	}
	facts, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { facts.Close() })
	d := statstest.D("2026-03-01")
	rows := []stats.SubscriptionDay{
		{Day: d, Provider: 2, Tariff: 20, Enabled: 1, Version: 1}, {Day: d, Provider: 2, Tariff: 21, Enabled: 2, Version: 1},
		{Day: d + 1, Provider: 2, Tariff: 20, Enabled: 3, Version: 1},
		{Day: d, Provider: 4, Tariff: 40, Enabled: 4, Version: 1}, {Day: d + 1, Provider: 4, Tariff: 40, Enabled: 5, Version: 1},
		{Day: d, Provider: 5, Tariff: 50, Enabled: 6, Version: 1},
	}
	if err := facts.WriteSubscriptionDays(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	return query.NewStatistics(facts, query.ReadModelCatalog{Model: model}, query.Yesterday{Clock: func() time.Time { return at.AddDate(0, 0, 3) }})
}

func TestSubscriptionsStreamEveryProviderInTurn(t *testing.T) {
	svc := subscriptionService(t)
	d := statstest.D("2026-03-01")
	var got callLog
	if err := svc.Subscriptions(context.Background(), query.StatsQuery{From: d, To: d + 1}, &got); err != nil {
		t.Fatal(err)
	}
	// Tariff 21 is not in the catalog: it is listed with an empty name.
	want := fmt.Sprintf(`begin 1|end|begin 2|day %v|tariff 20 "Two \"basic\"" enabled=1|tariff 21 "" enabled=2|day %v|tariff 20 "Two \"basic\"" enabled=3|end|`+
		`begin 3|end|begin 4|day %v|tariff 40 "Four" enabled=4|day %v|tariff 40 "Four" enabled=5|end`, d, d+1, d, d+1)
	if s := strings.Join(got.calls, "|"); s != want {
		t.Errorf("calls\n%s\nwant\n%s", s, want)
	}

	// One provider; a range of days without rows; nothing closed yet.
	for _, c := range []struct {
		q    query.StatsQuery
		want string
	}{
		{query.StatsQuery{From: d, To: d, Provider: 4}, fmt.Sprintf(`begin 4|day %v|tariff 40 "Four" enabled=4|end`, d)},
		{query.StatsQuery{From: d + 10, To: d + 20}, "begin 1|end|begin 2|end|begin 3|end|begin 4|end"},
		{query.StatsQuery{From: d + 2, To: d + 2, Provider: 3}, "begin 3|end"},
	} {
		var got callLog
		if err := svc.Subscriptions(context.Background(), c.q, &got); err != nil {
			t.Fatal(err)
		}
		if s := strings.Join(got.calls, "|"); s != c.want {
			t.Errorf("%+v: calls %s, want %s", c.q, s, c.want)
		}
	}
}

func TestSubscriptionsStopAtTheWritersError(t *testing.T) {
	svc := subscriptionService(t)
	d := statstest.D("2026-03-01")
	for failAt := 1; failAt <= 15; failAt++ {
		got := callLog{failAt: failAt}
		if err := svc.Subscriptions(context.Background(), query.StatsQuery{From: d, To: d + 1}, &got); !errors.Is(err, errWriter) {
			t.Fatalf("writer failing at call %d: error %v", failAt, err)
		}
		if len(got.calls) != failAt {
			t.Fatalf("writer failing at call %d was called %d times", failAt, len(got.calls))
		}
	}
}

func TestYesterdayIsClosed(t *testing.T) {
	now := time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)
	y := query.Yesterday{Location: time.FixedZone("UTC+3", 3*3600), Clock: func() time.Time { return now }}
	want, err := stats.ParseDay("2026-03-01")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := y.ClosedThrough(); !ok || d != want {
		t.Errorf("at 01:00 on 2 March (UTC+3): closed through %v, %v; want 2026-03-01", d, ok)
	}
}

package stats_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
	"tvsm/projections/stats"
	"tvsm/projections/stats/embedded"
	"tvsm/projections/stats/statstest"
)

func registry() *domain.Registry {
	r := domain.NewRegistry()
	domain.RegisterEvents(r)
	return r
}

// ts parses "2006-01-02 15:04:05" (or "2006-01-02") in UTC.
func ts(s string) time.Time {
	layout := time.DateTime
	if len(s) == len(time.DateOnly) {
		layout = time.DateOnly
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		panic(err)
	}
	return t
}

func day(s string) stats.Day {
	d, err := stats.ParseDay(s)
	if err != nil {
		panic(err)
	}
	return d
}

// env is a projector over a real embedded fact store in a temporary
// directory, fed recorded events built here (what the store would deliver).
type env struct {
	t     testing.TB
	reg   *domain.Registry
	facts *embedded.Store
	p     *stats.Projector
	opts  stats.ProjectorOptions
	rec   *statstest.Recorder
	log   []eventstore.RecordedEvent // every event recorded, in log order
}

func newEnv(t testing.TB, opts stats.ProjectorOptions) *env {
	t.Helper()
	e := &env{t: t, reg: registry()}
	e.rec = statstest.NewRecorder(e.reg)
	e.opts = opts
	if e.opts.Logger == nil {
		e.opts.Logger = slog.New(slog.DiscardHandler)
	}
	e.facts = openFacts(t, t.TempDir())
	e.p = e.projector(e.facts)
	return e
}

func openFacts(t testing.TB, dir string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (e *env) projector(facts stats.FactStore) *stats.Projector {
	e.t.Helper()
	p, err := stats.NewProjector(facts, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// record returns ev as the store would deliver it, stamped at at.
func (e *env) record(at time.Time, ev domain.Event) eventstore.RecordedEvent {
	rec := e.rec.Record(at, ev)
	e.log = e.rec.Log
	return rec
}

// at records events stamped at when ("2006-01-02 15:04:05") and applies
// them in Live mode.
func (e *env) at(when string, events ...domain.Event) {
	e.t.Helper()
	var batch []eventstore.RecordedEvent
	for _, ev := range events {
		batch = append(batch, e.record(ts(when), ev))
	}
	if err := projections.ApplyRecorded(context.Background(), e.reg, e.p, batch, projections.Live); err != nil {
		e.t.Fatal(err)
	}
}

// closeDue runs the close job at now.
func (e *env) closeDue(now string) {
	e.t.Helper()
	if err := e.p.CloseDue(context.Background(), ts(now)); err != nil {
		e.t.Fatal(err)
	}
}

// subRows renders the subscription rows of provider over [from, to], one
// line per row: "2026-03-01 t10 enabled=1 devices=2 active=0 disabled=0 with_devices=1".
func (e *env) subRows(from, to string) string {
	e.t.Helper()
	return renderRows(e.t, e.facts, stats.Range{From: day(from), To: day(to)})
}

func renderRows(t testing.TB, facts stats.FactStore, r stats.Range) string {
	t.Helper()
	rows, err := stats.AllSubscriptionDays(context.Background(), facts, r)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%v p%d t%d enabled=%d devices=%d active=%d disabled=%d with_devices=%d\n",
			r.Day, r.Provider, r.Tariff, r.Enabled, r.EnabledDevices, r.Active, r.Disabled, r.EnabledWithDevices)
	}
	return b.String()
}

// dump renders every fact of the store over a wide range: subscription
// rows with their versions, device totals per day and account totals.
func dump(t testing.TB, facts stats.FactStore, versions bool) string {
	t.Helper()
	subs, err := statstest.Dump(context.Background(), facts, stats.Range{From: day("2020-01-01"), To: day("2030-12-31")}, versions)
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

func checkText(t testing.TB, what, got, want string) {
	t.Helper()
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("%s:\n got:\n%s\nwant:\n%s", what, got, want)
	}
}

// Events of the tests.

func tariffCreated(id, provider int64) domain.Event {
	return domain.TariffCreated{TariffID: id, Provider: provider, Name: fmt.Sprintf("tariff %d", id), Enabled: true, Channels: []int64{}}
}

func accountCreated(id, provider int64, enabled bool) domain.Event {
	return domain.AccountCreated{AccountID: id, Provider: provider, Login: fmt.Sprintf("u%d", id),
		PinMD5: "0123456789abcdef0123456789abcdef", Fullname: "Test", Enabled: enabled}
}

func subscribed(account, id, tariff int64, start string, stop ...string) domain.Event {
	e := domain.SubscriptionAdded{AccountID: account, SubscriptionID: id, Tariff: tariff, Start: ts(start)}
	if len(stop) > 0 {
		t := ts(stop[0])
		e.Stop = &t
	}
	return e
}

func stopped(account, id int64, stop string) domain.Event {
	return domain.SubscriptionChanged{AccountID: account, SubscriptionID: id, Stop: domain.Some(ts(stop))}
}

func enabled(account int64, on bool) domain.Event {
	return domain.AccountUpdated{AccountID: account, Enabled: domain.Some(on)}
}

func bound(account, device int64, class domain.DeviceClass) domain.Event {
	return domain.DeviceBound{AccountID: account, DeviceID: device, UniqueID: fmt.Sprintf("dev-%d", device), Class: class}
}

func unbound(account, device int64) domain.Event {
	return domain.DeviceUnbound{AccountID: account, DeviceID: device, UniqueID: fmt.Sprintf("dev-%d", device)}
}

// watched is a report by device of account (provider 1, an stb) of one
// session per start, each on channel 7, live, for seconds.
func watched(account, device int64, seconds int64, starts ...string) domain.Event {
	e := domain.ViewingReported{DeviceID: device, Account: account, Provider: 1, Class: domain.DeviceSTB}
	for _, s := range starts {
		e.Sessions = append(e.Sessions, domain.ViewingSession{Channel: 7, Mode: domain.ViewingLive, Start: ts(s), Seconds: seconds})
	}
	return e
}

func accountTotals(t testing.TB, facts stats.FactStore, from, to string) string {
	t.Helper()
	var b strings.Builder
	err := facts.AccountChannelTotals(context.Background(), stats.Range{From: day(from), To: day(to)}, func(r stats.AccountChannelTotal) error {
		fmt.Fprintf(&b, "%+v\n", r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func checkClasses(t testing.TB, facts stats.FactStore, r stats.Range, want string) {
	t.Helper()
	got, err := facts.DeviceClassTotals(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	checkText(t, fmt.Sprintf("device classes %v..%v", r.From, r.To), fmt.Sprintf("%+v", got), want)
}

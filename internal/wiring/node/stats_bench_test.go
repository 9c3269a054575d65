package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/internal/testkit/chtest"
	"tvsm/internal/testkit/nodetest"
	"tvsm/projections"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
)

// The end-to-end statistics data set (docs/benchmarks.md), as
// events in an embedded log: one provider, 100 tariffs, 200 channels and
// 100,000 accounts (each with a subscription and a device) created on
// 2023-01-01; every following day 100 accounts are disabled or enabled
// again, through 2025-12-31; each of the last 30 days every device
// reports 4 viewing sessions on its account's 12 favourite channels; one
// event on 2026-01-01 closes the last day.
const (
	e2eTariffs     = 100
	e2eChannels    = 200
	e2eAccounts    = 100_000
	e2eToggles     = 100
	e2eViewingDays = 30
	e2eSessions    = 4
	e2eFavourites  = 12
	e2eAppenders   = 256
	// e2eLogVersion names the data set in a kept log directory
	// (TVSM_BENCH_LOG_DIR): change it when the data set changes.
	e2eLogVersion = "stats-e2e-v1"
)

var (
	e2eFirst        = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	e2eLast         = time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC)
	e2eViewingFirst = e2eLast.AddDate(0, 0, 1-e2eViewingDays)
	// e2eNow is the node's clock: the log's last day is closed by then.
	e2eNow = e2eLast.Add(36 * time.Hour)
)

func TestMain(m *testing.M) {
	code := chtest.Main(m)
	if e2eLog.cleanup != nil {
		e2eLog.cleanup()
	}
	if benchHistory.dir != "" {
		os.RemoveAll(benchHistory.dir)
	}
	os.Exit(code)
}

// e2eLog is the process's one copy of the data set's log.
var e2eLog struct {
	once    sync.Once
	store   *embedded.Store
	dir     string // removed at the end unless kept
	info    e2eLogInfo
	err     error
	cleanup func()
}

type e2eLogInfo struct {
	Events, Viewing int
	FirstViewing    uint64 // log position of the first viewing report
}

// e2eStore returns the data set's log, building it on first use. With
// TVSM_BENCH_LOG_DIR set it is built there once and reused by later runs.
func e2eStore(b *testing.B) (*embedded.Store, e2eLogInfo) {
	b.Helper()
	e2eLog.once.Do(func() {
		e2eLog.store, e2eLog.info, e2eLog.err = openE2ELog(b)
	})
	if e2eLog.err != nil {
		b.Fatal(e2eLog.err)
	}
	return e2eLog.store, e2eLog.info
}

func openE2ELog(b *testing.B) (*embedded.Store, e2eLogInfo, error) {
	dir, keep := os.Getenv("TVSM_BENCH_LOG_DIR"), true
	if dir == "" {
		tmp, err := os.MkdirTemp("", "tvsm-stats-e2e-")
		if err != nil {
			return nil, e2eLogInfo{}, err
		}
		dir, keep = tmp, false
	}
	dir = filepath.Join(dir, e2eLogVersion)
	var clock e2eClock
	store, err := embedded.Open(dir, embedded.Options{Clock: clock.now})
	if err != nil {
		return nil, e2eLogInfo{}, err
	}
	e2eLog.cleanup = func() {
		store.Close()
		if !keep {
			os.RemoveAll(filepath.Dir(dir))
		}
	}
	marker := filepath.Join(dir, "complete")
	if raw, err := os.ReadFile(marker); err == nil {
		var info e2eLogInfo
		if _, err := fmt.Sscan(string(raw), &info.Events, &info.Viewing, &info.FirstViewing); err == nil {
			return store, info, nil
		}
	}
	start := time.Now()
	info, err := buildE2ELog(context.Background(), store, &clock)
	if err != nil {
		return nil, info, err
	}
	b.Logf("built the statistics log (%d events, %d viewing reports) in %s", info.Events, info.Viewing, time.Since(start).Round(time.Second))
	return store, info, os.WriteFile(marker, fmt.Appendf(nil, "%d %d %d\n", info.Events, info.Viewing, info.FirstViewing), 0o644)
}

// e2eClock is the log's recording clock: the data set's days, not now.
type e2eClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *e2eClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.at }
func (c *e2eClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.at = t }

// e2eAppend is one append of the data set: events of one stream.
type e2eAppend struct {
	stream string
	events []domain.Event
}

// e2eWriter appends the data set's events, every append of a moment
// concurrently (group commit) and moments in order.
type e2eWriter struct {
	store *embedded.Store
	clock *e2eClock
	reg   *domain.Registry
	info  e2eLogInfo
}

func (w *e2eWriter) at(ctx context.Context, when time.Time, appends []e2eAppend) (first uint64, err error) {
	w.clock.set(when)
	md, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: when, Actor: domain.SystemActor(), RequestID: "bench"})
	if err != nil {
		return 0, err
	}
	work := make(chan e2eAppend)
	errs := make(chan error, e2eAppenders)
	var mu sync.Mutex
	first = ^uint64(0)
	var wg sync.WaitGroup
	for range e2eAppenders {
		wg.Go(func() {
			for a := range work {
				pos, err := w.append(ctx, a, md)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				first = min(first, pos)
				mu.Unlock()
			}
		})
	}
	for _, a := range appends {
		work <- a
		w.info.Events += len(a.events)
	}
	close(work)
	wg.Wait()
	close(errs)
	return first, <-errs
}

func (w *e2eWriter) append(ctx context.Context, a e2eAppend, md []byte) (uint64, error) {
	data := make([]eventstore.EventData, len(a.events))
	for i, ev := range a.events {
		typ, payload, err := w.reg.Encode(ev)
		if err != nil {
			return 0, err
		}
		data[i] = eventstore.EventData{ID: eventstore.NewEventID(), Type: typ, Data: payload, Metadata: md}
	}
	res, err := w.store.Append(ctx, a.stream, eventstore.Any, data...)
	if err != nil {
		return 0, fmt.Errorf("append to %s: %w", a.stream, err)
	}
	return res.Position.Commit - uint64(len(data)) + 1, nil
}

func buildE2ELog(ctx context.Context, store *embedded.Store, clock *e2eClock) (e2eLogInfo, error) {
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	w := &e2eWriter{store: store, clock: clock, reg: reg}
	if _, err := w.at(ctx, e2eFirst.Add(6*time.Hour), e2eCatalog()); err != nil {
		return w.info, err
	}
	if _, err := w.at(ctx, e2eFirst.Add(7*time.Hour), e2eAccountAppends()); err != nil {
		return w.info, err
	}
	enabled := make([]bool, e2eAccounts+1)
	for i := range enabled {
		enabled[i] = true
	}
	day := 0
	for d := e2eFirst.AddDate(0, 0, 1); !d.After(e2eLast.AddDate(0, 0, 1)); d = d.AddDate(0, 0, 1) {
		day++
		toggles := e2eToggles
		if d.After(e2eLast) {
			toggles = 1 // the event that closes the last day
		}
		if _, err := w.at(ctx, d.Add(12*time.Hour), e2eToggleAppends(day, toggles, enabled)); err != nil {
			return w.info, err
		}
		if d.Before(e2eViewingFirst) || d.After(e2eLast) {
			continue
		}
		first, err := w.at(ctx, d.Add(23*time.Hour), e2eViewingAppends(d))
		if err != nil {
			return w.info, err
		}
		if w.info.FirstViewing == 0 {
			w.info.FirstViewing = first
		}
		w.info.Viewing += e2eAccounts
	}
	return w.info, nil
}

func e2eCatalog() []e2eAppend {
	out := []e2eAppend{{domain.ProviderStream(1), []domain.Event{domain.ProviderCreated{ProviderID: 1, Name: "Provider", Enabled: true}}}}
	for c := int64(1); c <= e2eChannels; c++ {
		out = append(out, e2eAppend{domain.ChannelStream(c), []domain.Event{
			domain.ChannelCreated{ChannelID: c, Name: "Channel " + strconv.FormatInt(c, 10), Number: int(c), Categories: []int64{}}}})
	}
	for t := int64(1); t <= e2eTariffs; t++ {
		channels := []int64{}
		for c := t; c <= e2eChannels; c += 10 {
			channels = append(channels, c)
		}
		out = append(out, e2eAppend{domain.TariffStream(t), []domain.Event{
			domain.TariffCreated{TariffID: t, Provider: 1, Name: "Tariff " + strconv.FormatInt(t, 10), Enabled: true, Channels: channels}}})
	}
	return out
}

var e2eClasses = []domain.DeviceClass{domain.DeviceSTB, domain.DeviceTV, domain.DevicePhone, domain.DeviceTablet, domain.DeviceWeb}

func e2eAccountAppends() []e2eAppend {
	out := make([]e2eAppend, 0, e2eAccounts)
	for a := int64(1); a <= e2eAccounts; a++ {
		contract := "C-" + strconv.FormatInt(a, 10)
		out = append(out, e2eAppend{domain.AccountStream(a), []domain.Event{
			domain.AccountCreated{AccountID: a, Provider: 1, Login: "user" + strconv.FormatInt(a, 10), PinMD5: "0123456789abcdef0123456789abcdef",
				Fullname: "Subscriber", Enabled: true, ContractInfo: &contract},
			domain.SubscriptionAdded{AccountID: a, SubscriptionID: a, Tariff: 1 + a%e2eTariffs, Start: e2eFirst},
			domain.DeviceBound{AccountID: a, DeviceID: a, UniqueID: "u" + strconv.FormatInt(a, 10), Class: e2eClasses[a%int64(len(e2eClasses))]},
		}})
	}
	return out
}

// e2eToggleAppends disables or enables again n accounts on the day-th day.
func e2eToggleAppends(day, n int, enabled []bool) []e2eAppend {
	out := make([]e2eAppend, 0, n)
	for k := range n {
		a := int64((day*e2eToggles+k)*7919%e2eAccounts + 1)
		enabled[a] = !enabled[a]
		out = append(out, e2eAppend{domain.AccountStream(a), []domain.Event{domain.AccountUpdated{AccountID: a, Enabled: domain.Some(enabled[a])}}})
	}
	return out
}

// e2eViewingAppends is day d's reports: one per device, 4 sessions each.
func e2eViewingAppends(d time.Time) []e2eAppend {
	rng := rand.New(rand.NewPCG(uint64(d.Unix()), 5))
	out := make([]e2eAppend, 0, e2eAccounts)
	for a := int64(1); a <= e2eAccounts; a++ {
		sessions := make([]domain.ViewingSession, e2eSessions)
		for i := range sessions {
			mode := domain.ViewingLive
			if rng.IntN(5) == 0 {
				mode = domain.ViewingDVR
			}
			sessions[i] = domain.ViewingSession{Channel: 1 + (a*7+rng.Int64N(e2eFavourites)*13)%e2eChannels, Mode: mode,
				Start: d.Add(time.Duration(8+2*i) * time.Hour), Seconds: 60 + rng.Int64N(3600)}
		}
		out = append(out, e2eAppend{domain.DeviceStream(a), []domain.Event{domain.ViewingReported{
			DeviceID: a, Account: a, Provider: 1, Class: e2eClasses[a%int64(len(e2eClasses))], Sessions: sessions}}})
	}
	return out
}

// e2eFacts opens a fresh database db on the shared ClickHouse server.
func e2eFacts(b testing.TB, db string) (*clickhouse.Store, driver.Conn) {
	b.Helper()
	target := chtest.Shared(b)
	opts, err := ch.ParseDSN(target.URL("default"))
	if err != nil {
		b.Fatal(err)
	}
	conn, err := ch.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	ctx := context.Background()
	if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
		b.Fatal(err)
	}
	facts, err := clickhouse.Open(ctx, target.URL(db))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { facts.Close() })
	return facts, conn
}

// e2eWantViewingFacts is how many viewing facts the data set projects to.
const e2eWantViewingFacts = e2eViewingDays * e2eAccounts * e2eSessions

func countViewing(b *testing.B, conn driver.Conn, db string) uint64 {
	b.Helper()
	var n uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM "+db+".viewing FINAL").Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkStatsProjectorClickHouse replays the data set's log through the
// statistics projector into a fresh ClickHouse database, as a node does on
// its first start with --stats clickhouse://: reading and decoding the
// log, closing 1,096 days and writing every fact. viewing-events/s is the
// rate over the viewing reports (the last 3,000,000 events), events/s over
// the whole log.
func BenchmarkStatsProjectorClickHouse(b *testing.B) {
	store, info := e2eStore(b)
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	var total, viewing time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		db := fmt.Sprintf("e2e_projector_%d", i)
		facts, conn := e2eFacts(b, db)
		proj, err := stats.NewProjector(facts, stats.ProjectorOptions{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		all, view := projectAll(b, store, reg, proj, info.FirstViewing)
		b.StopTimer()
		total += all
		viewing += view
		if n := countViewing(b, conn, db); n != e2eWantViewingFacts {
			b.Fatalf("%d viewing facts in ClickHouse, want %d", n, e2eWantViewingFacts)
		}
		if err := conn.Exec(context.Background(), "DROP DATABASE "+db); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(info.Events*b.N)/total.Seconds(), "events/s")
	b.ReportMetric(float64(info.Viewing*b.N)/viewing.Seconds(), "viewing-events/s")
}

// projectAll runs proj over the whole log until it has caught up and
// flushed, and returns the time it took in all and from the first viewing
// report on.
func projectAll(b *testing.B, store eventstore.Store, reg *domain.Registry, proj *stats.Projector, firstViewing uint64) (all, viewing time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	caughtUp := make(chan struct{})
	runner := projections.NewRunner(store, reg, proj, projections.SnapshotCheckpoints{Position: eventstore.Beginning},
		projections.RunnerOptions{OnCaughtUp: func() { close(caughtUp) }, Logger: slog.New(slog.DiscardHandler)})
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- runner.Run(ctx) }()
	var viewingFrom time.Time
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for wait := true; wait; {
		select {
		case <-caughtUp:
			wait = false
		case err := <-done:
			b.Fatalf("runner stopped: %v", err)
		case <-tick.C:
			if viewingFrom.IsZero() && proj.Position().Commit >= firstViewing {
				viewingFrom = time.Now()
			}
		}
	}
	if err := proj.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	end := time.Now()
	cancel()
	<-done
	if viewingFrom.IsZero() {
		b.Fatal("the projector never reached the viewing reports")
	}
	return end.Sub(start), end.Sub(viewingFrom)
}

// BenchmarkStatsAPIClickHouse starts a node on the data set's log with
// ClickHouse as its statistics store, waits until it has projected the
// log, checks that the API and the bare ClickHouse queries give the same
// numbers, and then times each endpoint beside its bare query: the
// subscription statistics over the whole three years, the account
// statistics over the last 30 days.
func BenchmarkStatsAPIClickHouse(b *testing.B) {
	store, info := e2eStore(b)
	const db = "e2e_node"
	facts, conn := e2eFacts(b, db)
	start := time.Now()
	env := nodetest.StartWith(b, nodetest.Options{Store: store, Stats: facts, StatsName: "clickhouse", Clock: func() time.Time { return e2eNow }})
	waitProjected(b, env, conn, db)
	b.Logf("node started and projected %d events into ClickHouse in %s", info.Events, time.Since(start).Round(time.Millisecond))

	subs := statsRange{from: e2eFirst, to: e2eLast}
	month := statsRange{from: e2eViewingFirst, to: e2eLast}
	checkSubscriptionAnswer(b, env, conn, db, subs)
	checkAccountAnswer(b, env, conn, db, month)
	b.Run("subscription-3y/api", func(b *testing.B) { benchAPI(b, env, "/api/stats/subscription"+subs.query()) })
	b.Run("subscription-3y/bare", func(b *testing.B) { benchBareSQL(b, conn, subscriptionBareSQL(db, subs)) })
	b.Run("account-30d/api", func(b *testing.B) { benchAPI(b, env, "/api/stats/account"+month.query()) })
	b.Run("account-30d/bare", func(b *testing.B) { benchBareSQL(b, conn, accountBareSQL(db, month)) })
}

package readmodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/memory"
	"tvsm/internal/app"
	"tvsm/projections"
)

// decoded returns recs as a runner hands them to m.
func decoded(m *Model, recs []eventstore.RecordedEvent) iter.Seq[*projections.Event] {
	return projections.DecoderFor(m.reg, m).Decode(recs)
}

// testTimeout bounds every wait of these tests.
const testTimeout = 20 * time.Second

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// testRegistry returns a registry of the domain's and the application
// layer's events, as the composition root builds it.
func testRegistry() *domain.Registry {
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	app.RegisterEvents(reg)
	return reg
}

// env is a real (in-memory) store with the application layer's executor on
// top, for appending events the way the service does.
type env struct {
	t     *testing.T
	store *memory.Store
	reg   *domain.Registry
	x     *app.Executor
	tick  atomic.Int64
}

// base is the pinned time of the first command; each command is a second
// later than the one before.
var base = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *env {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	e := &env{t: t, store: store, reg: testRegistry()}
	var err error
	e.x, err = app.New(store, e.reg, app.Options{Clock: func() time.Time {
		return base.Add(time.Duration(e.tick.Add(1)) * time.Second)
	}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) meta() app.RequestMeta {
	return app.RequestMeta{Actor: domain.AdminActor("root"), RequestID: fmt.Sprintf("req-%d", e.tick.Load())}
}

func execute[S, C any](e *env, stream string, d domain.Decider[S, C], cmd C) S {
	e.t.Helper()
	res, err := app.Execute(context.Background(), e.x, stream, d, cmd, e.meta())
	if err != nil {
		e.t.Fatalf("execute %T on %s: %v", cmd, stream, err)
	}
	return res.State
}

func (e *env) provider(c domain.ProviderCommand) domain.Provider {
	e.t.Helper()
	return execute(e, c.Stream(), domain.ProviderDecider(), c)
}

func (e *env) tariff(c domain.TariffCommand) domain.Tariff {
	e.t.Helper()
	return execute(e, c.Stream(), domain.TariffDecider(), c)
}

func (e *env) channel(c domain.ChannelCommand) domain.Channel {
	e.t.Helper()
	return execute(e, c.Stream(), domain.ChannelDecider(), c)
}

func (e *env) category(c domain.CategoryCommand) domain.Category {
	e.t.Helper()
	return execute(e, c.Stream(), domain.CategoryDecider(), c)
}

func (e *env) admin(c domain.AdminCommand) domain.Admin {
	e.t.Helper()
	return execute(e, c.Stream(), domain.AdminDecider(), c)
}

func (e *env) account(c domain.AccountCommand) domain.Account {
	e.t.Helper()
	return execute(e, c.Stream(), domain.AccountDecider(), c)
}

// newAccount creates an account the way the service does: id from the id
// allocator (stream ids-account), login reserved (stream login-...), then
// the account. Neither bookkeeping stream may reach the read model.
func (e *env) newAccount(provider int64, login, fullname string, opts ...func(*domain.CreateAccount)) int64 {
	e.t.Helper()
	ctx := context.Background()
	id, err := e.x.NextID(ctx, "account")
	if err != nil {
		e.t.Fatal(err)
	}
	owner := domain.AccountStream(id)
	if err := e.x.Reserve(ctx, e.x.LoginStream(provider, login), owner, e.meta(), nil); err != nil {
		e.t.Fatal(err)
	}
	c := domain.CreateAccount{ID: id, Provider: provider, Login: login, Fullname: fullname, PinMD5: "0123456789abcdef0123456789ABCDEF"}
	for _, o := range opts {
		o(&c)
	}
	e.account(c)
	return id
}

// appendEvent appends e to stream as a node outside the aggregates does
// (command sends, device sessions), and returns its log position.
func (e *env) appendEvent(stream string, ev domain.Event) eventstore.Position {
	e.t.Helper()
	typ, data, err := e.reg.Encode(ev)
	if err != nil {
		e.t.Fatal(err)
	}
	at := base.Add(time.Duration(e.tick.Add(1)) * time.Second)
	md, err := domain.EncodeMetadata(domain.Envelope{Event: ev, OccurredAt: at, Actor: domain.SystemActor(), RequestID: "append"})
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.store.Append(context.Background(), stream, eventstore.Any,
		eventstore.EventData{ID: eventstore.NewEventID(), Type: typ, Data: data, Metadata: md})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Position
}

// issueUpdate appends a send of an `update` command (and, when also is
// given, that command too) to recipients ids.
func (e *env) issueUpdate(sendID int64, recipients domain.Recipients, ids []int64, kinds ...domain.CommandKind) eventstore.Position {
	e.t.Helper()
	if len(kinds) == 0 {
		kinds = []domain.CommandKind{domain.CommandUpdate}
	}
	ev := domain.CommandsIssued{SendID: sendID, Recipients: recipients, IDs: ids, IssuedAt: base}
	for _, k := range kinds {
		ev.Commands = append(ev.Commands, domain.IssuedCommand{Kind: k, Object: []byte(`{"command":"` + string(k) + `"}`)})
	}
	return e.appendEvent(domain.CommandStream(sendID), ev)
}

func (e *env) nextID(kind string) int64 {
	e.t.Helper()
	id, err := e.x.NextID(context.Background(), kind)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *env) head() eventstore.Position {
	e.t.Helper()
	p, err := e.store.Head(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// runner is a projections.Runner feeding a model in the background.
type runner struct {
	*projections.Runner
	m    *Model
	e    *env
	stop func()
}

// run starts a runner feeding m after position from.
func (e *env) run(m *Model, from eventstore.Position) *runner {
	e.t.Helper()
	r := projections.NewRunner(e.store, m.reg, m, projections.SnapshotCheckpoints{Position: from},
		projections.RunnerOptions{Logger: quietLog, BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	rr := &runner{Runner: r, m: m, e: e}
	rr.stop = func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			e.t.Errorf("runner: %v", err)
		}
	}
	e.t.Cleanup(func() {
		if ctx.Err() == nil {
			rr.stop()
		}
	})
	return rr
}

// sync waits until the runner has applied everything in the store.
func (r *runner) sync() {
	r.e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.Progress().Wait(ctx, r.e.head()); err != nil {
		r.e.t.Fatalf("read model did not catch up: %v (stats %+v)", err, r.Stats())
	}
}

// readAll returns every event of the store's log that the model's filter
// selects, in order.
func (e *env) readAll(m *Model) []eventstore.RecordedEvent {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	sub, err := e.store.SubscribeAll(ctx, eventstore.Beginning, m.Filter())
	if err != nil {
		e.t.Fatal(err)
	}
	defer sub.Close()
	var out []eventstore.RecordedEvent
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, b.Events...)
		if b.CaughtUp {
			return out
		}
	}
}

// feed builds recorded events without a store, for applying directly:
// fast enough to build a million accounts.
type feed struct {
	reg  *domain.Registry
	pos  uint64
	revs map[string]uint64
}

func newFeed() *feed { return &feed{reg: testRegistry(), revs: make(map[string]uint64)} }

// next returns the stream revision and log position of the next event of
// stream.
func (f *feed) next(stream string) (uint64, eventstore.Position) {
	rev, ok := f.revs[stream]
	if ok {
		rev++
	}
	f.revs[stream] = rev
	f.pos++
	return rev, eventstore.Position{Commit: f.pos, Prepare: f.pos}
}

// record returns e as the store would deliver it, appended to stream at at.
func (f *feed) record(stream string, e domain.Event, at time.Time) eventstore.RecordedEvent {
	typ, data, err := f.reg.Encode(e)
	if err != nil {
		panic(err)
	}
	md, err := domain.EncodeMetadata(domain.Envelope{Event: e, OccurredAt: at, Actor: domain.SystemActor(), RequestID: "feed"})
	if err != nil {
		panic(err)
	}
	rev, pos := f.next(stream)
	return eventstore.RecordedEvent{
		ID: eventstore.NewEventID(), Stream: stream, Revision: rev, Position: pos,
		Type: typ, Data: data, Metadata: md, Created: at,
	}
}

// typicalAccount returns the events of a typical account (spec'd in the
// memory budget): login ~12 characters, fullname ~25, contract_info ~20,
// one open subscription and one or two devices.
func typicalAccount(id, provider int64) []domain.Event {
	contract := fmt.Sprintf("contract %08d/26", id)
	region := id%50 + 1
	return []domain.Event{
		domain.AccountCreated{
			AccountID: id, Provider: provider, Login: fmt.Sprintf("user%08d", id),
			PinMD5: "0123456789abcdef0123456789abcdef", Fullname: fmt.Sprintf("Ivan Petrovich Sidorov %03d", id%1000),
			Enabled: id%10 != 0, ContractInfo: &contract, RegionTag: &region,
		},
		domain.SubscriptionAdded{AccountID: id, SubscriptionID: id, Tariff: provider*100 + id%3, Start: base.Add(time.Duration(id) * time.Second)},
		typicalDevice(id, 2*id, domain.DeviceSTB, "MAG-524w3"),
		typicalDevice(id, 2*id+1, domain.DevicePhone, "Pixel 8"),
	}
}

// typicalDevice is a device bound with every field a TVIP provider sets.
func typicalDevice(account, id int64, class domain.DeviceClass, model string) domain.DeviceBound {
	mac := fmt.Sprintf("00:1a:79:%02x:%02x:%02x", byte(id>>16), byte(id>>8), byte(id))
	rcf := fmt.Sprintf("crm-%d", id)
	comment := "living room"
	udpxy := "10.20.30.40:4022"
	deviceType := id%4 + 1
	return domain.DeviceBound{AccountID: account, DeviceID: id, UniqueID: mac, Class: class, Model: model,
		MAC: &mac, RemoteCustomField: &rcf, Comment: &comment, UseNAT: id%2 == 0, UdpxyAddr: &udpxy, DeviceType: &deviceType}
}

// applyTypical applies n typical accounts (ids 1..n, spread over
// providers 1..providers) to m through Apply, in batches.
func applyTypical(t testing.TB, m *Model, f *feed, n, providers int) {
	t.Helper()
	batch := make([]eventstore.RecordedEvent, 0, 4096)
	for id := int64(1); id <= int64(n); id++ {
		p := id%int64(providers) + 1
		for _, e := range typicalAccount(id, p) {
			batch = append(batch, f.record(domain.AccountStream(id), e, base))
		}
		for _, c := range typicalConnections(id, p) {
			batch = append(batch, f.record(domain.DeviceStream(deviceOf(c)), c, base))
		}
		if len(batch) >= 4000 || id == int64(n) {
			if err := m.Apply(context.Background(), decoded(m, batch), projections.Replay); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// buildTypical applies n typical accounts to m without encoding them: the
// same state changes as Apply, minus JSON, for the million-account
// benchmarks.
func buildTypical(m *Model, n, providers int) {
	for id := int64(1); id <= int64(n); id++ {
		p := id%int64(providers) + 1
		for rev, e := range typicalAccount(id, p) {
			c := change{kind: domain.StreamAccount, id: id, rev: uint64(rev), event: e, at: base.Unix()}
			m.mu.Lock()
			m.st.apply(&m.ev, &c)
			m.st.pos = eventstore.Position{Commit: uint64(id), Prepare: uint64(id)}
			m.mu.Unlock()
		}
		for i, e := range typicalConnections(id, p) {
			c := change{kind: domain.StreamDevice, id: deviceOf(e), event: e, at: base.Unix() + int64(i)}
			m.mu.Lock()
			m.st.apply(&m.ev, &c)
			m.mu.Unlock()
		}
	}
}

// typicalConnections are what a typical account's devices did: every
// device has logged in (reporting its firmware and operating system) and
// connected once, so its first and last online times, its address,
// firmware and operating system are kept.
func typicalConnections(id, provider int64) []domain.Event {
	var out []domain.Event
	for _, e := range typicalAccount(id, provider) {
		if b, ok := e.(domain.DeviceBound); ok {
			addr := fmt.Sprintf("10.%d.%d.%d", byte(b.DeviceID>>16), byte(b.DeviceID>>8), byte(b.DeviceID))
			out = append(out,
				domain.DeviceLoggedIn{DeviceID: b.DeviceID, Account: id, Provider: provider, Address: addr, Firmware: "3.12.4", OS: "Android 11"},
				domain.DeviceConnected{DeviceID: b.DeviceID, Account: id, Provider: provider, Address: addr})
		}
	}
	return out
}

// deviceOf returns the device of a device stream's event.
func deviceOf(e domain.Event) int64 {
	switch e := e.(type) {
	case domain.DeviceLoggedIn:
		return e.DeviceID
	case domain.DeviceConnected:
		return e.DeviceID
	}
	panic(fmt.Sprintf("no device in %T", e))
}

// dump renders every answer of the model's queries (Answers).
func dump(t testing.TB, m *Model) []any {
	t.Helper()
	out, err := Answers(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameAnswers fails the test when two dumps differ, naming the first
// difference.
func sameAnswers(t testing.TB, want, got []any) {
	t.Helper()
	if err := DiffAnswers(want, got); err != nil {
		t.Fatal(err)
	}
}

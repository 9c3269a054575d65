package projections

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
)

func domainRegistry() *domain.Registry {
	r := domain.NewRegistry()
	domain.RegisterEvents(r)
	return r
}

// recordOf returns e as the store would deliver it from stream, with
// metadata md, recorded at created.
func recordOf(t testing.TB, reg *domain.Registry, stream string, e domain.Event, md string, created time.Time) eventstore.RecordedEvent {
	t.Helper()
	typ, data, err := reg.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return eventstore.RecordedEvent{ID: eventstore.NewEventID(), Stream: stream, Type: typ, Data: data, Metadata: []byte(md), Created: created}
}

// decodedEvent is what a test keeps of an Event: everything but the record.
type decodedEvent struct {
	ref        domain.StreamRef
	payload    domain.Event
	unknown    bool
	err        error
	occurredAt time.Time
}

func collect(events iter.Seq[*Event]) []decodedEvent {
	var out []decodedEvent
	for ev := range events {
		out = append(out, decodedEvent{ev.StreamRef, ev.Payload, ev.Unknown, ev.Err, ev.OccurredAt})
	}
	return out
}

func TestDecodeParsesStreamsDecodesPayloadsAndReadsWhenEventsHappened(t *testing.T) {
	reg := domainRegistry()
	created := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	happened := time.Date(2026, 3, 1, 23, 59, 59, 123456789, time.UTC)
	compact, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: happened, Actor: domain.SystemActor(), RequestID: "r-1"})
	if err != nil {
		t.Fatal(err)
	}
	// Given events with the compact metadata the service writes, with
	// metadata in another valid form (spaces, another zone), with metadata
	// that does not say when, of a type this node does not know, with data
	// that does not decode, and of a stream the domain does not name,
	provider := domain.ProviderCreated{ProviderID: 4, Name: "P", Enabled: true}
	recs := []eventstore.RecordedEvent{
		recordOf(t, reg, domain.ProviderStream(4), provider, string(compact), created),
		recordOf(t, reg, domain.AdminStream("ops-bob"), domain.AdminDeleted{Login: "ops-bob"},
			`{"actor": "system", "request_id": "r", "occurred_at": "2026-03-02T02:59:59.123456789+03:00"}`, created),
		recordOf(t, reg, domain.DeviceStream(9), domain.DeviceConnected{DeviceID: 9, Account: 1, Provider: 4}, `{}`, created),
		recordOf(t, reg, domain.CommandStream(3), provider, string(compact), created),
		recordOf(t, reg, domain.AccountStream(5), domain.AccountDeleted{AccountID: 5}, string(compact), created),
		recordOf(t, reg, "ids-account", provider, string(compact), created),
	}
	recs[3].Type = "CommandsRecalled.v1"
	recs[4].Data = []byte(`{"account_id":"five"}`)

	// when they are decoded,
	got := collect(Decode(reg, recs))

	// then each comes with its parsed stream, its payload or why there is
	// none, and when it happened: from the metadata, else when recorded.
	want := []decodedEvent{
		{ref: domain.StreamRef{Kind: domain.StreamProvider, ID: 4}, payload: provider, occurredAt: happened},
		{ref: domain.StreamRef{Kind: domain.StreamAdmin, Login: "ops-bob"}, payload: domain.AdminDeleted{Login: "ops-bob"}, occurredAt: happened},
		{ref: domain.StreamRef{Kind: domain.StreamDevice, ID: 9}, payload: domain.DeviceConnected{DeviceID: 9, Account: 1, Provider: 4}, occurredAt: created},
		{ref: domain.StreamRef{Kind: domain.StreamCommand, ID: 3}, unknown: true, occurredAt: happened},
		{ref: domain.StreamRef{Kind: domain.StreamAccount, ID: 5}, occurredAt: happened},
		{payload: provider, occurredAt: happened},
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if i == 4 {
			if !errors.Is(g.err, domain.ErrInvalidEventData) || g.payload != nil || g.unknown {
				t.Errorf("event %d: payload %v, unknown %v, error %v; want ErrInvalidEventData", i, g.payload, g.unknown, g.err)
			}
			g.err = nil
		}
		if fmt.Sprint(g) != fmt.Sprint(w) || !g.occurredAt.Equal(w.occurredAt) || g.occurredAt.Location() != time.UTC {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestDecoderLeavesIgnoredTypesUndecoded(t *testing.T) {
	reg := domainRegistry()
	// Given a decoder ignoring viewing reports (any version), and a report
	// whose data would not even decode,
	dec := NewDecoder(reg, domain.ViewingReportedType)
	viewing := recordOf(t, reg, domain.DeviceStream(1), domain.ViewingReported{DeviceID: 1}, `{}`, time.Unix(7, 0))
	viewing.Data = []byte(`not json`)
	v2 := viewing
	v2.Type = "ViewingReported.v2"
	connected := recordOf(t, reg, domain.DeviceStream(1), domain.DeviceConnected{DeviceID: 1}, `{}`, time.Unix(7, 0))
	// when decoded, then the reports come without payload, unknown flag or
	// error, and other types are decoded as usual.
	got := collect(dec.Decode([]eventstore.RecordedEvent{viewing, v2, connected}))
	for i, g := range got[:2] {
		if g.payload != nil || g.unknown || g.err != nil || g.ref != (domain.StreamRef{Kind: domain.StreamDevice, ID: 1}) {
			t.Errorf("ignored event %d: %+v", i, g)
		}
	}
	if got[2].payload != (domain.DeviceConnected{DeviceID: 1}) {
		t.Errorf("other type: %+v", got[2])
	}
	// The runner's decoder for a handler takes the handler's ignored types.
	if h := (ignoringHandler{newTestHandler("x")}); DecoderFor(reg, h).ignored[TypeFamily(domain.ViewingReportedType)] != true ||
		DecoderFor(reg, newTestHandler("y")).ignored != nil {
		t.Error("DecoderFor does not follow IgnoredTypes")
	}
}

type ignoringHandler struct{ *testHandler }

func (ignoringHandler) IgnoredTypes() []string { return []string{domain.ViewingReportedType} }

func TestDecodeAheadOfALongBatchKeepsLogOrderAndStopsWithTheLoop(t *testing.T) {
	reg := domainRegistry()
	const n = 5000
	recs := make([]eventstore.RecordedEvent, n)
	for i := range recs {
		recs[i] = recordOf(t, reg, domain.AccountStream(int64(i+1)), domain.AccountDeleted{AccountID: int64(i + 1)}, `{}`, time.Unix(1, 0))
	}
	before := runtime.NumGoroutine()
	// Given a batch long enough to be decoded on every core, when ranged
	// over, then the events come in log order, each decoded.
	i := 0
	for ev := range Decode(reg, recs) {
		if ev.RecordedEvent != &recs[i] || ev.Payload != (domain.AccountDeleted{AccountID: int64(i + 1)}) || ev.StreamRef.ID != int64(i+1) {
			t.Fatalf("event %d: %+v", i, ev)
		}
		i++
	}
	if i != n {
		t.Fatalf("%d events, want %d", i, n)
	}
	// When the loop stops early, then decoding stops with it.
	i = 0
	for range Decode(reg, recs) {
		if i++; i == 1000 {
			break
		}
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("%d goroutines after the loop, %d before", got, before)
	}
}

// decodedHandler records what the runner hands it.
type decodedHandler struct {
	mu     sync.Mutex
	events []decodedEvent
}

func (h *decodedHandler) Name() string              { return "decoded.v1" }
func (h *decodedHandler) Filter() eventstore.Filter { return eventstore.Filter{} }
func (h *decodedHandler) IgnoredTypes() []string    { return []string{domain.AccountDeletedType} }
func (h *decodedHandler) received() []decodedEvent  { h.mu.Lock(); defer h.mu.Unlock(); return h.events }
func (h *decodedHandler) Apply(_ context.Context, events iter.Seq[*Event], _ Mode) error {
	got := collect(events)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, got...)
	return nil
}

func TestRunnerHandsDecodedEvents(t *testing.T) {
	s := openStore(t)
	reg := domainRegistry()
	happened := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	md, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: happened, Actor: domain.SystemActor(), RequestID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	// Given a log with a known event, an event of a type the handler
	// ignores and one of a type this node does not know,
	var last eventstore.Position
	for _, e := range []struct {
		stream string
		event  domain.Event
		typ    string
	}{
		{domain.TariffStream(2), domain.TariffDeleted{TariffID: 2}, ""},
		{domain.AccountStream(3), domain.AccountDeleted{AccountID: 3}, ""},
		{domain.ReceiptStream(4), domain.TariffDeleted{TariffID: 2}, "CommandsReceived.v9"},
	} {
		typ, data, err := reg.Encode(e.event)
		if err != nil {
			t.Fatal(err)
		}
		if e.typ != "" {
			typ = e.typ
		}
		res, err := s.Append(context.Background(), e.stream, eventstore.Any,
			eventstore.EventData{ID: eventstore.NewEventID(), Type: typ, Data: data, Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		last = res.Position
	}
	// when a runner feeds a handler,
	h := &decodedHandler{}
	r := NewRunner(s, reg, h, fileCheckpoints(t), fastOptions(t))
	startRunner(t, r)
	waitApplied(t, r, last)
	// then the handler gets them decoded: streams parsed, the ignored type
	// and the unknown one without payload, the time from the metadata.
	want := []decodedEvent{
		{ref: domain.StreamRef{Kind: domain.StreamTariff, ID: 2}, payload: domain.TariffDeleted{TariffID: 2}, occurredAt: happened},
		{ref: domain.StreamRef{Kind: domain.StreamAccount, ID: 3}, occurredAt: happened},
		{ref: domain.StreamRef{Kind: domain.StreamReceipt, ID: 4}, unknown: true, occurredAt: happened},
	}
	if got := h.received(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("handed\n%+v\nwant\n%+v", got, want)
	}
}

package billing_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/memory"
	"tvsm/internal/adapters/billing"
	"tvsm/internal/platform/supervise"
)

// openStore returns an in-memory store and the registry: the journal's
// tests need the store's contract, not its disk.
func openStore(t *testing.T) (*memory.Store, *domain.Registry) {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	return store, reg
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestJournalAppendsToAccountStreams: calls become BillingCalled events in
// their accounts' streams, in order, with the device as actor.
func TestJournalAppendsToAccountStreams(t *testing.T) {
	store, reg := openStore(t)
	j := billing.NewJournal(billing.StoreSink{Store: store, Registry: reg}, billing.JournalOptions{Logger: quiet()})
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	calls := []billing.Call{
		{At: at, Device: 9, Account: 42, Provider: 7, Route: "cabinet", Method: http.MethodGet, Path: "/api/cabinet", Status: 200, Latency: 35 * time.Millisecond, RequestID: "r-1"},
		{At: at.Add(time.Second), Account: 43, Provider: 7, Route: "switch", Method: http.MethodPost, Path: "/api/switch", Status: 504, Latency: 10 * time.Second, Failure: "timeout"},
		{At: at.Add(2 * time.Second), Device: 9, Account: 42, Provider: 7, Route: "tariff", Method: http.MethodGet, Path: "/api/tariff/3", Status: 500, Latency: time.Millisecond, RequestID: "has space"},
	}
	for _, c := range calls {
		if !j.Record(c) {
			t.Fatalf("Record(%+v) dropped", c)
		}
	}
	if err := j.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := j.Stats(); s != (billing.JournalStats{Stored: 3}) {
		t.Errorf("stats %+v", s)
	}
	recs, err := store.ReadStream(context.Background(), domain.AccountStream(42), eventstore.Start, 0)
	if err != nil || len(recs) != 2 {
		t.Fatalf("account-42: %d events, %v", len(recs), err)
	}
	e, err := reg.Decode(recs[0].Type, recs[0].Data)
	want := domain.BillingCalled{AccountID: 42, Provider: 7, DeviceID: 9, Route: "cabinet", Method: "GET", Path: "/api/cabinet", Status: 200, LatencyMS: 35}
	if err != nil || e != want {
		t.Errorf("first event %#v, %v; want %#v", e, err, want)
	}
	md, err := domain.DecodeMetadata(recs[0].Metadata)
	if err != nil || !md.OccurredAt.Equal(at) || md.Actor != domain.DeviceActor(9) || md.RequestID != "r-1" {
		t.Errorf("metadata %+v, %v", md, err)
	}
	md, err = domain.DecodeMetadata(recs[1].Metadata)
	if err != nil || md.RequestID == "has space" || md.RequestID == "" {
		t.Errorf("an unusable request id was stored, or none: %+v, %v", md, err)
	}
	recs, err = store.ReadStream(context.Background(), domain.AccountStream(43), eventstore.Start, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("account-43: %d events, %v", len(recs), err)
	}
	if md, _ := domain.DecodeMetadata(recs[0].Metadata); md.Actor != domain.SystemActor() {
		t.Errorf("call without a device recorded as %v", md.Actor)
	}
}

// blockingSink holds every Save until released.
type blockingSink struct {
	entered chan struct{}
	release chan struct{}
}

func (s blockingSink) Save(ctx context.Context, _ int64, _ []billing.Call) error {
	s.entered <- struct{}{}
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestJournalNeverBlocks: with the sink stuck and the queue full, Record
// returns at once and counts the drop; Close with an expired context gives
// up and counts what it abandoned.
func TestJournalNeverBlocks(t *testing.T) {
	sink := blockingSink{entered: make(chan struct{}, 10), release: make(chan struct{})}
	j := billing.NewJournal(sink, billing.JournalOptions{Queue: 2, Logger: quiet()})
	call := billing.Call{Account: 1, Route: "cabinet"}
	j.Record(call)
	<-sink.entered // the worker holds the first call
	accepted := 0
	for range 10 {
		if j.Record(call) {
			accepted++
		}
	}
	if accepted != 2 {
		t.Errorf("%d calls queued behind a stuck sink, want the queue size 2", accepted)
	}
	if s := j.Stats(); s.Dropped != 8 {
		t.Errorf("stats %+v, want 8 dropped", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := j.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the context's deadline", err)
	}
	if j.Record(call) {
		t.Error("Record after Close queued a call")
	}
	if s := j.Stats(); s.Stored != 0 || s.Failed != 3 || s.Dropped != 9 {
		t.Errorf("stats after Close %+v, want 3 failed, 9 dropped", s)
	}
	if err := j.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// panickySink panics on the calls of one account and stores the others.
type panickySink struct {
	inner billing.Sink
	bad   int64
}

func (s panickySink) Save(ctx context.Context, account int64, calls []billing.Call) error {
	if account == s.bad {
		panic("sink bug")
	}
	return s.inner.Save(ctx, account, calls)
}

// A panic while storing fails those calls only (counted as failed, logged,
// counted as a panic); the journal stores the others and closes normally.
func TestJournalSurvivesSinkPanic(t *testing.T) {
	store, reg := openStore(t)
	j := billing.NewJournal(panickySink{inner: billing.StoreSink{Store: store, Registry: reg}, bad: 13}, billing.JournalOptions{Logger: quiet()})
	before := supervise.Counts()["billing-journal"]
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, account := range []int64{13, 42, 13, 42} {
		j.Record(billing.Call{At: at, Account: account, Provider: 7, Route: "cabinet", Method: http.MethodGet, Path: "/api/cabinet", Status: 200})
	}
	if err := j.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := j.Stats(); s.Stored != 2 || s.Failed != 2 {
		t.Errorf("stats %+v, want 2 stored and 2 failed", s)
	}
	if got := supervise.Counts()["billing-journal"] - before; got < 1 {
		t.Errorf("%d panics counted", got)
	}
	recs, err := store.ReadStream(context.Background(), domain.AccountStream(42), eventstore.Start, 0)
	if err != nil || len(recs) != 2 {
		t.Fatalf("account-42: %d events, %v", len(recs), err)
	}
}

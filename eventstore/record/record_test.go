package record_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/record"
)

// counted is the event of these tests.
type counted struct {
	N int `json:"n"`
}

func (counted) EventType() string { return "Counted.v1" }

func registry() *domain.Registry {
	reg := domain.NewRegistry()
	reg.Register("Counted.v1", func() domain.Event { return new(counted) })
	return reg
}

func openStore(t *testing.T) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var errTransport = errors.New("connection reset")

// flakyStore is a real store whose first fail appends fail with an error
// that is no verdict of the store. With landFirst, each failing append is
// stored before it fails, as when the answer is lost on its way back.
type flakyStore struct {
	eventstore.Store
	landFirst bool

	mu    sync.Mutex
	fail  int
	sends int
}

func (f *flakyStore) failing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends++
	if f.fail > 0 {
		f.fail--
		return true
	}
	return false
}

func (f *flakyStore) sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sends
}

func (f *flakyStore) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if f.failing() {
		if f.landFirst {
			if _, err := f.Store.Append(ctx, stream, expect, events...); err != nil {
				return eventstore.AppendResult{}, err
			}
		}
		return eventstore.AppendResult{}, errTransport
	}
	return f.Store.Append(ctx, stream, expect, events...)
}

func (f *flakyStore) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	multi := f.Store.(eventstore.MultiAppender)
	if f.failing() {
		if f.landFirst {
			if _, err := multi.AppendMulti(ctx, parts...); err != nil {
				return nil, err
			}
		}
		return nil, errTransport
	}
	return multi.AppendMulti(ctx, parts...)
}

var quick = record.Policy{BaseDelay: time.Microsecond}

func meta() domain.Metadata {
	return domain.Metadata{OccurredAt: time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC), Actor: domain.SystemActor(), RequestID: "r-1"}
}

func events(from, n int) []domain.Event {
	out := make([]domain.Event, n)
	for i := range out {
		out[i] = counted{N: from + i}
	}
	return out
}

func readAll(t *testing.T, s eventstore.Store, stream string) []eventstore.RecordedEvent {
	t.Helper()
	recs, err := s.ReadStream(context.Background(), stream, eventstore.Start, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestAppendResendsWhileTheOutcomeIsUnknown(t *testing.T) {
	for _, landFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("stored before failing=%v", landFirst), func(t *testing.T) {
			// Given a store whose first two appends fail without a verdict
			store := &flakyStore{Store: openStore(t), fail: 2, landFirst: landFirst}
			rec := record.Log{Store: store, Registry: registry(), Policy: quick}
			// When two events are recorded
			res, err := rec.Record(context.Background(), "counter-1", eventstore.NoStream, events(0, 2), meta(), record.Derived("k"))
			// Then the third send succeeds, and the events are stored once
			if err != nil {
				t.Fatal(err)
			}
			if store.sent() != 3 {
				t.Fatalf("%d sends, want 3", store.sent())
			}
			if got := readAll(t, store, "counter-1"); len(got) != 2 || res.NextExpected != 1 {
				t.Fatalf("stored %d events, next expected %d; want 2 events, 1", len(got), res.NextExpected)
			}
		})
	}
}

func TestAppendDoesNotResendAVerdict(t *testing.T) {
	// Given a stream with an event
	store := &flakyStore{Store: openStore(t)}
	rec := record.Log{Store: store, Registry: registry(), Policy: quick}
	ctx := context.Background()
	if _, err := rec.Record(ctx, "counter-1", eventstore.NoStream, events(0, 1), meta(), record.Random()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		expect eventstore.Revision
		ids    record.IDs
		want   error
	}{
		{"wrong expected revision", eventstore.NoStream, record.Random(), eventstore.ErrWrongExpectedRevision},
		{"invalid append", eventstore.Any, record.IDs{}, eventstore.ErrInvalidAppend},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := store.sent()
			// When an append gets a verdict
			_, err := rec.Record(ctx, "counter-1", c.expect, events(1, 1), meta(), c.ids)
			// Then it is returned after one send
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if n := store.sent() - before; n != 1 {
				t.Fatalf("%d sends, want 1", n)
			}
		})
	}
}

func TestAppendGivesUpAfterMaxAttempts(t *testing.T) {
	// Given a store that never answers
	store := &flakyStore{Store: openStore(t), fail: 100}
	rec := record.Log{Store: store, Registry: registry(), Policy: record.Policy{MaxAttempts: 3, BaseDelay: time.Microsecond}}
	// When an append is made
	_, err := rec.Record(context.Background(), "counter-1", eventstore.Any, events(0, 1), meta(), record.Random())
	// Then it is sent MaxAttempts times and fails with the last error
	if !errors.Is(err, errTransport) || store.sent() != 3 {
		t.Fatalf("error %v after %d sends, want %v after 3", err, store.sent(), errTransport)
	}
}

func TestAppendCountingSharesTheCallersCount(t *testing.T) {
	// Given an operation that has failed 4 times out of the default 5
	store := &flakyStore{Store: openStore(t), fail: 100}
	rec := record.Log{Store: store, Registry: registry(), Policy: quick}
	b, err := rec.Encode(events(0, 1), meta(), record.Random())
	if err != nil {
		t.Fatal(err)
	}
	failures := 4
	// When its append fails without a verdict
	_, err = rec.AppendCounting(context.Background(), &failures, "counter-1", eventstore.Any, b)
	// Then it is not resent, and the failure is counted
	if !errors.Is(err, errTransport) || store.sent() != 1 || failures != 5 {
		t.Fatalf("error %v after %d sends, %d failures; want %v after 1 send, 5 failures", err, store.sent(), failures, errTransport)
	}
}

func TestAppendStopsWhenTheCallerGivesUp(t *testing.T) {
	// Given a store that never answers and a caller whose context ends
	store := &flakyStore{Store: openStore(t), fail: 100}
	rec := record.Log{Store: store, Registry: registry(), Policy: record.Policy{BaseDelay: time.Hour}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for store.sent() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	// When an append is made
	start := time.Now()
	_, err := rec.Record(ctx, "counter-1", eventstore.Any, events(0, 1), meta(), record.Random())
	// Then it returns during the pause, without another send
	if err == nil || store.sent() != 1 || time.Since(start) > time.Minute {
		t.Fatalf("error %v after %d sends in %v", err, store.sent(), time.Since(start))
	}
	// And a send made after the context ended is not resent either
	_, err = rec.Record(ctx, "counter-1", eventstore.Any, events(0, 1), meta(), record.Random())
	if err == nil || store.sent() != 2 {
		t.Fatalf("error %v after %d sends, want an error after 2", err, store.sent())
	}
}

// slowStore blocks its first append until the append's context ends.
type slowStore struct {
	eventstore.Store
	once sync.Once
}

func (s *slowStore) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	blocked := false
	s.once.Do(func() { blocked = true })
	if blocked {
		<-ctx.Done()
		return eventstore.AppendResult{}, ctx.Err()
	}
	return s.Store.Append(ctx, stream, expect, events...)
}

func TestAttemptTimeoutBoundsEachSend(t *testing.T) {
	// Given a store whose first append hangs
	store := &slowStore{Store: openStore(t)}
	rec := record.Log{Store: store, Registry: registry(), Policy: record.Policy{BaseDelay: time.Microsecond, AttemptTimeout: 20 * time.Millisecond}}
	// When an append is made with a caller's context that does not end
	_, err := rec.Record(context.Background(), "counter-1", eventstore.NoStream, events(0, 1), meta(), record.Random())
	// Then the hung send times out and the resend stores the event
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, store, "counter-1"); len(got) != 1 {
		t.Fatalf("stored %d events, want 1", len(got))
	}
}

func TestPauseEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (record.Policy{BaseDelay: time.Hour}).Pause(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pause = %v, want context.Canceled", err)
	}
	start := time.Now()
	if err := (record.Policy{BaseDelay: time.Millisecond}).Pause(context.Background(), 50); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 16*time.Millisecond {
		t.Fatalf("pause after 50 failures took %v, want at least half of 32×1ms", d)
	}
}

func TestEncodeStampsEveryEventWithOneMetadata(t *testing.T) {
	rec := record.Log{Registry: registry()}
	// When three events are encoded
	b, err := rec.Encode(events(0, 3), meta(), record.Derived("req-1"))
	if err != nil {
		t.Fatal(err)
	}
	// Then they share one encoded metadata, which decodes to meta
	data := b.Data()
	if len(data) != 3 || b.Len() != 3 {
		t.Fatalf("%d events, want 3", len(data))
	}
	for i, d := range data {
		if &d.Metadata[0] != &data[0].Metadata[0] {
			t.Fatalf("event %d has its own metadata encoding", i)
		}
		if d.Type != "Counted.v1" || string(d.Data) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("event %d encoded as %s %s", i, d.Type, d.Data)
		}
	}
	m, err := domain.DecodeMetadata(data[0].Metadata)
	if err != nil || m != meta() {
		t.Fatalf("metadata %+v (%v), want %+v", m, err, meta())
	}
	// And their envelopes carry it
	for i, env := range b.Envelopes() {
		if env.Metadata() != meta() || env.Event != (counted{N: i}) {
			t.Fatalf("envelope %d is %+v", i, env)
		}
	}
	// And EncodeLike reuses it for another part of the same append
	more, err := rec.EncodeLike(b, events(3, 1), record.Derived("req-2"))
	if err != nil {
		t.Fatal(err)
	}
	if &more.Data()[0].Metadata[0] != &data[0].Metadata[0] || more.Envelopes()[0].Metadata() != meta() {
		t.Fatal("EncodeLike encoded the metadata again")
	}
}

func TestEncodeRejectsInvalidMetadata(t *testing.T) {
	rec := record.Log{Registry: registry()}
	if _, err := rec.Encode(events(0, 1), domain.Metadata{Actor: domain.SystemActor()}, record.Random()); !errors.Is(err, domain.ErrInvalidMetadata) {
		t.Fatalf("error %v, want ErrInvalidMetadata", err)
	}
}

func TestIDsNameEventsAsTheirScheme(t *testing.T) {
	rec := record.Log{Registry: registry()}
	explicit := []eventstore.EventID{eventstore.NewEventID(), eventstore.NewEventID()}
	for _, c := range []struct {
		name string
		ids  record.IDs
		want func(i int) eventstore.EventID
	}{
		{"derived", record.Derived("k"), func(i int) eventstore.EventID { return eventstore.DeriveEventID("k", i) }},
		{"sequenced", record.Sequenced(42, "k"), func(i int) eventstore.EventID { return eventstore.SequencedEventID(42, "k", i) }},
		{"explicit", record.Explicit(explicit...), func(i int) eventstore.EventID { return explicit[i] }},
		{"none", record.IDs{}, func(int) eventstore.EventID { return eventstore.EventID{} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := rec.Encode(events(0, 2), meta(), c.ids)
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range b.Data() {
				if d.ID != c.want(i) {
					t.Fatalf("event %d is %v, want %v", i, d.ID, c.want(i))
				}
			}
		})
	}
	t.Run("random", func(t *testing.T) {
		b, err := rec.Encode(events(0, 2), meta(), record.Random())
		if err != nil {
			t.Fatal(err)
		}
		d := b.Data()
		if d[0].ID.IsZero() || d[0].ID == d[1].ID {
			t.Fatalf("random ids %v, %v", d[0].ID, d[1].ID)
		}
	})
	t.Run("named after encoding", func(t *testing.T) {
		b, err := rec.Encode(events(0, 2), meta(), record.IDs{})
		if err != nil {
			t.Fatal(err)
		}
		b.Name(record.Derived(string(b.Data()[1].Data)))
		if b.Data()[1].ID != eventstore.DeriveEventID(`{"n":1}`, 1) {
			t.Fatalf("event 1 is %v", b.Data()[1].ID)
		}
	})
}

func TestJoinKeepsEachPartsMetadata(t *testing.T) {
	store := openStore(t)
	rec := record.Log{Store: store, Registry: registry()}
	other := meta()
	other.RequestID = "r-2"
	a, err := rec.Encode(events(0, 1), meta(), record.Random())
	if err != nil {
		t.Fatal(err)
	}
	b, err := rec.Encode(events(1, 1), other, record.Random())
	if err != nil {
		t.Fatal(err)
	}
	j := record.Join(a, b)
	if _, err := rec.Append(context.Background(), "counter-1", eventstore.NoStream, j); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, store, "counter-1")
	for i, want := range []string{"r-1", "r-2"} {
		m, err := domain.DecodeMetadata(recs[i].Metadata)
		if err != nil || m.RequestID != want || j.Envelopes()[i].RequestID != want {
			t.Fatalf("event %d has request id %q (%v), want %q", i, m.RequestID, err, want)
		}
	}
	if s := j.Slice(1, 2); s.Len() != 1 || s.Envelopes()[0].RequestID != "r-2" {
		t.Fatalf("slice %+v", s.Envelopes())
	}
}

// sum folds counted events into their sum.
func sum(st int, e domain.Event, _ eventstore.RecordedEvent) (int, error) {
	return st + e.(counted).N, nil
}

func TestFoldReadsBeyondOnePage(t *testing.T) {
	// Given a stream of 1100 events, more than two pages
	store := openStore(t)
	rec := record.Log{Store: store, Registry: registry()}
	ctx := context.Background()
	const n = 1100
	for from := 0; from < n; from += 100 {
		if _, err := rec.Record(ctx, "counter-1", eventstore.Any, events(from, 100), meta(), record.Random()); err != nil {
			t.Fatal(err)
		}
	}
	// When it is folded from the start
	total, head, err := record.Fold(ctx, rec, "counter-1", record.Head{}, 0, sum)
	// Then every event is folded and the head is the last event's
	if err != nil {
		t.Fatal(err)
	}
	last := readAll(t, store, "counter-1")[n-1]
	if total != n*(n-1)/2 || head != (record.Head{Exists: true, Revision: n - 1, Position: last.Position}) {
		t.Fatalf("sum %d, head %+v; want %d, revision %d at %v", total, head, n*(n-1)/2, n-1, last.Position)
	}
	if head.Expect() != eventstore.Exact(n-1) {
		t.Fatalf("expect %v", head.Expect())
	}
	// And a fold from a head reads only what follows it
	mid := record.Head{Exists: true, Revision: 999}
	rest, head2, err := record.Fold(ctx, rec, "counter-1", mid, 0, sum)
	if err != nil || rest != (1000+1099)*100/2 || head2 != head {
		t.Fatalf("sum after 999 = %d, head %+v (%v)", rest, head2, err)
	}
	// And a fold from the head reads nothing
	none, head3, err := record.Fold(ctx, rec, "counter-1", head, 7, sum)
	if err != nil || none != 7 || head3 != head {
		t.Fatalf("fold from the head = %d, %+v (%v)", none, head3, err)
	}
}

func TestFoldOfAMissingStreamIsEmpty(t *testing.T) {
	rec := record.Log{Store: openStore(t), Registry: registry()}
	st, head, err := record.Fold(context.Background(), rec, "counter-404", record.Head{}, 5, sum)
	if err != nil || st != 5 || head.Exists || head.Expect() != eventstore.NoStream {
		t.Fatalf("fold = %d, %+v, %v; want 5, no stream, nil", st, head, err)
	}
	_, _, found, err := record.First(context.Background(), rec, "counter-404")
	if err != nil || found {
		t.Fatalf("First found %v (%v)", found, err)
	}
}

func TestFoldNamesTheEventItCannotDecode(t *testing.T) {
	// Given a stream whose second event is of a type the registry lacks
	store := openStore(t)
	rec := record.Log{Store: store, Registry: registry()}
	ctx := context.Background()
	if _, err := rec.Record(ctx, "counter-1", eventstore.NoStream, events(1, 1), meta(), record.Random()); err != nil {
		t.Fatal(err)
	}
	md, _ := domain.EncodeMetadata(domain.Envelope{OccurredAt: meta().OccurredAt, Actor: domain.SystemActor(), RequestID: "r"})
	if _, err := store.Append(ctx, "counter-1", eventstore.Any, eventstore.EventData{ID: eventstore.NewEventID(), Type: "Unknown.v1", Data: []byte(`{}`), Metadata: md}); err != nil {
		t.Fatal(err)
	}
	// When it is folded
	st, head, err := record.Fold(ctx, rec, "counter-1", record.Head{}, 0, sum)
	// Then the error names the stream and revision, and the fold kept what it read before
	var de *record.DecodeError
	if !errors.As(err, &de) || de.Stream != "counter-1" || de.Revision != 1 || !errors.Is(err, domain.ErrUnknownEventType) {
		t.Fatalf("error %v, want a decode error of counter-1@1", err)
	}
	if err.Error()[:len("counter-1@1: ")] != "counter-1@1: " {
		t.Fatalf("error %q does not start with the stream and revision", err)
	}
	if st != 1 || head.Revision != 0 {
		t.Fatalf("state %d at %+v, want 1 at revision 0", st, head)
	}
	// And First decodes the first event only
	e, first, found, err := record.First(ctx, rec, "counter-1")
	if err != nil || !found || e != (counted{N: 1}) || first.Revision != 0 {
		t.Fatalf("First = %v, %+v, %v, %v", e, first, found, err)
	}
}

func TestFoldPassesTheStoredEvent(t *testing.T) {
	store := openStore(t)
	rec := record.Log{Store: store, Registry: registry()}
	ctx := context.Background()
	if _, err := rec.Record(ctx, "counter-1", eventstore.NoStream, events(0, 2), meta(), record.Derived("k")); err != nil {
		t.Fatal(err)
	}
	envs, _, err := record.Fold(ctx, rec, "counter-1", record.Head{}, nil,
		func(envs []domain.Envelope, e domain.Event, r eventstore.RecordedEvent) ([]domain.Envelope, error) {
			if r.ID != eventstore.DeriveEventID("k", int(r.Revision)) {
				return nil, fmt.Errorf("event %d has id %v", r.Revision, r.ID)
			}
			env, err := record.Envelope(e, r)
			return append(envs, env), err
		})
	if err != nil || len(envs) != 2 || envs[1].Metadata() != meta() || envs[1].Event != (counted{N: 1}) {
		t.Fatalf("envelopes %+v (%v)", envs, err)
	}
}

func TestAppendMultiIsAtomicAndResent(t *testing.T) {
	// Given a store whose first multi-append is stored but answered with a transport error
	store := &flakyStore{Store: openStore(t), fail: 1, landFirst: true}
	rec := record.Log{Store: store, Registry: registry(), Policy: quick}
	owner, err := rec.Encode(events(0, 1), meta(), record.Derived("owner"))
	if err != nil {
		t.Fatal(err)
	}
	name, err := rec.EncodeLike(owner, events(1, 1), record.Derived("name"))
	if err != nil {
		t.Fatal(err)
	}
	// When both parts are appended in one step
	res, err := rec.AppendMulti(context.Background(),
		eventstore.StreamAppend{Stream: "name-1", Expect: eventstore.NoStream, Events: name.Data()},
		eventstore.StreamAppend{Stream: "owner-1", Expect: eventstore.NoStream, Events: owner.Data()})
	// Then the resend is answered with the stored results
	if err != nil || len(res) != 2 || store.sent() != 2 {
		t.Fatalf("results %+v, %v after %d sends", res, err, store.sent())
	}
	for _, stream := range []string{"name-1", "owner-1"} {
		if got := readAll(t, store, stream); len(got) != 1 {
			t.Fatalf("%s holds %d events, want 1", stream, len(got))
		}
	}
	// And a conflicting part fails the whole append
	_, err = rec.AppendMulti(context.Background(),
		eventstore.StreamAppend{Stream: "name-2", Expect: eventstore.NoStream, Events: name.Data()},
		eventstore.StreamAppend{Stream: "owner-1", Expect: eventstore.NoStream, Events: owner.Data()})
	if !errors.Is(err, eventstore.ErrWrongExpectedRevision) && !errors.Is(err, eventstore.ErrDuplicateEventID) {
		t.Fatalf("error %v, want a verdict", err)
	}
	if _, err := store.ReadStream(context.Background(), "name-2", eventstore.Start, 0); !errors.Is(err, eventstore.ErrStreamNotFound) {
		t.Fatalf("name-2 was written: %v", err)
	}
}

// plainStore hides a store's MultiAppender.
type plainStore struct{ eventstore.Store }

func TestAppendMultiNeedsAMultiAppender(t *testing.T) {
	rec := record.Log{Store: plainStore{openStore(t)}, Registry: registry()}
	if _, err := rec.AppendMulti(context.Background()); !errors.Is(err, eventstore.ErrInvalidAppend) {
		t.Fatalf("error %v, want ErrInvalidAppend", err)
	}
}

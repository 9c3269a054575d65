package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/memory"
)

func newStore(t *testing.T) *memory.Store {
	t.Helper()
	s := memory.New()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func event(key string, i int) eventstore.EventData {
	return eventstore.EventData{ID: eventstore.DeriveEventID(key, i), Type: "Test.v1", Data: fmt.Appendf(nil, `{"i":%d}`, i)}
}

// recvWithin is Recv that fails the test when no batch or error comes
// within a few seconds.
func recvWithin(t *testing.T, sub eventstore.Subscription) (eventstore.Batch, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	b, err := sub.Recv(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("Recv did not return within 5s")
	}
	return b, err
}

// A subscriber that stops reading holds back no append, and is not dropped:
// once it reads again it gets every event, in order, in bounded batches.
func TestSlowSubscriberDoesNotHoldBackAppends(t *testing.T) {
	// Given a caught-up subscription that then reads nothing
	s := newStore(t)
	sub, err := s.SubscribeAll(t.Context(), eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if b, err := recvWithin(t, sub); err != nil || !b.CaughtUp {
		t.Fatalf("first Recv on an empty store: %+v, %v; want a caught-up batch", b, err)
	}

	// When writers append 20,000 events
	const writers, each = 4, 5000
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.Append(t.Context(), fmt.Sprintf("w-%d", w), eventstore.Any, event(fmt.Sprintf("w-%d", w), i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d appends with an idle subscriber in %v", writers*each, time.Since(start))

	// Then the subscriber gets all of them, positions 1 to 20,000, in
	// batches of at most 4096
	next := uint64(1)
	for next <= writers*each {
		b, err := recvWithin(t, sub)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Events) > 4096 {
			t.Fatalf("batch of %d events, want at most 4096", len(b.Events))
		}
		for _, e := range b.Events {
			if e.Position.Commit != next {
				t.Fatalf("event at %v, want position %d", e.Position, next)
			}
			next++
		}
		if b.Checkpoint.Commit != next-1 {
			t.Fatalf("checkpoint %v after the event at %d", b.Checkpoint, next-1)
		}
	}
}

// Closing the store ends a Recv that waits for events and makes every
// method of the store fail with ErrClosed.
func TestCloseEndsSubscriptionsAndRefusesCalls(t *testing.T) {
	// Given a caught-up subscription waiting in Recv
	s := memory.New()
	ctx := t.Context()
	if _, err := s.Append(ctx, "a", eventstore.NoStream, event("a", 0)); err != nil {
		t.Fatal(err)
	}
	sub, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := recvWithin(t, sub); err != nil || len(b.Events) != 1 || !b.CaughtUp {
		t.Fatalf("first Recv: %+v, %v; want the one event, caught up", b, err)
	}
	got := make(chan error, 1)
	go func() { _, err := sub.Recv(ctx); got <- err }()
	time.Sleep(20 * time.Millisecond)

	// When the store closes
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Then Recv returns ErrClosed, and so does every method
	select {
	case err := <-got:
		if !errors.Is(err, eventstore.ErrClosed) {
			t.Fatalf("Recv after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Recv still blocked 5s after Close")
	}
	if _, err := s.Append(ctx, "a", eventstore.Any, event("a", 1)); !errors.Is(err, eventstore.ErrClosed) {
		t.Errorf("Append: %v, want ErrClosed", err)
	}
	if _, err := s.AppendMulti(ctx, eventstore.StreamAppend{Stream: "b", Expect: eventstore.Any, Events: []eventstore.EventData{event("b", 0)}}); !errors.Is(err, eventstore.ErrClosed) {
		t.Errorf("AppendMulti: %v, want ErrClosed", err)
	}
	if _, err := s.ReadStream(ctx, "a", eventstore.Start, 0); !errors.Is(err, eventstore.ErrClosed) {
		t.Errorf("ReadStream: %v, want ErrClosed", err)
	}
	if _, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{}); !errors.Is(err, eventstore.ErrClosed) {
		t.Errorf("SubscribeAll: %v, want ErrClosed", err)
	}
	if _, err := s.Head(ctx); !errors.Is(err, eventstore.ErrClosed) {
		t.Errorf("Head: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// And a store reopened on the data has the event, and only that one
	s2 := s.Reopen()
	defer s2.Close()
	if head, err := s2.Head(ctx); err != nil || head.Commit != 1 {
		t.Fatalf("Head after Reopen: %v, %v; want 1", head, err)
	}
}

// The store keeps its own copies of payloads: neither the appender's
// buffers nor what ReadStream or a subscription returns can change the
// stored events.
func TestPayloadsAreTheStoresOwn(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	data, meta := []byte(`{"n":1}`), []byte(`{"m":1}`)
	evs := []eventstore.EventData{
		{ID: eventstore.DeriveEventID("p", 0), Type: "T.v1", Data: data, Metadata: meta},
		{ID: eventstore.DeriveEventID("p", 1), Type: "T.v1", Data: []byte(`{"n":2}`)},
		{ID: eventstore.DeriveEventID("p", 2), Type: "T.v1"},
	}
	if _, err := s.Append(ctx, "p", eventstore.NoStream, evs...); err != nil {
		t.Fatal(err)
	}

	// The appender reuses its buffers.
	copy(data, "XXXXXXX")
	copy(meta, "YYYYYYY")
	// A reader modifies and extends what it read.
	read, err := s.ReadStream(ctx, "p", eventstore.Start, 0)
	if err != nil {
		t.Fatal(err)
	}
	read[0].Data[0] = 'Z'
	_ = append(read[0].Data, "overflow"...)
	// A subscriber extends its batch after the log has grown into the
	// room its array had left (it may not modify the batch's events, but
	// appending to the batch must not reach the log's array).
	sub, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	b, err := recvWithin(t, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "p", eventstore.Exact(2), event("p", 3)); err != nil {
		t.Fatal(err)
	}
	_ = append(b.Events, eventstore.RecordedEvent{Type: "Overwritten.v1"})

	got, err := s.ReadStream(ctx, "p", eventstore.Start, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ typ, data, meta string }{
		{"T.v1", `{"n":1}`, `{"m":1}`},
		{"T.v1", `{"n":2}`, ""},
		{"T.v1", "", ""},
		{"Test.v1", `{"i":3}`, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("stream holds %d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Type != w.typ || string(got[i].Data) != w.data || string(got[i].Metadata) != w.meta {
			t.Errorf("event %d: %s %s %s, want %s %s %s", i, got[i].Type, got[i].Data, got[i].Metadata, w.typ, w.data, w.meta)
		}
	}
}

// A filter that drops a long run of events still reports progress: Recv
// returns empty batches whose checkpoint moves, not one that waits for the
// scan of the whole log.
func TestFilteredSubscriptionReportsProgress(t *testing.T) {
	// Given 40,000 events that the filter drops
	s := newStore(t)
	ctx := t.Context()
	const n = 40000
	batch := make([]eventstore.EventData, 1000)
	for i := range n / len(batch) {
		for j := range batch {
			batch[j] = event(fmt.Sprintf("other-%d", i), j)
		}
		if _, err := s.Append(ctx, fmt.Sprintf("other-%d", i), eventstore.NoStream, batch...); err != nil {
			t.Fatal(err)
		}
	}

	// When a filtered subscription reads from the beginning
	sub, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{"wanted-"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// Then its checkpoint reaches the head in several empty batches
	var last eventstore.Position
	batches := 0
	for last.Commit < n {
		b, err := recvWithin(t, sub)
		if err != nil {
			t.Fatal(err)
		}
		batches++
		if len(b.Events) != 0 || !b.Checkpoint.After(last) {
			t.Fatalf("batch %d: %d events, checkpoint %v after %v; want none, and progress", batches, len(b.Events), b.Checkpoint, last)
		}
		if b.CaughtUp != (b.Checkpoint.Commit == n) {
			t.Fatalf("batch %d at %v: CaughtUp %v", batches, b.Checkpoint, b.CaughtUp)
		}
		last = b.Checkpoint
	}
	if batches < 2 {
		t.Fatalf("the whole log in %d batch, want several", batches)
	}

	// And an event it selects arrives next
	want := event("wanted", 0)
	if _, err := s.Append(ctx, "wanted-1", eventstore.NoStream, want); err != nil {
		t.Fatal(err)
	}
	b, err := recvWithin(t, sub)
	if err != nil || len(b.Events) != 1 || b.Events[0].ID != want.ID || b.Checkpoint.Commit != n+1 {
		t.Fatalf("live Recv: %+v, %v; want the selected event at %d", b, err, n+1)
	}
}

// Stats counts acknowledged appends, and as commits those that stored
// events: a retry answered with the stored events is an append but no
// commit, a refused append is neither, an AppendMulti is one of each.
func TestStatsCountAcknowledgedAppends(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	first := []eventstore.EventData{event("s", 0), event("s", 1)}
	if _, err := s.Append(ctx, "s", eventstore.NoStream, first...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s", eventstore.NoStream, first...); err != nil { // a retry
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s", eventstore.NoStream, event("s", 2)); !errors.Is(err, eventstore.ErrWrongExpectedRevision) {
		t.Fatalf("append to an existing stream expecting none: %v", err)
	}
	if _, err := s.AppendMulti(ctx,
		eventstore.StreamAppend{Stream: "m1", Expect: eventstore.NoStream, Events: []eventstore.EventData{event("m1", 0)}},
		eventstore.StreamAppend{Stream: "m2", Expect: eventstore.NoStream, Events: []eventstore.EventData{event("m2", 0)}},
	); err != nil {
		t.Fatal(err)
	}
	if commits, appends := s.Stats(); commits != 2 || appends != 3 {
		t.Fatalf("Stats: %d commits, %d appends; want 2 and 3", commits, appends)
	}
}

package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"tvsm/eventstore"
)

func testEvent(key string, i int) eventstore.EventData {
	return eventstore.EventData{
		ID: eventstore.DeriveEventID(key, i), Type: "Test.v1",
		Data: fmt.Appendf(nil, `{"secret":"%s-%d"}`, key, i), Metadata: []byte(`{"m":1}`),
	}
}

func recvWithin(t *testing.T, sub eventstore.Subscription) eventstore.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	b, err := sub.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A tombstone drops the stream's events from the log, payloads and all,
// leaving their positions: subscriptions skip them, positions go on, and
// what a subscriber already received stays as it was.
func TestTombstoneDropsEvents(t *testing.T) {
	s := New()
	defer s.Close()
	ctx := t.Context()
	for i := range 3 {
		for _, stream := range []string{"gone", "keep"} {
			if _, err := s.Append(ctx, stream, eventstore.Any, testEvent(stream, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	early, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	held := recvWithin(t, early)
	if len(held.Events) != 6 {
		t.Fatalf("first batch: %d events, want 6", len(held.Events))
	}

	if err := s.Tombstone(ctx, "gone"); err != nil {
		t.Fatal(err)
	}

	// The log keeps nothing of the stream but positions.
	s.log.mu.RLock()
	for p := uint64(1); p <= s.log.n; p++ {
		e := s.log.at(p)
		if e.Position != position(p) {
			t.Errorf("entry %d has position %v", p, e.Position)
		}
		if p%2 == 1 && (e.Stream != "" || e.Type != "" || e.Data != nil || e.Metadata != nil || !e.ID.IsZero() || !e.Created.IsZero()) {
			t.Errorf("entry %d, of the tombstoned stream, still holds %+v", p, *e)
		}
		if p%2 == 0 && e.Stream != "keep" {
			t.Errorf("entry %d of stream keep now reads %+v", p, *e)
		}
	}
	s.log.mu.RUnlock()

	// What the early subscriber holds is untouched.
	for i, e := range held.Events {
		want := fmt.Sprintf(`{"secret":"%s-%d"}`, []string{"gone", "keep"}[i%2], i/2)
		if string(e.Data) != want {
			t.Fatalf("held event %d: data %s, want %s", i, e.Data, want)
		}
	}

	for _, f := range []eventstore.Filter{{}, {StreamPrefixes: []string{"gone", "keep"}}, {StreamPrefixes: []string{"gone"}}} {
		sub, err := s.SubscribeAll(ctx, eventstore.Beginning, f)
		if err != nil {
			t.Fatal(err)
		}
		b := recvWithin(t, sub)
		sub.Close()
		wantN := 3
		if len(f.StreamPrefixes) == 1 {
			wantN = 0
		}
		if len(b.Events) != wantN || b.Checkpoint != position(6) || !b.CaughtUp {
			t.Fatalf("subscription with %+v after the tombstone: %d events, checkpoint %v, caught up %v; want %d, 6, true",
				f, len(b.Events), b.Checkpoint, b.CaughtUp, wantN)
		}
		for _, e := range b.Events {
			if e.Stream != "keep" {
				t.Fatalf("subscription with %+v delivered an event of %q", f, e.Stream)
			}
		}
	}

	res, err := s.Append(ctx, "keep", eventstore.Exact(2), testEvent("keep", 3))
	if err != nil || res.Position != position(7) {
		t.Fatalf("append after the tombstone: %+v, %v; want position 7", res, err)
	}
	// The ids of the tombstoned events stay taken.
	if _, err := s.Append(ctx, "elsewhere", eventstore.NoStream, testEvent("gone", 0)); !errors.Is(err, eventstore.ErrDuplicateEventID) {
		t.Fatalf("append of a tombstoned event's id to another stream: %v, want ErrDuplicateEventID", err)
	}
}

// Tombstones while writers append and subscribers read the payloads of
// what they get: no data race (run with -race), and every subscriber gets
// every event of the streams never tombstoned, in order.
func TestTombstoneConcurrentWithReaders(t *testing.T) {
	s := New()
	defer s.Close()
	ctx := t.Context()
	const writers, each = 4, 3000 // about three chunks
	var wg sync.WaitGroup
	errs := make(chan error, writers+1+3)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				stream := fmt.Sprintf("keep-%d", w)
				if i%3 == 0 {
					stream = fmt.Sprintf("gone-%d-%d", w, i/300)
				}
				_, err := s.Append(ctx, stream, eventstore.Any, testEvent(stream, i))
				if err != nil && !(i%3 == 0 && errors.Is(err, eventstore.ErrStreamDeleted)) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for k := range 2 * each / 300 {
			for w := range writers {
				if err := s.Tombstone(ctx, fmt.Sprintf("gone-%d-%d", w, k/2)); err != nil {
					errs <- err
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	})
	counts := make([]map[string]int, 3)
	for r := range counts {
		counts[r] = map[string]int{}
		wg.Go(func() {
			sub, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
			if err != nil {
				errs <- err
				return
			}
			defer sub.Close()
			for counts[r]["total"] < writers*each*2/3 {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				b, err := sub.Recv(rctx)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("reader %d after %d events: %w", r, counts[r]["total"], err)
					return
				}
				for _, e := range b.Events {
					if len(e.Data) == 0 || e.Stream == "" {
						errs <- fmt.Errorf("reader %d got an event without data or stream: %+v", r, e)
						return
					}
					if e.Stream[:4] == "keep" {
						counts[r]["total"]++
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

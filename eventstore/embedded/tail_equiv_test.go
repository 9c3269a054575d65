package embedded_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// A live subscription is fed from the store's in-memory tail, a catch-up one
// from pebble: both must deliver exactly the same events, field for field
// (times, nil or empty payloads, metadata), with and without a filter.
func TestLiveSubscriptionDeliversWhatTheLogHolds(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	filters := []eventstore.Filter{{}, {StreamPrefixes: []string{"b-"}}, {EventTypePrefixes: []string{"Odd"}}}
	live := make([]eventstore.Subscription, len(filters))
	for i, f := range filters {
		if live[i], err = s.SubscribeAll(ctx, eventstore.Beginning, f); err != nil {
			t.Fatal(err)
		}
		if _, err := live[i].Recv(ctx); err != nil { // caught up on the empty store
			t.Fatal(err)
		}
	}

	const appends = 300
	errs := make(chan error, 8)
	for w := range 8 { // concurrent appenders: groups of several appends
		go func() {
			for i := w; i < appends; i += 8 {
				e := eventstore.EventData{ID: eventstore.DeriveEventID("tail", i), Type: "Even.v1"}
				if i%2 == 1 {
					e.Type = "Odd.v1"
				}
				if i%3 != 0 {
					e.Data = []byte(fmt.Sprintf(`{"i":%d}`, i))
				}
				if i%5 != 0 {
					e.Metadata = []byte(fmt.Sprintf(`{"m":%d}`, i))
				}
				stream := fmt.Sprintf("%c-%d", "ab"[i%2], i%7)
				if _, err := s.Append(ctx, stream, eventstore.Any, e, event(stream, i)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	head := uint64(2 * appends)
	liveGot := make([][]eventstore.RecordedEvent, len(filters))
	for i, sub := range live {
		liveGot[i] = drain(t, ctx, sub, head)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened, the tail is empty: every event comes from pebble.
	s = openStore(t, dir)
	for i, f := range filters {
		sub, err := s.SubscribeAll(ctx, eventstore.Beginning, f)
		if err != nil {
			t.Fatal(err)
		}
		logGot := drain(t, ctx, sub, head)
		if len(liveGot[i]) == 0 || !reflect.DeepEqual(liveGot[i], logGot) {
			t.Errorf("filter %+v: live subscription delivered %d events, the log %d; first difference: %s",
				f, len(liveGot[i]), len(logGot), firstDifference(liveGot[i], logGot))
		}
	}
}

// drain receives from sub until its checkpoint reaches head.
func drain(t *testing.T, ctx context.Context, sub eventstore.Subscription, head uint64) []eventstore.RecordedEvent {
	t.Helper()
	var out []eventstore.RecordedEvent
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Events...)
		if b.Checkpoint.Commit >= head {
			return out
		}
	}
}

func firstDifference(a, b []eventstore.RecordedEvent) string {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return fmt.Sprintf("#%d: %+v != %+v", i, a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}

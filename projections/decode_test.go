package projections

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/eventstore"
)

func decodeEvents(n int) []eventstore.RecordedEvent {
	events := make([]eventstore.RecordedEvent, n)
	for i := range events {
		events[i] = eventstore.RecordedEvent{Type: "T", Data: fmt.Appendf(nil, "%d", i),
			Position: eventstore.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}}
	}
	return events
}

// into adapts a decode function returning its value to decodeAhead's.
func into(decode func(*eventstore.RecordedEvent) (int, error)) func(*eventstore.RecordedEvent, *int) error {
	return func(ev *eventstore.RecordedEvent, v *int) (err error) {
		*v, err = decode(ev)
		return err
	}
}

// decodeNumber parses the event's data; chunks finish out of order since
// later events decode faster.
func decodeNumber(decodes *atomic.Int64, n int) func(*eventstore.RecordedEvent) (int, error) {
	return func(ev *eventstore.RecordedEvent) (int, error) {
		decodes.Add(1)
		var v int
		_, err := fmt.Sscan(string(ev.Data), &v)
		if v < n/4 && v%64 == 0 {
			time.Sleep(time.Millisecond)
		}
		return v, err
	}
}

func TestDecodeAheadAppliesEveryEventInLogOrder(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 129, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			events := decodeEvents(n)
			var decodes atomic.Int64
			var applied []int
			err := decodeAhead(events, into(decodeNumber(&decodes, n)), func(ev *eventstore.RecordedEvent, p *int) error {
				v := *p
				if uint64(v+1) != ev.Position.Commit {
					return fmt.Errorf("event at %d got the value of event %d", ev.Position.Commit, v)
				}
				applied = append(applied, v)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(applied) != n || decodes.Load() != int64(n) {
				t.Fatalf("applied %d, decoded %d, want %d of each", len(applied), decodes.Load(), n)
			}
			for i, v := range applied {
				if v != i {
					t.Fatalf("applied[%d] = %d: not in log order", i, v)
				}
			}
		})
	}
}

func TestDecodeAheadStopsAtTheFirstErrorInLogOrder(t *testing.T) {
	const n, bad = 5000, 3001
	errBad := errors.New("bad event")
	for _, where := range []string{"decode", "apply"} {
		t.Run(where, func(t *testing.T) {
			before := runtime.NumGoroutine()
			events := decodeEvents(n)
			var decodes atomic.Int64
			number := decodeNumber(&decodes, n)
			decode := func(ev *eventstore.RecordedEvent) (int, error) {
				v, err := number(ev)
				if where == "decode" && v >= bad && v%2 == 1 { // later failures must not win
					return 0, fmt.Errorf("event %d: %w", v, errBad)
				}
				return v, err
			}
			applied := 0
			err := decodeAhead(events, into(decode), func(ev *eventstore.RecordedEvent, v *int) error {
				if where == "apply" && *v == bad {
					return errBad
				}
				applied++
				return nil
			})
			if !errors.Is(err, errBad) || (where == "decode" && err.Error() != fmt.Sprintf("event %d: bad event", bad)) {
				t.Fatalf("error %v, want the one of event %d", err, bad)
			}
			if applied != bad {
				t.Fatalf("applied %d events, want exactly the %d before the bad one", applied, bad)
			}
			// Workers have returned; their goroutines end right after.
			deadline := time.Now().Add(time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if got := runtime.NumGoroutine(); got > before {
				t.Errorf("%d goroutines after the call, %d before", got, before)
			}
		})
	}
}

// BenchmarkDecodeAhead decodes JSON-sized work ahead of a cheap apply.
func BenchmarkDecodeAhead(b *testing.B) {
	events := decodeEvents(4096)
	var decodes atomic.Int64
	decode := decodeNumber(&decodes, 0)
	for b.Loop() {
		if err := decodeAhead(events, into(decode), func(*eventstore.RecordedEvent, *int) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(events)*b.N)/b.Elapsed().Seconds(), "events/s")
}

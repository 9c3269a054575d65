package projections

import (
	"context"
	"errors"
	"testing"

	"tvsm/eventstore"
)

// replayTo runs ReplayTo with a context bounded by the test timeout and
// returns what it read through, the progress it reported and its error.
func replayTo(t *testing.T, s eventstore.Store, h Handler, after, through eventstore.Position) (eventstore.Position, []eventstore.Position, int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var reported []eventstore.Position
	events := 0
	read, err := ReplayTo(ctx, s, testEvents, h, after, through, func(p eventstore.Position, n int) {
		reported = append(reported, p)
		events += n
	})
	return read, reported, events, err
}

func TestReplayToStopsAtThePositionInsideABatch(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "account-1", 30)
	h := newTestHandler("rm.v1")
	// Batches of 7: position 10 is in the middle of the second.
	fs := &faultyStore{Store: s, wrap: func(_ int, sub eventstore.Subscription) eventstore.Subscription {
		return &splitSub{Subscription: sub, size: 7}
	}}
	read, reported, events, err := replayTo(t, fs, h, pos(3), pos(10))
	if err != nil {
		t.Fatal(err)
	}
	_, deliveries, modes := h.snapshot()
	assertInOrderOnce(t, deliveries, positions(3, 10))
	if read != pos(10) || events != 7 || len(reported) == 0 || reported[len(reported)-1] != pos(10) {
		t.Fatalf("read through %v, reported %v for %d events; want 10 and 7 events", read, reported, events)
	}
	for _, m := range modes {
		if m != Replay {
			t.Fatalf("applied in mode %v, want replay", m)
		}
	}
	// Continuing from where it stopped applies the rest once.
	read, _, _, err = replayTo(t, fs, h, read, pos(30))
	if err != nil || read != pos(30) {
		t.Fatalf("second replay: through %v, %v", read, err)
	}
	_, deliveries, _ = h.snapshot()
	assertInOrderOnce(t, deliveries, positions(3, 30))
}

func TestReplayToEndsAtTheHead(t *testing.T) {
	s := openStore(t)
	last := appendEvents(t, s, "account-1", 5)
	h := newTestHandler("rm.v1")
	read, _, _, err := replayTo(t, s, h, eventstore.Beginning, pos(1000))
	if err != nil || read != last {
		t.Fatalf("replay past the head: through %v, %v; want the head %v", read, err, last)
	}
	// Nothing to do when after is not before through.
	read, reported, _, err := replayTo(t, s, newTestHandler("rm.v1"), pos(4), pos(4))
	if err != nil || read != pos(4) || len(reported) != 0 {
		t.Fatalf("empty replay: through %v, reported %v, %v", read, reported, err)
	}
}

func TestReplayToPassesFilteredEvents(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "account-1", 3)
	appendEvents(t, s, "other-1", 3) // positions 4..6, filtered out
	h := newTestHandler("rm.v1", "account-")
	read, _, events, err := replayTo(t, s, h, eventstore.Beginning, pos(5))
	if err != nil || read != pos(5) || events != 3 {
		t.Fatalf("through a filtered position: through %v, %d events, %v", read, events, err)
	}
}

func TestReplayToReturnsTheHandlersError(t *testing.T) {
	s := openStore(t)
	appendEvents(t, s, "account-1", 5)
	h := newTestHandler("rm.v1")
	boom := errors.New("boom")
	h.fail = func(int, []eventstore.RecordedEvent) error { return boom }
	if _, _, _, err := replayTo(t, s, h, eventstore.Beginning, pos(5)); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the handler's", err)
	}
}

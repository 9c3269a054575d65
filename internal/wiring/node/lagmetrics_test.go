package node

import (
	"context"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/memory"
)

// sparse hides SequentialPositions by wrapping the store in the interfaces
// only.
type sparse struct {
	eventstore.Store
	eventstore.HeadReader
}

// TestProjectionLag: given a log of 30 events and projections that applied
// none, 10 and all of them, when scraped, then the lag in events is 30, 20
// and 0, its age is the time since the first unapplied event was recorded
// (0 at the head), on a store with sequential positions and on one whose
// events must be counted; a projection whose filter passes none of the
// events after its position has no lag.
func TestProjectionLag(t *testing.T) {
	mem := memory.New()
	ctx := context.Background()
	var positions []eventstore.Position
	for i := range 30 {
		r, err := mem.Append(ctx, "account-"+string(rune('a'+i%5)), eventstore.Any, eventstore.EventData{ID: eventstore.NewEventID(), Type: "Test"})
		if err != nil {
			t.Fatal(err)
		}
		positions = append(positions, r.Position)
	}
	first, err := mem.ReadStream(ctx, "account-a", eventstore.Start, 3)
	if err != nil {
		t.Fatal(err)
	}
	at := func(p eventstore.Position) func() eventstore.Position { return func() eventstore.Position { return p } }
	// "skipper" applies only account-a's events and has applied the last
	// of them: the four events after it are not its lag.
	all := eventstore.Filter{}
	applied := []appliedPosition{{"none", at(eventstore.Beginning), all}, {"ten", at(positions[9]), all}, {"all", at(positions[29]), all},
		{"skipper", at(positions[25]), eventstore.Filter{StreamPrefixes: []string{"account-a"}}}}
	now := time.Now().Add(time.Minute)
	for name, store := range map[string]eventstore.Store{"sequential": mem, "counted": sparse{mem, mem}} {
		c := newLagCollector(store, applied, func() time.Time { return now })
		got := map[string]lagSample{}
		for _, s := range c.measure() {
			got[s.name] = s
		}
		if got["none"].events != 30 || got["ten"].events != 20 || got["all"].events != 0 {
			t.Errorf("%s: lag events %+v, want none 30, ten 20, all 0", name, got)
		}
		// The oldest unapplied event of "none" is the log's first, of
		// "ten" the eleventh, recorded after it.
		if want := now.Sub(first[0].Created).Seconds(); got["none"].seconds != want {
			t.Errorf("%s: lag seconds of none %v, want %v", name, got["none"].seconds, want)
		}
		if s := got["ten"].seconds; s <= 0 || s > got["none"].seconds {
			t.Errorf("%s: lag seconds of ten %v, want in (0, %v]", name, s, got["none"].seconds)
		}
		if got["all"].seconds != 0 {
			t.Errorf("%s: lag seconds at the head %v, want 0", name, got["all"].seconds)
		}
		if s := got["skipper"]; s.events != 0 || s.seconds != 0 {
			t.Errorf("%s: lag of a projection past its last event %+v, want 0", name, s)
		}
	}
}

// TestProjectionLagCountCapped: on a store whose events must be counted,
// the count stops at lagCountCap.
func TestProjectionLagCountCapped(t *testing.T) {
	mem := memory.New()
	ctx := context.Background()
	events := make([]eventstore.EventData, 500)
	for range (lagCountCap + 1000) / len(events) {
		for i := range events {
			events[i] = eventstore.EventData{ID: eventstore.NewEventID(), Type: "Test"}
		}
		if _, err := mem.Append(ctx, "bulk-1", eventstore.Any, events...); err != nil {
			t.Fatal(err)
		}
	}
	c := newLagCollector(sparse{mem, mem}, []appliedPosition{{"none", func() eventstore.Position { return eventstore.Beginning }, eventstore.Filter{}}}, time.Now)
	s := c.measure()
	if len(s) != 1 || s[0].events != lagCountCap {
		t.Fatalf("lag %+v, want counted up to %d", s, lagCountCap)
	}
	if c2 := newLagCollector(mem, c.applied, time.Now); c2.measure()[0].events != lagCountCap+1000 {
		t.Fatalf("sequential lag %+v, want %d", c2.measure(), lagCountCap+1000)
	}
}

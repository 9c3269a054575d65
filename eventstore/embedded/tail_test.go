package embedded

import (
	"fmt"
	"testing"

	"tvsm/eventstore"
)

// tailEvents of n events from position first, in streams "a-…" and "b-…"
// alternately, with payload bytes each.
func tailRun(first uint64, n, bytes int) []eventstore.RecordedEvent {
	out := make([]eventstore.RecordedEvent, n)
	for i := range out {
		pos := first + uint64(i)
		out[i] = eventstore.RecordedEvent{
			Stream: fmt.Sprintf("%c-%d", "ab"[i%2], pos), Type: "T.v1",
			Position: eventstore.Position{Commit: pos, Prepare: pos}, Data: make([]byte, bytes),
		}
	}
	return out
}

func positions(events []eventstore.RecordedEvent) []uint64 {
	out := make([]uint64, len(events))
	for i, e := range events {
		out[i] = e.Position.Commit
	}
	return out
}

func wantRange(t *testing.T, got []eventstore.RecordedEvent, from, to uint64) {
	t.Helper()
	if len(got) != int(to-from+1) || got[0].Position.Commit != from || got[len(got)-1].Position.Commit != to {
		t.Fatalf("events at %v, want %d..%d", positions(got), from, to)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Position.Commit != got[i-1].Position.Commit+1 {
			t.Fatalf("events at %v: not consecutive", positions(got))
		}
	}
}

func TestTailReadsWithinAndAcrossGroups(t *testing.T) {
	var tl tail
	tl.add(tailRun(1, 3, 10)) // 1..3
	tl.add(tailRun(4, 2, 10)) // 4..5
	tl.add(tailRun(6, 4, 10)) // 6..9

	// Given a subscriber at 3, when it reads up to head 5, then it gets the
	// second group, shared with the tail and capped so that it cannot
	// append into it.
	got, last, ok := tl.read(3, 5, eventstore.Filter{})
	if !ok || last != 5 {
		t.Fatalf("read(3, 5) = last %d, ok %v", last, ok)
	}
	wantRange(t, got, 4, 5)
	if cap(got) != len(got) {
		t.Errorf("cap %d > len %d: an append by a subscriber would write into the tail", cap(got), len(got))
	}
	// Across groups, and stopping at the head inside a group.
	got, last, _ = tl.read(1, 7, eventstore.Filter{})
	wantRange(t, got, 2, 7)
	if last != 7 {
		t.Errorf("last = %d, want 7", last)
	}
	// A filter keeps matching events only, but reports how far it looked.
	got, last, ok = tl.read(0, 9, eventstore.Filter{StreamPrefixes: []string{"b-"}})
	if !ok || last != 9 {
		t.Fatalf("filtered read: last %d, ok %v", last, ok)
	}
	for _, e := range got {
		if e.Stream[0] != 'b' {
			t.Fatalf("filtered read returned %s", e.Stream)
		}
	}
	if len(got) != 4 { // b-2, b-4 (group 1: a,b,a; group 2: a,b; group 3: a,b,a,b)
		t.Errorf("filtered read: %d events at %v, want 4", len(got), positions(got))
	}
	// Positions the tail does not hold send the reader to pebble.
	for _, after := range []uint64{9, 10} {
		if _, _, ok := tl.read(after, 9, eventstore.Filter{}); ok {
			t.Errorf("read(%d) ok with the tail ending at 9", after)
		}
	}
}

func TestTailDropsOldGroupsAndStartsOverAfterAGap(t *testing.T) {
	var tl tail
	pos := uint64(1)
	for range tailEvents / 100 * 2 { // twice the event bound, in groups of 100
		tl.add(tailRun(pos, 100, 1))
		pos += 100
	}
	if tl.events > tailEvents {
		t.Fatalf("tail holds %d events, bound %d", tl.events, tailEvents)
	}
	if _, _, ok := tl.read(0, pos-1, eventstore.Filter{}); ok {
		t.Error("the oldest events are still readable after twice the bound was added")
	}
	got, _, ok := tl.read(pos-51, pos-1, eventstore.Filter{})
	if !ok {
		t.Fatal("the newest events are not readable")
	}
	wantRange(t, got, pos-50, pos-1)

	// Bytes bound: a group of large events pushes out the older ones.
	big := tailRun(pos, 3, tailBytes/2)
	tl.add(big)
	if tl.bytes > tailBytes && len(tl.segments) > 1 {
		t.Fatalf("tail holds %d bytes in %d groups, bound %d", tl.bytes, len(tl.segments), tailBytes)
	}
	pos += 3

	// A group that does not follow the newest event (it cannot happen:
	// groups are added in order) empties the tail rather than leave a hole.
	tl.add(tailRun(pos+10, 2, 1))
	if _, _, ok := tl.read(pos-2, pos+11, eventstore.Filter{}); ok {
		t.Error("read across a gap succeeded")
	}
	got, _, ok = tl.read(pos+9, pos+11, eventstore.Filter{})
	if !ok {
		t.Fatal("the group after the gap is not readable")
	}
	wantRange(t, got, pos+10, pos+11)
}

// The tail drops its oldest groups by reslicing: its backing array must not
// grow without bound, and the dropped entries still in it must not hold
// their events.
func TestTailMemoryStaysBoundedUnderManySmallGroups(t *testing.T) {
	var tl tail
	pos := uint64(1)
	for range 20 * tailEvents { // one-event groups: the most segments
		tl.add(tailRun(pos, 1, 1))
		pos++
		if len(tl.segments) > tailEvents {
			t.Fatalf("%d segments held, bound %d events", len(tl.segments), tailEvents)
		}
		if c := cap(tl.segments); c > 4*tailEvents {
			t.Fatalf("backing array of %d segments for %d held", c, len(tl.segments))
		}
	}
	// The front of the backing array, before segments[0], holds no events.
	// An add that outgrows the array moves the tail to a new one; the next
	// add then drops within it.
	var backing []tailSegment
	front := -1
	for try := 0; try < 2 && front <= 0; try++ {
		backing = tl.segments[:cap(tl.segments)]
		tl.add(tailRun(pos, 1, 1))
		pos++
		for k := range backing {
			if &backing[k] == &tl.segments[0] {
				front = k
			}
		}
	}
	if front <= 0 {
		t.Fatalf("segments[0] is at %d of the backing array, want a dropped front", front)
	}
	for k, seg := range backing[:front] {
		if seg.events != nil {
			t.Fatalf("dropped segment %d of the backing array still holds %d events", k, len(seg.events))
		}
	}
	got, _, ok := tl.read(pos-11, pos-1, eventstore.Filter{})
	if !ok {
		t.Fatal("the newest events are not readable")
	}
	wantRange(t, got, pos-10, pos-1)
}

// BenchmarkTailAdd adds one group of 4 events to a full tail, as the
// committer does for each group under account creates.
func BenchmarkTailAdd(b *testing.B) {
	var tl tail
	pos := uint64(1)
	// More groups than the tail holds: a group is reused (its positions
	// rewritten) only after the tail has dropped it.
	groups := make([][]eventstore.RecordedEvent, tailEvents)
	for i := range groups {
		groups[i] = tailRun(1, 4, 200)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g := groups[i%len(groups)]
		for j := range g {
			g[j].Position = eventstore.Position{Commit: pos + uint64(j), Prepare: pos + uint64(j)}
		}
		tl.add(g)
		pos += uint64(len(g))
	}
}

// A filtered read that reaches the batch bound inside a group stops there:
// the events the filter drops let it count fewer than the bound, and it
// used to go on into the next group from the middle of this one (a slice
// from a negative offset: a panic of the subscriber's goroutine).
func TestTailFilteredReadStopsWhereTheBatchBoundCutsAGroup(t *testing.T) {
	var tl tail
	// The bound cuts the second group, half of whose events the filter
	// drops; a third group follows.
	first := uint64(1)
	for _, n := range []int{maxBatchEvents * 3 / 4, maxBatchEvents * 3 / 4, 100} {
		tl.add(tailRun(first, n, 10)) // streams a- and b- alternately
		first += uint64(n)
	}
	head := first - 1
	filter := eventstore.Filter{StreamPrefixes: []string{"b-"}}
	after := uint64(0)
	var got []eventstore.RecordedEvent
	for after < head {
		batch, last, ok := tl.read(after, head, filter)
		if !ok {
			t.Fatalf("read after %d: not in the tail", after)
		}
		if last <= after || last > head {
			t.Fatalf("read after %d: last %d, want progress up to %d", after, last, head)
		}
		got = append(got, batch...)
		after = last
	}
	if len(got) != int(head)/2 {
		t.Fatalf("%d events of streams b-, want %d", len(got), head/2)
	}
	for i, e := range got {
		if e.Stream[0] != 'b' || e.Position.Commit != uint64(2*i+2) {
			t.Fatalf("event %d: %s at %d, want b- at %d", i, e.Stream, e.Position.Commit, 2*i+2)
		}
	}
}

package embedded

import (
	"sync"

	"tvsm/eventstore"
)

// Bounds of the tail: the newest events kept in memory for subscriptions.
// A live subscriber is at most a few groups behind the head, so a few
// thousand events cover it; one that falls further behind reads pebble.
const (
	tailEvents = 8192
	tailBytes  = 8 << 20
)

// tail holds the newest durable events, group by group as the committer
// made them durable. A subscription that is live (within the tail) takes its
// batches from here instead of opening a pebble iterator and decoding the
// records it has just written: for account creates over HTTP, that scan and
// decode, done by every subscriber, was about 2% of the CPU
// (docs/eventstore.md). A group's events are never modified once added, so
// an unfiltered subscription is handed a slice of them without a copy;
// subscribers must not modify them (eventstore.Batch says so).
type tail struct {
	mu       sync.RWMutex
	segments []tailSegment // oldest first, positions contiguous
	events   int           // in all segments
	bytes    int           // payload bytes in all segments
}

// tailSegment is the events of one group, at consecutive positions.
type tailSegment struct {
	events []eventstore.RecordedEvent
	bytes  int
}

func (s tailSegment) first() uint64 { return s.events[0].Position.Commit }

// add appends the events of a group, whose positions must follow the
// newest event held (a gap empties the tail first). It is called before the
// head moves past them, so that a subscriber woken by that move finds them
// here. add keeps events: the caller must not modify them afterwards.
func (t *tail) add(events []eventstore.RecordedEvent) {
	if len(events) == 0 {
		return
	}
	seg := tailSegment{events: events[:len(events):len(events)]}
	for _, e := range events {
		seg.bytes += payload(e)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.segments); n > 0 {
		last := t.segments[n-1]
		if last.first()+uint64(len(last.events)) != seg.first() {
			t.segments, t.events, t.bytes = nil, 0, 0
		}
	}
	t.segments = append(t.segments, seg)
	t.events += len(seg.events)
	t.bytes += seg.bytes
	drop := 0
	for drop < len(t.segments)-1 && (t.events > tailEvents || t.bytes > tailBytes) {
		t.events -= len(t.segments[drop].events)
		t.bytes -= t.segments[drop].bytes
		drop++
	}
	if drop > 0 {
		// Reslice rather than compact: a compaction copied every segment
		// held (about 2,000 under creates) on every add. Clearing the
		// dropped entries releases their events; the array's unused front
		// goes when a later append outgrows it and copies only the live
		// segments.
		clear(t.segments[:drop])
		t.segments = t.segments[drop:]
	}
}

// read returns the events after position after, up to head (inclusive),
// that filter selects, at most maxBatchEvents of them. last is the position
// of the last event it looked at. ok is false when the tail does not hold
// the event right after after: the caller reads pebble instead. Events of
// one segment that the filter all selects are a slice of it; a batch is
// copied only when it spans segments or the filter drops some events.
func (t *tail) read(after, head uint64, filter eventstore.Filter) (events []eventstore.RecordedEvent, last uint64, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	// Live subscribers read the newest segments: search from the end.
	i := len(t.segments) - 1
	for i >= 0 && t.segments[i].first() > after+1 {
		i--
	}
	if i < 0 || after+1 >= t.segments[i].first()+uint64(len(t.segments[i].events)) {
		return nil, 0, false
	}
	filtered := len(filter.StreamPrefixes) > 0 || len(filter.EventTypePrefixes) > 0
	last = after
	copied := false // events is a copy the caller owns, not a slice of a segment
	for ; i < len(t.segments) && last < head; i++ {
		seg := t.segments[i]
		from := last + 1 - seg.first()
		to := min(uint64(len(seg.events)), head-seg.first()+1, from+uint64(maxBatchEvents-len(events)))
		window := seg.events[from:to:to]
		last = seg.first() + to - 1
		if filtered {
			window = matching(window, filter)
		}
		switch {
		case len(window) == 0:
		case len(events) == 0:
			events = window
		case !copied:
			events = append(append(make([]eventstore.RecordedEvent, 0, len(events)+len(window)), events...), window...)
			copied = true
		default:
			events = append(events, window...)
		}
		if len(events) >= maxBatchEvents || to < uint64(len(seg.events)) {
			// The bound, or the head, cut this group: the next read goes
			// on from last. (With a filter, events may hold fewer than the
			// bound although its window reached it.)
			break
		}
	}
	return events, last, true
}

// matching returns the events of window that filter selects: window
// itself when it selects all of them, else a copy of exactly those.
func matching(window []eventstore.RecordedEvent, filter eventstore.Filter) []eventstore.RecordedEvent {
	n := 0
	for _, e := range window {
		if filter.Match(e.Stream, e.Type) {
			n++
		}
	}
	if n == len(window) || n == 0 {
		return window[:n]
	}
	out := make([]eventstore.RecordedEvent, 0, n)
	for _, e := range window {
		if filter.Match(e.Stream, e.Type) {
			out = append(out, e)
		}
	}
	return out
}

func payload(e eventstore.RecordedEvent) int { return len(e.Data) + len(e.Metadata) }

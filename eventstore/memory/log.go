package memory

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"tvsm/eventstore"
)

// eventLog is the data of a store, shared by a store and those Reopen makes
// of it. Readers may keep slices of the log after they release the lock, so
// an entry a reader may hold is never written again: appends only add
// entries after the end, and Tombstone replaces the chunks it changes with
// copies (copy on write) rather than changing them in place.
type eventLog struct {
	mu sync.RWMutex
	// chunks hold the log, chunkSize entries each (the last one fewer): the
	// event at position p is chunks[(p-1)/chunkSize][(p-1)%chunkSize]. An
	// entry whose Stream is "" is an event of a tombstoned stream, of
	// which only the position is left.
	chunks     [][]eventstore.RecordedEvent
	n          uint64                          // events in the log (the head)
	streams    map[string][]uint64             // stream -> positions of its events, by revision
	tombstoned map[string]struct{}             // streams deleted for good
	ids        map[eventstore.EventID]storedID // every stored event id, tombstoned ones included
	wake       chan struct{}                   // closed and replaced on every append
}

// chunkSize is the number of log entries per chunk: what Tombstone copies
// for each chunk that holds an event of the stream.
const chunkSize = 1 << 12

// storedID is where an event id is stored.
type storedID struct {
	stream string
	rev    uint64
	pos    uint64
}

func newEventLog() *eventLog {
	return &eventLog{
		streams:    map[string][]uint64{},
		tombstoned: map[string]struct{}{},
		ids:        map[eventstore.EventID]storedID{},
		wake:       make(chan struct{}),
	}
}

// at returns the entry at position p (1 <= p <= n). The caller holds mu.
func (l *eventLog) at(p uint64) *eventstore.RecordedEvent {
	return &l.chunks[(p-1)/chunkSize][(p-1)%chunkSize]
}

func (l *eventLog) head() eventstore.Position {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return position(l.n)
}

// watch returns the head and a channel closed on the next append. Waiters
// take both together, so an append between their read and their wait is
// never missed.
func (l *eventLog) watch() (uint64, <-chan struct{}) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.n, l.wake
}

// window returns the entries after position after, at most n of them and
// none past the end of the chunk that holds the first, as a slice the
// caller may keep but not extend. Entries of tombstoned streams are among
// them (see eventLog).
func (l *eventLog) window(after uint64, n int) []eventstore.RecordedEvent {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if after >= l.n {
		return nil
	}
	chunk := l.chunks[after/chunkSize]
	from := after % chunkSize
	to := min(uint64(len(chunk)), from+uint64(n))
	// The capacity ends at to: appending to the window must never write
	// into the log's array after it.
	return chunk[from:to:to]
}

// readStream returns copies of up to max events (all when max <= 0) of
// stream from revision start on. It fails with ErrStreamNotFound or
// ErrStreamDeleted.
func (l *eventLog) readStream(stream string, start uint64, max int) ([]eventstore.RecordedEvent, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	positions, ok := l.streams[stream]
	if !ok {
		if _, gone := l.tombstoned[stream]; gone {
			return nil, eventstore.ErrStreamDeleted
		}
		return nil, eventstore.ErrStreamNotFound
	}
	if start >= uint64(len(positions)) {
		return nil, nil
	}
	positions = positions[start:]
	if max > 0 && len(positions) > max {
		positions = positions[:max]
	}
	size := 0
	for _, p := range positions {
		e := l.at(p)
		size += len(e.Data) + len(e.Metadata)
	}
	// One buffer for all payloads, each capped so that appending to one
	// event's Data cannot overwrite the next one's.
	buf := make([]byte, 0, size)
	out := make([]eventstore.RecordedEvent, len(positions))
	for i, p := range positions {
		e := *l.at(p)
		if len(e.Data) > 0 {
			buf = append(buf, e.Data...)
			e.Data = buf[len(buf)-len(e.Data) : len(buf) : len(buf)]
		}
		if len(e.Metadata) > 0 {
			buf = append(buf, e.Metadata...)
			e.Metadata = buf[len(buf)-len(e.Metadata) : len(buf) : len(buf)]
		}
		out[i] = e
	}
	return out, nil
}

// append checks every part against the log and stores all of them or none:
// a repeat of stored events is answered with where they are, as the port
// documents. wrote tells which of the two it was. It fails with ErrClosed
// once closing is closed, and with ErrStreamDeleted when a part is for a
// tombstoned stream, before anything else is looked at: not even a retry
// of what the stream held is answered.
func (l *eventLog) append(closing <-chan struct{}, parts []eventstore.StreamAppend, results []eventstore.AppendResult, now time.Time) (wrote bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-closing:
		return false, fmt.Errorf("memory: append: %w", eventstore.ErrClosed)
	default:
	}
	for _, p := range parts {
		if _, gone := l.tombstoned[p.Stream]; gone {
			return false, fmt.Errorf("memory: append to %q: %w", p.Stream, eventstore.ErrStreamDeleted)
		}
	}
	if done, err := l.retried(parts, results); done || err != nil {
		return false, err
	}
	var few [4]uint64 // the first revision of each part
	firsts := few[:0]
	for _, p := range parts {
		first, err := l.firstRevision(p)
		if err != nil {
			return false, err
		}
		firsts = append(firsts, first)
	}
	created := time.Unix(0, now.UnixNano()).UTC() // as the embedded store reads it back
	for i, p := range parts {
		results[i] = l.write(p, firsts[i], created)
	}
	close(l.wake)
	l.wake = make(chan struct{})
	return true, nil
}

// retried recognises a repeated append: when every part is a repeat of
// stored events (see retriedPart), the append is a no-op answered with the
// original results. When only some parts are, it is a conflict, as is a
// part whose ids are stored otherwise.
func (l *eventLog) retried(parts []eventstore.StreamAppend, results []eventstore.AppendResult) (bool, error) {
	repeats := 0
	for i, p := range parts {
		res, repeat, err := l.retriedPart(p)
		if err != nil {
			return false, err
		}
		if repeat {
			results[i] = res
			repeats++
		}
	}
	switch repeats {
	case 0:
		return false, nil
	case len(parts):
		return true, nil
	}
	return false, fmt.Errorf("%w: %d of the %d parts of a multi-stream append are already stored, the others not",
		eventstore.ErrDuplicateEventID, repeats, len(parts))
}

// retriedPart reports whether every event id of p is already stored as
// exactly these events of this stream, in order, where p's expectation
// puts them, and answers with where they are. Ids stored otherwise make the
// part a conflict.
func (l *eventLog) retriedPart(p eventstore.StreamAppend) (eventstore.AppendResult, bool, error) {
	var first, last storedID
	found := 0
	for _, e := range p.Events {
		st, ok := l.ids[e.ID]
		if !ok {
			continue
		}
		if found == 0 {
			first = st
		}
		if st.stream != p.Stream || st.rev != first.rev+uint64(found) {
			return eventstore.AppendResult{}, false, fmt.Errorf("%w: append %q: its event ids are already stored, but not as these events of this stream",
				eventstore.ErrDuplicateEventID, p.Stream)
		}
		last = st
		found++
	}
	switch {
	case found == 0:
		return eventstore.AppendResult{}, false, nil
	case found != len(p.Events):
		return eventstore.AppendResult{}, false, fmt.Errorf("%w: append %q: some of its event ids are already stored, the others not",
			eventstore.ErrDuplicateEventID, p.Stream)
	case !p.Expect.Places(first.rev):
		return eventstore.AppendResult{}, false, fmt.Errorf("%w: append %q: its events are stored from revision %d, not where expectation %v puts them",
			eventstore.ErrDuplicateEventID, p.Stream, first.rev, p.Expect)
	}
	return eventstore.AppendResult{NextExpected: last.rev, Position: position(last.pos)}, true, nil
}

// firstRevision checks p's expectation and returns the revision p's first
// event gets.
func (l *eventLog) firstRevision(p eventstore.StreamAppend) (uint64, error) {
	n := uint64(len(l.streams[p.Stream]))
	exists := n > 0
	if !p.Expect.Satisfied(n-1, exists) {
		actual := eventstore.NoStream
		if exists {
			actual = eventstore.Exact(n - 1)
		}
		return 0, &eventstore.WrongRevisionError{Stream: p.Stream, Expected: p.Expect, Actual: actual}
	}
	return n, nil
}

// write stores p's events at the next positions, the first at revision rev
// of its stream, with their payloads copied: the caller's buffers are not
// the store's to keep.
func (l *eventLog) write(p eventstore.StreamAppend, rev uint64, created time.Time) eventstore.AppendResult {
	positions := l.streams[p.Stream]
	for _, e := range p.Events {
		pos := l.n + 1
		r := eventstore.RecordedEvent{
			ID: e.ID, Stream: p.Stream, Revision: rev, Position: position(pos),
			Type: e.Type, Created: created,
		}
		if len(e.Data) > 0 {
			r.Data = append(make([]byte, 0, len(e.Data)), e.Data...)
		}
		if len(e.Metadata) > 0 {
			r.Metadata = append(make([]byte, 0, len(e.Metadata)), e.Metadata...)
		}
		last := len(l.chunks) - 1
		if last < 0 || len(l.chunks[last]) == chunkSize {
			l.chunks = append(l.chunks, nil)
			last++
		}
		l.chunks[last] = append(l.chunks[last], r)
		l.n = pos
		positions = append(positions, pos)
		l.ids[e.ID] = storedID{stream: p.Stream, rev: rev, pos: pos}
		rev++
	}
	l.streams[p.Stream] = positions
	return eventstore.AppendResult{NextExpected: rev - 1, Position: position(l.n)}
}

// tombstone deletes stream for good: its name is refused from now on, and
// its events are dropped from the log, payloads and all, leaving only
// their positions (so positions, the head and checkpoints stay as they
// were). Their ids stay taken. It fails with ErrClosed once closing is
// closed.
func (l *eventLog) tombstone(closing <-chan struct{}, stream string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-closing:
		return fmt.Errorf("memory: tombstone: %w", eventstore.ErrClosed)
	default:
	}
	if _, gone := l.tombstoned[stream]; gone {
		return nil
	}
	copied := map[uint64]bool{}
	for _, p := range l.streams[stream] {
		c := (p - 1) / chunkSize
		if !copied[c] {
			// Readers may hold slices of the chunk: write a copy.
			l.chunks[c] = slices.Clone(l.chunks[c])
			copied[c] = true
		}
		*l.at(p) = eventstore.RecordedEvent{Position: position(p)}
	}
	delete(l.streams, stream)
	l.tombstoned[stream] = struct{}{}
	return nil
}

// position is the dense position of sequence number n.
func position(n uint64) eventstore.Position { return eventstore.Position{Commit: n, Prepare: n} }

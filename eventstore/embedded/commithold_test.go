package embedded

import (
	"testing"
	"time"
)

var holdEpoch = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

const holdFsync = 200 * time.Microsecond

// holdCase asks commitHold h about a group of size appends.
func holdCase(t *testing.T, h *commitHold, size int, syncing bool, fsync time.Duration, wantHold bool, wantDeadline time.Time) {
	t.Helper()
	hold, deadline := h.hold(size, syncing, holdEpoch, fsync)
	if hold != wantHold || !deadline.Equal(wantDeadline) {
		t.Fatalf("expecting %d, group of %d, syncing %v, fsync %v: hold %v until %v; want %v until %v",
			h.expected, size, syncing, fsync, hold, deadline, wantHold, wantDeadline)
	}
}

func TestCommitHoldNeverHoldsALoneAppender(t *testing.T) {
	var h commitHold
	for range 3 { // one append after another, each answered before the next
		h.arrived(1)
		holdCase(t, &h, 1, false, holdFsync, false, time.Time{})
		holdCase(t, &h, 1, true, holdFsync, false, time.Time{})
	}
}

func TestCommitHoldWaitsForEveryAppenderSeenInFlight(t *testing.T) {
	var h commitHold
	// 16 appenders: one group of 1 went to its fsync, 15 came meanwhile.
	for inFlight := 1; inFlight <= 16; inFlight++ {
		h.arrived(inFlight)
	}
	if h.expected != 16 {
		t.Fatalf("expected %d after 16 in flight at once, want 16", h.expected)
	}
	// While the first group's fsync runs, the 15 wait for it to end,
	// without a timer: its end is what lets the 16th come back.
	holdCase(t, &h, 15, true, holdFsync, true, time.Time{})
	// Once it ended, they wait for the 16th until one fsync's time has
	// passed since the last of them came (or the fsync ended).
	holdCase(t, &h, 15, false, holdFsync, true, holdEpoch.Add(holdFsync))
	// It came back: the group goes to its fsync with all 16.
	h.arrived(16)
	holdCase(t, &h, 16, false, holdFsync, false, time.Time{})
	holdCase(t, &h, 16, true, holdFsync, false, time.Time{})
	// Fewer appends in flight later do not lower what is expected.
	h.arrived(3)
	holdCase(t, &h, 3, false, holdFsync, true, holdEpoch.Add(holdFsync))
}

func TestCommitHoldThatRanOutExpectsTheAppendsThatCame(t *testing.T) {
	var h commitHold
	h.arrived(8)
	holdCase(t, &h, 5, false, holdFsync, true, holdEpoch.Add(holdFsync))
	h.ranOut(5) // three appenders stopped
	holdCase(t, &h, 5, false, holdFsync, false, time.Time{})
	holdCase(t, &h, 4, false, holdFsync, true, holdEpoch.Add(holdFsync))
	h.ranOut(0)
	if h.expected != 1 {
		t.Fatalf("expected %d after a hold ran out empty, want 1", h.expected)
	}
	h.arrived(6) // more appenders again
	holdCase(t, &h, 5, false, holdFsync, true, holdEpoch.Add(holdFsync))
}

func TestCommitHoldLimit(t *testing.T) {
	h := commitHold{limit: 50 * time.Microsecond}
	h.arrived(4)
	// A limit below the fsync time bounds the hold.
	holdCase(t, &h, 2, false, holdFsync, true, holdEpoch.Add(50*time.Microsecond))
	// One above it does not lengthen it.
	h.limit = time.Millisecond
	holdCase(t, &h, 2, false, holdFsync, true, holdEpoch.Add(holdFsync))
	// No fsync measured yet: no hold once none runs.
	holdCase(t, &h, 2, false, 0, false, time.Time{})
	// A negative limit: never a hold, even behind a running fsync.
	h.limit = -1
	holdCase(t, &h, 2, true, holdFsync, false, time.Time{})
	holdCase(t, &h, 2, false, holdFsync, false, time.Time{})
}

func TestWALSyncsAverage(t *testing.T) {
	var w walSyncs
	if got := w.duration(); got != 0 {
		t.Fatalf("before any fsync: %v, want 0", got)
	}
	w.observe(800 * time.Microsecond)
	if got := w.duration(); got != 800*time.Microsecond {
		t.Fatalf("after one fsync of 800µs: %v", got)
	}
	for range 100 {
		w.observe(200 * time.Microsecond)
	}
	if got := w.duration(); got < 199*time.Microsecond || got > 201*time.Microsecond {
		t.Fatalf("after many fsyncs of 200µs: %v, want about 200µs", got)
	}
}

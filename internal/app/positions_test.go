package app

import (
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/projections"
)

// TestTrackWritesNotesTheNewestPosition: a request's WrittenPositions ends
// at the newest position its commands reached, an append's or, for a
// command that changed nothing, the newest event of the state it was
// decided on; WaitApplied notes what it waited for. Contexts without a
// tracker note nothing.
func TestTrackWritesNotesTheNewestPosition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.executor(nil, Options{})

	created := mustExec(t, x, "counter-1", create{Name: "a"})
	other := mustExec(t, x, "counter-2", create{Name: "b"})

	ctx, written := TrackWrites(e.ctx)
	if !written.Latest().IsZero() {
		t.Fatalf("a new tracker holds %v", written.Latest())
	}
	// A command that changes nothing is at its stream's newest event.
	if _, err := Execute(ctx, x, "counter-1", counterDecider, any(add{N: 0}), meta("noop")); err != nil {
		t.Fatal(err)
	}
	if got := written.Latest(); got != created.Position {
		t.Fatalf("after a no-op: %v, want the stream's newest event %v", got, created.Position)
	}
	res, err := Execute(ctx, x, "counter-2", counterDecider, any(add{N: 1}), meta("add"))
	if err != nil {
		t.Fatal(err)
	}
	if got := written.Latest(); got != res.Position || !res.Position.After(other.Position) {
		t.Fatalf("after an append: %v, want its position %v", got, res.Position)
	}
	// An older position does not move it back; WaitApplied notes.
	var applied projections.Progress
	applied.Advance(res.Position)
	if err := WaitApplied(ctx, &applied, created.Position, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := written.Latest(); got != res.Position {
		t.Fatalf("after waiting for an older position: %v, want %v", got, res.Position)
	}
	later := eventstore.Position{Commit: res.Position.Commit + 10, Prepare: res.Position.Prepare + 10}
	if err := WaitApplied(ctx, &applied, later, time.Millisecond); err == nil {
		t.Fatal("waiting for a position never applied succeeded")
	}
	if got := written.Latest(); got != later {
		t.Fatalf("after a write whose wait timed out: %v, want %v (the write stands)", got, later)
	}
	// Outside a tracked request nothing is noted anywhere.
	mustExec(t, x, "counter-1", add{N: 2})
	if got := written.Latest(); got != later {
		t.Fatalf("an untracked command moved the tracker to %v", got)
	}
}

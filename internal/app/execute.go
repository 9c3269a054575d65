package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Result is the outcome of a command.
type Result[S any] struct {
	// State is the aggregate after the command. It may be shared with the
	// executor's cache: treat it as read-only.
	State S
	// Revision is the stream revision State reflects: Exact(n) for the
	// stream's last event, NoStream when the stream has no events.
	Revision eventstore.Revision
	// Position is the log position of the newest event State reflects (the
	// command's last event when it appended): wait for it to read your own
	// write from a projection. Zero when the stream has no events.
	Position eventstore.Position
	// Events are the events the command appended, with their metadata; empty
	// when it changed nothing. On a keyed retry of a command an earlier
	// attempt already applied, they are the events that attempt appended.
	Events []domain.Envelope
}

// Execute runs cmd against the aggregate in stream: it loads the state
// (from the cache, caught up with the stream's tail when needed, or by
// reading the stream), calls d.Decide with the command time, appends the
// resulting events with the expected revision the decision was made on, and
// when another writer got there first, reloads and decides again, up to
// Options.MaxAttempts times with a short jittered pause (the executor's
// record.Policy); then it fails with an error wrapping ErrConflict.
//
// A decision with no events appends nothing and returns the current state.
// A decision error is returned wrapped in an *OpError with Op "decide" and
// is matched with errors.Is as usual. Before a decision made on a cached
// state is trusted without an append (no events, or an error), the stream's
// tail is read, so a change made by another node is never missed.
//
// Commands on one stream are serialised within the process. Decide and
// Evolve must be pure: states are shared between the cache and callers (a
// state type with a Clone() S method is cloned before it is evolved).
// Metadata (occurred-at, actor, request id) comes from meta; meta.Now is
// filled from the executor's clock when zero. How event ids are chosen, and
// what a keyed retry does, is described in the package documentation.
func Execute[S, C any](ctx context.Context, x *Executor, stream string, d domain.Decider[S, C], cmd C, meta RequestMeta) (Result[S], error) {
	meta.Now = x.commandTime(meta)
	if err := eventstore.ValidateStreamName(stream); err != nil {
		return Result[S]{}, opError("execute", stream, err)
	}
	nm := naming(ctx, stream, cmd, meta)
	held, err := x.locks.lock(ctx, stream)
	if err != nil {
		return Result[S]{}, opError("execute", stream, err)
	}
	defer held.unlock()

	run := execution[S, C]{x: x, stream: stream, d: d, cmd: cmd, meta: meta, nm: nm}
	if nm.keyed {
		run.found = &detection{naming: nm}
	}
	if err := run.load(ctx); err != nil {
		return Result[S]{}, err
	}
	for failures := 0; ; {
		events, err := run.decide(ctx)
		if err != nil {
			return Result[S]{}, err
		}
		if len(events) == 0 {
			notePosition(ctx, run.outcome.Position)
			return run.outcome, nil
		}
		retry, err := run.appendOrRetry(ctx, events, &failures)
		if err != nil {
			return Result[S]{}, err
		}
		if !retry {
			notePosition(ctx, run.outcome.Position)
			return run.outcome, nil
		}
	}
}

// execution is one Execute call: the command, and the state it is decided
// on with how far in the stream that state is.
type execution[S, C any] struct {
	x      *Executor
	stream string
	d      domain.Decider[S, C]
	cmd    C
	meta   RequestMeta
	nm     eventNaming
	found  *detection // nil unless the command is keyed

	snap snapshot
	st   S
	// verified: snap is known to be the stream's head (read just now), not
	// a cached, possibly old, prefix of it.
	verified bool
	outcome  Result[S]
}

// decide decides the command on the state and returns the events to
// append; none means the command is done, with run.outcome. A keyed command
// an earlier attempt applied is not decided again: its outcome is that
// attempt's. A decision made on an unverified state that appends nothing, or
// fails, is trusted only after the stream's tail is read (one cheap read), so
// a change made by another node is never missed; when the tail has events,
// the command is decided again on the head. A decision that appends is
// checked by the append's expected revision instead.
func (run *execution[S, C]) decide(ctx context.Context) ([]domain.Event, error) {
	for {
		if run.found.applied() {
			run.x.cache.put(run.stream, run.snap)
			run.outcome = Result[S]{State: run.st, Revision: revisionOf(run.snap), Position: run.snap.pos, Events: run.found.events}
			return nil, nil
		}
		events, derr := run.d.Decide(run.st, run.cmd, run.meta.Now)
		if !run.verified && (derr != nil || len(events) == 0) {
			moved, err := run.readTail(ctx)
			if err != nil {
				return nil, err
			}
			run.verified = true
			if moved {
				continue
			}
		}
		if derr != nil {
			run.x.cache.put(run.stream, run.snap)
			return nil, opError("decide", run.stream, derr)
		}
		if len(events) == 0 {
			run.x.cache.put(run.stream, run.snap)
			run.outcome = Result[S]{State: run.st, Revision: revisionOf(run.snap), Position: run.snap.pos}
		}
		return events, nil
	}
}

// appendOrRetry appends events with the expected revision they were decided
// on; an append with an unknown outcome is resent as it is (record.Log).
// When another writer got there first, or a keyed command's ids turn out to
// be stored already (so the earlier attempt must be found), it counts a
// failure in *failures, pauses and reads the stream again, and retry is true:
// decide again. After Options.MaxAttempts failures it gives up with
// ErrConflict.
func (run *execution[S, C]) appendOrRetry(ctx context.Context, events []domain.Event, failures *int) (retry bool, err error) {
	x, stream := run.x, run.stream
	expect := revisionOf(run.snap)
	b, err := x.rec.Encode(events, run.meta.metadata(), run.nm.ids(expect))
	if err != nil {
		return false, opError("encode", stream, err)
	}
	res, err := x.rec.AppendCounting(ctx, failures, stream, expect, b)
	if err == nil {
		run.st = run.d.Fold(run.st, events...)
		run.snap = snapshot{state: run.st, exists: true, rev: res.NextExpected, pos: res.Position}
		x.cache.put(stream, run.snap)
		run.outcome = Result[S]{State: run.st, Revision: eventstore.Exact(res.NextExpected), Position: res.Position, Events: b.Envelopes()}
		return false, nil
	}
	x.cache.drop(stream)
	lost := errors.Is(err, eventstore.ErrWrongExpectedRevision) ||
		(run.nm.keyed && errors.Is(err, eventstore.ErrDuplicateEventID)) // our ids are stored: find them
	if !lost {
		return false, opError("append", stream, err)
	}
	*failures++
	if *failures >= x.rec.Policy.Attempts() {
		return false, opError("execute", stream, fmt.Errorf("%w: gave up after %d attempts: %w", ErrConflict, *failures, err))
	}
	if err := x.rec.Policy.Pause(ctx, *failures); err != nil {
		return false, opError("execute", stream, err)
	}
	if err := run.reload(ctx); err != nil {
		return false, err
	}
	return true, run.awaitReported(ctx, err)
}

// reportedWait bounds how long a conflict's reload waits for the revision
// the store reported (awaitReported).
const reportedWait = 5 * time.Second

// awaitReported reads the stream again, pausing between reads, until the
// state reaches the revision that lost, a wrong-revision error, says the
// stream is at. A store may refuse an append because of an event its
// readers do not show yet: EventStoreDB's protocol double checks the
// expected revision against every event written and shows readers only
// those fsynced, and a read served by an EventStoreDB follower may lag the
// leader that refused the append. Deciding again on the older state would
// only lose again: several nodes starting at once on a new store all tried
// to create the first superadmin, and those that lost gave up after their
// five quick attempts. After reportedWait the next decision goes ahead
// anyway and may lose again.
func (run *execution[S, C]) awaitReported(ctx context.Context, lost error) error {
	var wrong *eventstore.WrongRevisionError
	if !errors.As(lost, &wrong) {
		return nil
	}
	want, ok := wrong.Actual.Exact()
	if !ok {
		return nil
	}
	deadline := time.Now().Add(reportedWait)
	for tries := 1; !run.snap.exists || run.snap.rev < want; tries++ {
		if time.Now().After(deadline) {
			return nil
		}
		if err := run.x.rec.Policy.Pause(ctx, tries); err != nil {
			return opError("execute", run.stream, err)
		}
		if _, err := run.readTail(ctx); err != nil {
			return err
		}
	}
	return nil
}

// commandTime is the time a command is decided at: meta.Now in UTC without
// a monotonic reading, or the executor's clock when it is zero.
func (x *Executor) commandTime(meta RequestMeta) time.Time {
	if meta.Now.IsZero() {
		return x.now()
	}
	return meta.Now.UTC().Round(0)
}

func revisionOf(s snapshot) eventstore.Revision { return s.head().Expect() }

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
// Options.MaxAttempts times with a short jittered pause; then it fails with
// an error wrapping ErrConflict.
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

	l := &loader[S, C]{x: x, stream: stream, d: d}
	if nm.keyed {
		l.found = &detection{naming: nm}
	}
	var (
		snap      snapshot
		st        S
		fromCache bool
	)
	if !nm.recovering { // a recovering command must see every event id
		if c, ok := x.cache.get(stream); ok {
			if v, ok := c.state.(S); ok {
				snap, st, fromCache = c, cloneState(v), true
			}
		} else if meta.NewStream {
			// Trusted like a cached state: unverified until an append or a read.
			st, fromCache = d.Initial(), true
			snap = snapshot{state: st}
		}
	}
	if !fromCache {
		if snap, st, err = l.full(ctx); err != nil {
			return Result[S]{}, err
		}
	}
	verified := !fromCache // snap is known to be the stream's head (read just now)

	for failures := 0; ; {
		if l.found != nil && len(l.found.events) > 0 {
			// An earlier attempt of this keyed command applied it already.
			x.cache.put(stream, snap)
			return Result[S]{State: st, Revision: revisionOf(snap), Position: snap.pos, Events: l.found.events}, nil
		}
		events, derr := d.Decide(st, cmd, meta.Now)
		if !verified && (derr != nil || len(events) == 0) {
			n, err := l.tail(ctx, &snap, &st)
			if err != nil {
				return Result[S]{}, err
			}
			verified = true
			if n > 0 {
				continue // the cache was behind: decide again on the head
			}
		}
		if derr != nil {
			x.cache.put(stream, snap)
			return Result[S]{}, opError("decide", stream, derr)
		}
		if len(events) == 0 {
			x.cache.put(stream, snap)
			return Result[S]{State: st, Revision: revisionOf(snap), Position: snap.pos}, nil
		}

		expect := eventstore.NoStream
		if snap.exists {
			expect = eventstore.Exact(snap.rev)
		}
		data, envs, err := x.encode(events, meta, nm.ids(expect, len(events)))
		if err != nil {
			return Result[S]{}, opError("encode", stream, err)
		}
		res, err := x.appendResending(ctx, stream, expect, data, &failures)
		if err == nil {
			st = d.Fold(st, events...)
			snap = snapshot{state: st, exists: true, rev: res.NextExpected, pos: res.Position}
			x.cache.put(stream, snap)
			return Result[S]{State: st, Revision: eventstore.Exact(res.NextExpected), Position: res.Position, Events: envs}, nil
		}
		x.cache.drop(stream)
		lost := errors.Is(err, eventstore.ErrWrongExpectedRevision) ||
			(nm.keyed && errors.Is(err, eventstore.ErrDuplicateEventID)) // our ids are stored: find them
		if !lost {
			return Result[S]{}, opError("append", stream, err)
		}
		failures++
		if failures >= x.opts.MaxAttempts {
			return Result[S]{}, opError("execute", stream, fmt.Errorf("%w: gave up after %d attempts: %w", ErrConflict, failures, err))
		}
		if err := x.pause(ctx, failures); err != nil {
			return Result[S]{}, opError("execute", stream, err)
		}
		if snap, st, err = l.full(ctx); err != nil {
			return Result[S]{}, err
		}
		verified = true
	}
}

// appendResending appends, and when the outcome is unknown (an error that
// is neither a verdict of the store nor the caller giving up) sends the very
// same append again: same ids, same expectation, so if the first one was
// stored the store answers with its result instead of storing twice. Each
// resend counts as a failure towards MaxAttempts.
func (x *Executor) appendResending(ctx context.Context, stream string, expect eventstore.Revision, data []eventstore.EventData, failures *int) (eventstore.AppendResult, error) {
	var res eventstore.AppendResult
	err := x.resending(ctx, failures, func() (err error) {
		res, err = x.store.Append(ctx, stream, expect, data...)
		return err
	})
	return res, err
}

// resending calls send, and again after a pause while its outcome is
// unknown, counting each resend in failures up to MaxAttempts.
func (x *Executor) resending(ctx context.Context, failures *int, send func() error) error {
	for {
		err := send()
		if err == nil || !outcomeUnknown(ctx, err) {
			return err
		}
		*failures++
		if *failures >= x.opts.MaxAttempts {
			return err
		}
		if perr := x.pause(ctx, *failures); perr != nil {
			return err
		}
	}
}

// commandTime is the time a command is decided at: meta.Now in UTC without
// a monotonic reading, or the executor's clock when it is zero.
func (x *Executor) commandTime(meta RequestMeta) time.Time {
	if meta.Now.IsZero() {
		return x.now()
	}
	return meta.Now.UTC().Round(0)
}

// outcomeUnknown reports whether an append error leaves open whether the
// events were stored, so that resending the same append is the way to find
// out: anything but the store's verdicts and the caller's own cancellation.
func outcomeUnknown(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	for _, verdict := range []error{
		eventstore.ErrWrongExpectedRevision, eventstore.ErrDuplicateEventID,
		eventstore.ErrInvalidAppend, eventstore.ErrClosed, eventstore.ErrStreamNotFound,
	} {
		if errors.Is(err, verdict) {
			return false
		}
	}
	return true
}

// encode turns decided events into what the store appends, all carrying the
// command's metadata.
func (x *Executor) encode(events []domain.Event, meta RequestMeta, ids []eventstore.EventID) ([]eventstore.EventData, []domain.Envelope, error) {
	m := domain.Metadata{OccurredAt: meta.Now, Actor: meta.Actor, RequestID: meta.RequestID}
	envs := m.Wrap(events...)
	if len(envs) == 0 {
		return nil, nil, nil
	}
	md, err := domain.EncodeMetadata(envs[0])
	if err != nil {
		return nil, nil, err
	}
	data, err := x.encodeWith(events, md, ids)
	if err != nil {
		return nil, nil, err
	}
	return data, envs, nil
}

// encodeWith encodes events with metadata md, already encoded: the events
// of one command share it, and so do both parts of ExecuteReserving.
func (x *Executor) encodeWith(events []domain.Event, md []byte, ids []eventstore.EventID) ([]eventstore.EventData, error) {
	data := make([]eventstore.EventData, len(events))
	for i, e := range events {
		typ, body, err := x.reg.Encode(e)
		if err != nil {
			return nil, err
		}
		data[i] = eventstore.EventData{ID: ids[i], Type: typ, Data: body, Metadata: md}
	}
	return data, nil
}

func revisionOf(s snapshot) eventstore.Revision {
	if !s.exists {
		return eventstore.NoStream
	}
	return eventstore.Exact(s.rev)
}

package app

import (
	"context"
	"errors"

	"tvsm/domain"
	"tvsm/eventstore"
)

// ExecuteReserving creates the owner of a unique name together with the
// name's reservation, in one atomic append, when the store can do that
// (eventstore.MultiAppender): cmd runs on owner, a stream that was just named
// (as with RequestMeta.NewStream), and the reservation stream gets
// ReservationTaken for owner in the same durable write. A create then waits
// for one fsync instead of two, and a failed create leaves no reservation
// behind to release.
//
// handled is false when this path does not apply, and nothing was appended:
// the store cannot append atomically, the command is keyed by an
// idempotency key (whose event naming and recovery Execute owns), the name
// is not free as far as this process knows, or a concurrent writer changed
// either stream first. The caller then reserves with Reserve and runs
// Execute, which handle every one of those cases. When handled is true, err
// is the outcome: nil, a decision error of cmd (nothing appended), or an
// append error.
func ExecuteReserving[S, C any](ctx context.Context, x *Executor, nameStream, owner string, d domain.Decider[S, C], cmd C, meta RequestMeta) (res Result[S], handled bool, err error) {
	if _, ok := x.rec.Store.(eventstore.MultiAppender); !ok || meta.IdempotencyKey != "" || scopeFrom(ctx) != nil {
		return Result[S]{}, false, nil
	}
	meta.Now = x.commandTime(meta)
	for _, stream := range []string{nameStream, owner} {
		if err := eventstore.ValidateStreamName(stream); err != nil {
			return Result[S]{}, true, opError("execute", stream, err)
		}
	}
	locks, err := x.lockBoth(ctx, nameStream, owner)
	if err != nil {
		return Result[S]{}, true, opError("execute", owner, err)
	}
	defer locks.unlock()

	// The reservation's state as this process knows it, unverified: the
	// append's expectation checks it. A name never seen is taken as free
	// without a read; if it is not, the append fails and Reserve reads it.
	held := snapshot{state: reservationDecider.Initial()}
	c, known := x.cache.get(nameStream)
	if known {
		held = c
	}
	taken, ok := held.state.(reservation)
	if !ok {
		return Result[S]{}, false, nil
	}
	take, derr := reservationDecider.Decide(taken, reservationCmd{Take: true, Owner: owner}, meta.Now)
	if derr != nil || len(take) == 0 {
		return Result[S]{}, false, nil // held by someone: Reserve decides on the stream itself
	}
	events, derr := d.Decide(d.Initial(), cmd, meta.Now)
	if derr != nil {
		return Result[S]{}, true, opError("decide", owner, derr)
	}
	if len(events) == 0 {
		return Result[S]{}, false, nil
	}

	owned, err := x.rec.Encode(events, meta.metadata(), requestNaming(owner, cmd, meta).ids(eventstore.NoStream))
	if err != nil {
		return Result[S]{}, true, opError("encode", owner, err)
	}
	reservationExpect := revisionOf(held)
	// Same request, same time: the reservation carries the owner's metadata.
	taking, err := x.rec.EncodeLike(owned, take, requestNaming(nameStream, reservationCmd{Take: true, Owner: owner}, meta).ids(reservationExpect))
	if err != nil {
		return Result[S]{}, true, opError("encode", nameStream, err)
	}
	results, err := x.rec.AppendMulti(ctx,
		eventstore.StreamAppend{Stream: nameStream, Expect: reservationExpect, Events: taking.Data()},
		eventstore.StreamAppend{Stream: owner, Expect: eventstore.NoStream, Events: owned.Data()})
	if err != nil {
		x.cache.drop(nameStream)
		if errors.Is(err, eventstore.ErrWrongExpectedRevision) || errors.Is(err, eventstore.ErrDuplicateEventID) {
			return Result[S]{}, false, nil // another writer was first: decide again on what is stored
		}
		return Result[S]{}, true, opError("append", owner, err)
	}
	// A name first taken here is not cached: it is read again only when its
	// owner changes or releases it, and a cache entry for each new name
	// would cost an insert and an eviction on every create. A name cached
	// before (released, now taken again) is brought up to date.
	if known {
		x.cache.put(nameStream, snapshot{state: reservationDecider.Fold(taken, take...), exists: true, rev: results[0].NextExpected, pos: results[0].Position})
	}
	st := d.Fold(d.Initial(), events...)
	x.cache.put(owner, snapshot{state: st, exists: true, rev: results[1].NextExpected, pos: results[1].Position})
	return Result[S]{State: st, Revision: eventstore.Exact(results[1].NextExpected), Position: results[1].Position, Events: owned.Envelopes()}, true, nil
}

// lockBoth takes the in-process locks of two streams, always in the same
// order so that two callers locking the same pair cannot deadlock.
func (x *Executor) lockBoth(ctx context.Context, a, b string) (bothLocks, error) {
	if b < a {
		a, b = b, a
	}
	first, err := x.locks.lock(ctx, a)
	if err != nil {
		return bothLocks{}, err
	}
	second, err := x.locks.lock(ctx, b)
	if err != nil {
		first.unlock()
		return bothLocks{}, err
	}
	return bothLocks{first, second}, nil
}

// bothLocks are the two locks lockBoth took.
type bothLocks struct{ first, second heldLock }

func (b bothLocks) unlock() {
	b.second.unlock()
	b.first.unlock()
}

package storetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tvsm/eventstore"
)

// reader consumes a subscription and checks, on every batch, the invariants
// the port promises:
//   - events come in strictly increasing positions, after `after`;
//   - each event is after the previous batch's Checkpoint (else resuming
//     after that checkpoint would have skipped it);
//   - Checkpoint never moves backwards and is at or after the batch's last
//     event;
//   - CaughtUp, once set, stays set;
//   - every event passes the filter, and none is delivered twice.
//
// A reader is used by one goroutine. Its methods return errors rather than
// failing the test, so that readers can run in goroutines; the must* methods
// fail the test.
type reader struct {
	e      *env
	sub    eventstore.Subscription
	filter eventstore.Filter

	events     []eventstore.RecordedEvent // delivered events of the test's streams
	seen       map[eventstore.EventID]bool
	last       eventstore.Position // of the last delivered event, whoever's
	checkpoint eventstore.Position
	caughtUp   bool
	batches    int
	more       bool // the last batch's More
}

// subscribe opens a subscription closed at the end of the test.
func (e *env) subscribe(after eventstore.Position, filter eventstore.Filter) *reader {
	e.t.Helper()
	sub, err := e.store.SubscribeAll(e.ctx, after, filter)
	if err != nil {
		e.t.Fatalf("SubscribeAll(after %v, %+v): %v", after, filter, err)
	}
	e.t.Cleanup(func() { _ = sub.Close() })
	return &reader{
		e:          e,
		sub:        sub,
		filter:     filter,
		seen:       make(map[eventstore.EventID]bool),
		last:       after,
		checkpoint: after,
	}
}

// errRecvStuck reports a Recv that ignored the end of its context.
var errRecvStuck = errors.New("storetest: Recv did not return within 1s after its context ended")

// recvWithin calls sub.Recv with a context that ends after d, and reports an
// error if Recv ignores that and has not returned a second later. (The
// goroutine left behind then ends when the test closes the subscription.)
func recvWithin(ctx context.Context, sub eventstore.Subscription, d time.Duration) (eventstore.Batch, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		b   eventstore.Batch
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := sub.Recv(ctx)
		ch <- result{b, err}
	}()
	timer := time.NewTimer(d + time.Second)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-timer.C:
		return eventstore.Batch{}, errRecvStuck
	}
}

// next receives one batch within d and checks it.
func (r *reader) next(d time.Duration) error {
	b, err := recvWithin(r.e.ctx, r.sub, d)
	if err != nil {
		return err
	}
	return r.check(b)
}

func (r *reader) check(b eventstore.Batch) error {
	r.batches++
	where := fmt.Sprintf("batch %d", r.batches)
	if r.caughtUp && !b.CaughtUp {
		return fmt.Errorf("%s: CaughtUp went back to false", where)
	}
	r.caughtUp = b.CaughtUp
	for i, ev := range b.Events {
		at := fmt.Sprintf("%s event %d (%s rev %d at %v)", where, i, ev.Stream, ev.Revision, ev.Position)
		if !ev.Position.After(r.last) {
			return fmt.Errorf("%s: position not after the previous event's %v", at, r.last)
		}
		if !ev.Position.After(r.checkpoint) {
			return fmt.Errorf("%s: position not after the previous checkpoint %v", at, r.checkpoint)
		}
		if !r.filter.Match(ev.Stream, ev.Type) {
			return fmt.Errorf("%s: type %q does not pass the filter %+v", at, ev.Type, r.filter)
		}
		r.last = ev.Position
		if r.e.f.Shared && !r.e.mine(ev) {
			continue
		}
		if r.seen[ev.ID] {
			return fmt.Errorf("%s: event %v delivered twice", at, ev.ID)
		}
		r.seen[ev.ID] = true
		r.events = append(r.events, ev)
	}
	if b.Checkpoint.Compare(r.checkpoint) < 0 {
		return fmt.Errorf("%s: Checkpoint %v moved back from %v", where, b.Checkpoint, r.checkpoint)
	}
	if n := len(b.Events); n > 0 && b.Checkpoint.Compare(b.Events[n-1].Position) < 0 {
		return fmt.Errorf("%s: Checkpoint %v before the batch's last event at %v", where, b.Checkpoint, b.Events[n-1].Position)
	}
	r.checkpoint = b.Checkpoint
	r.more = b.More
	return nil
}

// until receives batches until done reports true, for at most timeout.
func (r *reader) until(what string, timeout time.Duration, done func() bool) error {
	deadline := time.Now().Add(timeout)
	timedOut := func() error {
		return fmt.Errorf("timed out after %v waiting for %s (have %d events in %d batches, caughtUp %v)",
			timeout, what, len(r.events), r.batches, r.caughtUp)
	}
	for !done() {
		left := time.Until(deadline)
		if left <= 0 {
			return timedOut()
		}
		if err := r.next(left); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && r.e.ctx.Err() == nil {
				return timedOut()
			}
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
	}
	return nil
}

func (r *reader) mustUntil(what string, timeout time.Duration, done func() bool) {
	r.e.t.Helper()
	if err := r.until(what, timeout, done); err != nil {
		r.e.t.Fatal(err)
	}
}

// waitEvents receives until at least n events of the test were delivered.
func (r *reader) waitEvents(n int, timeout time.Duration) {
	r.e.t.Helper()
	r.mustUntil(fmt.Sprintf("%d events", n), timeout, func() bool { return len(r.events) >= n })
}

// waitCaughtUp receives until a batch says CaughtUp. By then everything that
// was in the log when the subscription started has been delivered.
func (r *reader) waitCaughtUp() {
	r.e.t.Helper()
	r.mustUntil("CaughtUp", waitTimeout, func() bool { return r.caughtUp })
}

// waitFor receives until the event with id was delivered.
func (r *reader) waitFor(id eventstore.EventID, timeout time.Duration) {
	r.e.t.Helper()
	r.mustUntil("event "+id.String(), timeout, func() bool { return r.seen[id] })
}

// close closes the subscription.
func (r *reader) close() {
	r.e.t.Helper()
	if err := r.sub.Close(); err != nil {
		r.e.t.Errorf("Subscription.Close: %v", err)
	}
}

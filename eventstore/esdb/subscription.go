package esdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"tvsm/eventstore"
)

const (
	// maxBatchEvents bounds the events one Recv looks at.
	maxBatchEvents = 1024
	// pumpBuffer is how many received messages wait for Recv.
	pumpBuffer = 4096
)

// message is what the pump hands to Recv: an event, a checkpoint, the
// server's CaughtUp, or the end of the subscription.
type message struct {
	event      *client.RecordedEvent
	checkpoint eventstore.Position
	caughtUp   bool
	err        error
}

// subscription is a catch-up subscription to $all. A goroutine (pump)
// receives the client's messages into a buffer; Recv takes what is there
// as one batch, filtered.
//
// The subscription is caught up when the server says so, or once it has
// passed the head of $all as read before subscribing: everything up to that
// head has then been delivered (older servers send no CaughtUp).
type subscription struct {
	s      *Store
	gen    *generation
	sub    *client.Subscription
	ctx    context.Context // ends when SubscribeAll's ctx ends or Close is called
	cancel context.CancelFunc
	filter eventstore.Filter

	msgs   chan message
	closed atomic.Bool

	// Owned by Recv.
	head     eventstore.Position // of $all when subscribing
	last     eventstore.Position // of the last event looked at
	caughtUp bool
	reported bool // a batch with CaughtUp was delivered
	err      error
}

// SubscribeAll implements eventstore.Store.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	if s.isClosed() {
		return nil, fmt.Errorf("esdb: subscribe: %w", eventstore.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g, err := s.conn.acquire()
	if err != nil {
		return nil, fmt.Errorf("esdb: subscribe: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	sub := &subscription{s: s, gen: g, ctx: sctx, cancel: cancel, filter: filter, last: after, msgs: make(chan message, pumpBuffer)}
	if err := sub.start(after); err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("esdb: subscribe after %v: %w", after, classify(err))
	}
	return sub, nil
}

// start reads the head, subscribes and starts the pump. The client's calls
// run in a goroutine, as in conn.do, so that a client stuck without its
// server cannot hold the caller; that goroutine, or the pump after it,
// ends the subscription's call on its client.
func (sub *subscription) start(after eventstore.Position) error {
	done := make(chan error, 1)
	go func() {
		head, err := readHead(sub.ctx, sub.gen.c)
		if err == nil {
			sub.head = head
			var from client.AllPosition = client.Start{}
			if !after.IsZero() {
				from = client.Position{Commit: after.Commit, Prepare: after.Prepare}
			}
			sub.sub, err = sub.gen.c.SubscribeToAll(sub.ctx, client.SubscribeToAllOptions{From: from})
		}
		if err != nil {
			sub.s.conn.failed(sub.gen, err)
			sub.s.conn.release(sub.gen)
			done <- err
			return
		}
		go sub.pump()
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
	case <-sub.ctx.Done():
		return sub.ctx.Err()
	case <-sub.s.closing:
		return eventstore.ErrClosed
	}
	go func() {
		select {
		case <-sub.ctx.Done():
		case <-sub.s.closing:
		}
		sub.cancel()
		_ = sub.sub.Close()
	}()
	return nil
}

// pump moves the client's messages into msgs until the subscription drops
// or ends.
func (sub *subscription) pump() {
	defer sub.s.conn.release(sub.gen)
	for {
		ev := sub.sub.Recv()
		var m message
		switch {
		case ev.EventAppeared != nil:
			m.event = ev.EventAppeared.OriginalEvent()
		case ev.CheckPointReached != nil:
			m.checkpoint = eventstore.Position{Commit: ev.CheckPointReached.Commit, Prepare: ev.CheckPointReached.Prepare}
		case ev.CaughtUp != nil:
			m.caughtUp = true
		case ev.SubscriptionDropped != nil:
			m.err = ev.SubscriptionDropped.Error
			if m.err == nil {
				m.err = errors.New("subscription dropped")
			}
			sub.s.conn.failed(sub.gen, m.err)
		default:
			continue // FellBehind: the subscription catches up on its own
		}
		select {
		case sub.msgs <- m:
		case <-sub.ctx.Done():
			return
		}
		if m.err != nil {
			return
		}
	}
}

// Close implements eventstore.Subscription.
func (sub *subscription) Close() error {
	sub.closed.Store(true)
	sub.cancel()
	return nil
}

// Recv implements eventstore.Subscription.
func (sub *subscription) Recv(ctx context.Context) (eventstore.Batch, error) {
	switch {
	case sub.err != nil:
		return eventstore.Batch{}, sub.err
	case sub.s.isClosed():
		return eventstore.Batch{}, sub.fail(fmt.Errorf("esdb: subscription: store %w", eventstore.ErrClosed))
	case sub.ctx.Err() != nil:
		return eventstore.Batch{}, sub.fail(sub.endCause())
	case ctx.Err() != nil:
		return eventstore.Batch{}, ctx.Err()
	}
	if !sub.caughtUp && sub.last.Compare(sub.head) >= 0 {
		sub.caughtUp = true // subscribed at or after the head
	}
	if sub.caughtUp && !sub.reported {
		sub.reported = true
		return eventstore.Batch{Checkpoint: sub.last, CaughtUp: true}, nil
	}
	var first message
	select {
	case first = <-sub.msgs:
	default:
		select {
		case first = <-sub.msgs:
		case <-ctx.Done():
			return eventstore.Batch{}, ctx.Err()
		case <-sub.ctx.Done():
			return eventstore.Batch{}, sub.fail(sub.endCause())
		case <-sub.s.closing:
			return eventstore.Batch{}, sub.fail(fmt.Errorf("esdb: subscription: store %w", eventstore.ErrClosed))
		}
	}
	var b eventstore.Batch
	cut := false // at maxBatchEvents
	for i, m := 0, first; ; i++ {
		if m.err != nil {
			// Deliver what came before the drop; the next Recv fails.
			sub.err = sub.dropped(m.err)
			if len(b.Events) == 0 && i == 0 {
				return eventstore.Batch{}, sub.err
			}
			break
		}
		sub.take(&b, m)
		if i+1 == maxBatchEvents {
			cut = true
			break
		}
		select {
		case m = <-sub.msgs:
			continue
		default:
		}
		break
	}
	b.Checkpoint = sub.last
	b.CaughtUp = sub.caughtUp
	b.More = sub.err == nil && (cut || len(sub.msgs) > 0)
	sub.reported = sub.reported || sub.caughtUp
	return b, nil
}

// take adds what m says to b.
func (sub *subscription) take(b *eventstore.Batch, m message) {
	switch {
	case m.event != nil:
		e := m.event
		pos := eventstore.Position{Commit: e.Position.Commit, Prepare: e.Position.Prepare}
		if !pos.After(sub.last) {
			return // never repeat or go back, whatever the server sends
		}
		sub.last = pos
		if !strings.HasPrefix(e.StreamID, "$") && !isTombstone(e) && sub.filter.Match(e.StreamID, e.EventType) {
			b.Events = append(b.Events, recorded(e))
		}
	case m.caughtUp:
		sub.caughtUp = true
	default:
		if m.checkpoint.After(sub.last) {
			sub.last = m.checkpoint
		}
	}
	if !sub.caughtUp && sub.last.Compare(sub.head) >= 0 {
		sub.caughtUp = true
	}
}

// endCause says why the subscription's context ended: Close, or the end of
// SubscribeAll's context.
func (sub *subscription) endCause() error {
	if sub.closed.Load() {
		return fmt.Errorf("esdb: subscription: %w", eventstore.ErrClosed)
	}
	return fmt.Errorf("esdb: subscription: %w", context.Cause(sub.ctx))
}

func (sub *subscription) dropped(err error) error {
	if sub.s.isClosed() {
		return fmt.Errorf("esdb: subscription: store %w", eventstore.ErrClosed)
	}
	if sub.ctx.Err() != nil {
		return sub.endCause()
	}
	return fmt.Errorf("esdb: subscription dropped: %w", classify(err))
}

func (sub *subscription) fail(err error) error {
	sub.err = err
	return err
}

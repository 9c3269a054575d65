package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"tvsm/eventstore"
)

const (
	// maxBatchEvents bounds the events of one delivered batch.
	maxBatchEvents = 4096
	// maxScan bounds the events one Recv looks at: a filter that drops them
	// all then reports an empty batch, so that its checkpoint keeps moving.
	maxScan = 16384
)

// subscription reads the log itself rather than being fed by appenders: it
// takes the events after its position up to the head, and when there are
// none it waits for the next append. Catch-up and live are the same loop,
// so the handover cannot drop or repeat an event, and a slow subscriber
// never holds back appends: it holds the log's read lock only to slice it,
// and is never dropped however far behind it falls (the whole log is in
// memory anyway). This is how the embedded backend's subscriptions behave.
type subscription struct {
	s        *Store
	ctx      context.Context // the SubscribeAll context: ending it ends the subscription
	filter   eventstore.Filter
	filtered bool
	after    uint64 // last scanned position
	caughtUp bool
	closed   chan struct{}
	once     sync.Once
}

// SubscribeAll implements eventstore.Store. Positions of this backend are
// dense, so only after.Commit is used.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	if s.closed() {
		return nil, fmt.Errorf("memory: subscribe: %w", eventstore.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &subscription{
		s: s, ctx: ctx, filter: filter, after: after.Commit, closed: make(chan struct{}),
		filtered: len(filter.StreamPrefixes) > 0 || len(filter.EventTypePrefixes) > 0,
	}, nil
}

func (sub *subscription) Close() error {
	sub.once.Do(func() { close(sub.closed) })
	return nil
}

func (sub *subscription) Recv(ctx context.Context) (eventstore.Batch, error) {
	for {
		select {
		case <-sub.closed:
			return eventstore.Batch{}, fmt.Errorf("memory: subscription: %w", eventstore.ErrClosed)
		case <-sub.s.closing:
			return eventstore.Batch{}, fmt.Errorf("memory: subscription: store %w", eventstore.ErrClosed)
		case <-sub.ctx.Done():
			return eventstore.Batch{}, fmt.Errorf("memory: subscription: %w", sub.ctx.Err())
		case <-ctx.Done():
			return eventstore.Batch{}, ctx.Err()
		default:
		}
		head, wake := sub.s.log.watch()
		if sub.after < head {
			b := sub.scan()
			reachedHead := sub.after >= head
			sub.caughtUp = sub.caughtUp || reachedHead
			b.CaughtUp = sub.caughtUp
			b.More = !reachedHead
			// Every scan ends at the head, at a full batch or after maxScan
			// events, so the batch is worth delivering even when empty: its
			// checkpoint follows the log (a read-your-writes wait on a
			// filtered-out event must end).
			return b, nil
		}
		if !sub.caughtUp {
			// Subscribed at or past the head: caught up from the start.
			sub.caughtUp = true
			return eventstore.Batch{Checkpoint: position(sub.after), CaughtUp: true}, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return eventstore.Batch{}, ctx.Err()
		case <-sub.closed:
		case <-sub.s.closing:
		case <-sub.ctx.Done():
		}
	}
}

// scan takes the events after sub.after that the filter selects, up to the
// head, maxBatchEvents of them or maxScan looked at, and moves sub.after to
// the last one it looked at. Entries of tombstoned streams are skipped as
// a filter skips events. Without a filter the batch is a slice of the log
// itself when it can be, as eventstore.Batch allows: one chunk's window
// without tombstoned entries.
func (sub *subscription) scan() eventstore.Batch {
	if !sub.filtered {
		window := sub.s.log.window(sub.after, maxBatchEvents)
		sub.after += uint64(len(window))
		events := window
		if slices.ContainsFunc(window, removed) {
			events = slices.DeleteFunc(slices.Clone(window), removed)
		}
		return eventstore.Batch{Events: events, Checkpoint: position(sub.after)}
	}
	var events []eventstore.RecordedEvent
	for looked := 0; looked < maxScan && len(events) < maxBatchEvents; {
		window := sub.s.log.window(sub.after, maxScan-looked)
		if len(window) == 0 {
			break
		}
		for i := range window {
			e := &window[i]
			sub.after = e.Position.Commit
			looked++
			if removed(*e) || !sub.filter.Match(e.Stream, e.Type) {
				continue
			}
			events = append(events, *e)
			if len(events) == maxBatchEvents {
				break
			}
		}
	}
	return eventstore.Batch{Events: events, Checkpoint: position(sub.after)}
}

// removed reports whether a log entry is what a tombstone left of an event.
func removed(e eventstore.RecordedEvent) bool { return e.Stream == "" }

package embedded

import (
	"context"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"tvsm/eventstore"
)

const (
	// maxBatchEvents bounds the events of one delivered batch.
	maxBatchEvents = 4096
	// maxBatchBytes bounds the payload bytes of one delivered batch.
	maxBatchBytes = 8 << 20
	// maxScanWithoutMatch: after scanning this many filtered-out events the
	// subscription reports an empty batch, so the checkpoint of a sparse
	// filter keeps moving instead of staying parked until the next match.
	maxScanWithoutMatch = 16384
)

// subscription reads the log itself rather than being fed by the committer:
// it scans from its position up to the durable head, and when there is
// nothing left it waits for the head to move. Catch-up and live are the same
// loop, so the handover cannot drop or repeat an event, and a slow subscriber
// never holds back appends.
type subscription struct {
	s        *Store
	ctx      context.Context // the SubscribeAll context: ending it ends the subscription
	filter   eventstore.Filter
	after    uint64 // last scanned position
	caughtUp bool
	dec      *decoder
	closed   chan struct{}
	once     sync.Once
}

// SubscribeAll implements eventstore.Store. Positions of this backend are
// dense, so only after.Commit is used.
func (s *Store) SubscribeAll(ctx context.Context, after eventstore.Position, filter eventstore.Filter) (eventstore.Subscription, error) {
	select {
	case <-s.closing:
		return nil, eventstore.ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &subscription{s: s, ctx: ctx, filter: filter, after: after.Commit, dec: newDecoder(), closed: make(chan struct{})}, nil
}

func (sub *subscription) Close() error {
	sub.once.Do(func() { close(sub.closed) })
	return nil
}

func (sub *subscription) Recv(ctx context.Context) (eventstore.Batch, error) {
	scanned := 0
	for {
		select {
		case <-sub.closed:
			return eventstore.Batch{}, fmt.Errorf("embedded: subscription: %w", eventstore.ErrClosed)
		case <-sub.s.closing:
			return eventstore.Batch{}, fmt.Errorf("embedded: subscription: store %w", eventstore.ErrClosed)
		case <-sub.ctx.Done():
			return eventstore.Batch{}, fmt.Errorf("embedded: subscription: %w", sub.ctx.Err())
		default:
		}
		head, wake := sub.s.head.watch()
		if sub.after < head {
			b, n, err := sub.scan(ctx, head)
			if err != nil {
				return eventstore.Batch{}, err
			}
			scanned += n
			reachedHead := sub.after == head
			firstCatchUp := reachedHead && !sub.caughtUp
			sub.caughtUp = sub.caughtUp || reachedHead
			b.CaughtUp = sub.caughtUp
			b.More = !reachedHead
			// An empty batch at the head still reports the checkpoint, so
			// that a filtered subscription's progress follows the log (a
			// read-your-writes wait on a filtered-out event must end).
			if len(b.Events) > 0 || firstCatchUp || (reachedHead && sub.caughtUp) || scanned >= maxScanWithoutMatch {
				return b, nil
			}
			continue
		}
		if !sub.caughtUp {
			// Subscribed at or past the head: caught up from the start.
			sub.caughtUp = true
			p := eventstore.Position{Commit: sub.after, Prepare: sub.after}
			return eventstore.Batch{Checkpoint: p, CaughtUp: true}, nil
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

// scan reads events after sub.after up to head (inclusive), keeping those the
// filter selects, until a batch limit is reached. It returns how many events
// it scanned. A live subscription takes them from the store's tail; one
// further behind reads pebble.
func (sub *subscription) scan(ctx context.Context, head uint64) (eventstore.Batch, int, error) {
	if events, last, ok := sub.s.tail.read(sub.after, head, sub.filter); ok {
		scanned := int(last - sub.after)
		sub.after = last
		return eventstore.Batch{Events: events, Checkpoint: eventstore.Position{Commit: last, Prepare: last}}, scanned, nil
	}
	return sub.scanLog(ctx, head)
}

// scanLog is scan from pebble.
func (sub *subscription) scanLog(ctx context.Context, head uint64) (eventstore.Batch, int, error) {
	it, err := sub.s.db.NewIterWithContext(ctx, &pebble.IterOptions{
		LowerBound: eventKey(sub.after + 1),
		UpperBound: eventKey(head + 1),
	})
	if err != nil {
		return eventstore.Batch{}, 0, fmt.Errorf("embedded: subscription: %w", err)
	}
	defer it.Close()
	b := eventstore.Batch{Events: make([]eventstore.RecordedEvent, 0, min(head-sub.after, maxBatchEvents))}
	bytes, scanned := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		pos := eventKeyPos(it.Key())
		v, err := it.ValueAndErr()
		if err != nil {
			return eventstore.Batch{}, 0, fmt.Errorf("embedded: subscription at %d: %w", pos, err)
		}
		scanned++
		sub.after = pos
		if len(sub.filter.StreamPrefixes) > 0 || len(sub.filter.EventTypePrefixes) > 0 {
			stream, typ, err := recordNames(v)
			if err != nil {
				return eventstore.Batch{}, 0, fmt.Errorf("%w at position %d", err, pos)
			}
			if !sub.filter.Match(stream, typ) {
				if scanned >= maxScanWithoutMatch {
					break
				}
				continue
			}
		}
		e, err := sub.dec.decode(pos, v)
		if err != nil {
			return eventstore.Batch{}, 0, err
		}
		b.Events = append(b.Events, e)
		bytes += len(v)
		if len(b.Events) >= maxBatchEvents || bytes >= maxBatchBytes {
			break
		}
	}
	if err := it.Error(); err != nil {
		return eventstore.Batch{}, 0, fmt.Errorf("embedded: subscription: %w", err)
	}
	b.Checkpoint = eventstore.Position{Commit: sub.after, Prepare: sub.after}
	return b, scanned, nil
}

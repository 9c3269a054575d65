package projections

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"tvsm/eventstore"
)

// errStalled is the cause with which the watchdog cancels a subscription.
var errStalled = errors.New("subscription stalled: head is ahead and nothing arrived for a whole watchdog interval")

// watchdog cancels the subscription (through cancel) when it has been blocked
// in Recv for a whole interval although the log's head was already ahead of
// the applied position at the start of that interval. Requiring the head to
// have been ahead for a whole interval avoids firing on an event appended
// just before a tick. It returns when ctx ends.
func (r *Runner) watchdog(ctx context.Context, hr eventstore.HeadReader, recvSince *atomic.Int64, cancel context.CancelCauseFunc) {
	t := time.NewTicker(r.opts.WatchdogInterval)
	defer t.Stop()
	var (
		pending  eventstore.Position // head seen ahead of applied at the last tick
		hasPend  bool
		lastTick time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			since := recvSince.Load()
			applied := r.progress.Position()
			if hasPend && since != 0 && since <= lastTick.UnixNano() && pending.After(applied) {
				r.log.Warn("subscription stalled; resubscribing",
					"head", pending.String(), "applied", applied.String(), "idle", now.Sub(time.Unix(0, since)).Round(time.Millisecond))
				cancel(errStalled)
				return
			}
			hasPend = false
			lastTick = now
			if since == 0 {
				continue // applying a batch: not stalled
			}
			head, err := hr.Head(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.log.Debug("watchdog: reading head failed", "error", err)
				}
				continue
			}
			if head.After(applied) {
				pending, hasPend = head, true
			}
		}
	}
}

package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
	"tvsm/wsgateway"
)

// errConflicts ends a claim that lost ClaimRetries races in a row.
var errConflicts = errors.New("dispatch: claim kept conflicting")

// deliver claims want (command index → devices) for s and writes the
// commands to the devices it won, in index order. Devices claimed by anyone
// meanwhile, and commands expired meanwhile, are left out.
func (d *Dispatcher) deliver(ctx context.Context, s *sendState, want map[int][]int64) error {
	if len(want) == 0 {
		return nil
	}
	items := make(map[int]*item, len(want))
	for idx := range want {
		items[idx] = s.items[idx]
	}
	won, err := d.claim(ctx, s, want)
	if err != nil {
		d.stats.claimFailures.Add(1)
		d.log.Warn("delivery round failed; retrying later", "send", s.id, "error", err)
		return err
	}
	d.write(s.id, items, won)
	return nil
}

// claim appends CommandsSent for want with the exact revision of s it
// knows. On a conflict it reads the stream forward (other nodes' claims,
// expiries), drops what is no longer due and tries again, at most
// ClaimRetries times. It returns the devices this node won, per index.
func (d *Dispatcher) claim(ctx context.Context, s *sendState, want map[int][]int64) (map[int][]int64, error) {
	for attempt := 0; ; attempt++ {
		want = d.stillDue(s, want)
		if len(want) == 0 {
			return nil, nil
		}
		if attempt == d.opts.ClaimRetries {
			return nil, errConflicts
		}
		events, err := d.claimEvents(s, want)
		if err != nil {
			return nil, err
		}
		res, err := d.appendEvents(ctx, s.stream, eventstore.Exact(s.rev), events)
		if err == nil {
			d.stats.claims.Add(1)
			for idx, devices := range want {
				d.state.claim(s, idx, devices)
			}
			d.state.setRev(s, res.NextExpected)
			return want, nil
		}
		if !isConflict(err) {
			return nil, err
		}
		d.stats.conflicts.Add(1)
		landed, err := d.readForward(ctx, s, events)
		if err != nil {
			return nil, err
		}
		if landed { // an earlier try of this very append had landed after all
			return want, nil
		}
	}
}

// stillDue drops from want the devices already claimed and the commands no
// longer deliverable (forgotten, or past their ttl).
func (d *Dispatcher) stillDue(s *sendState, want map[int][]int64) map[int][]int64 {
	now := d.clock.Now()
	out := make(map[int][]int64, len(want))
	for idx, devices := range want {
		it := s.items[idx]
		if it == nil || (it.hasTTL() && !now.Before(it.ttl)) {
			continue
		}
		var keep []int64
		for _, dev := range devices {
			if _, done := it.claimed[dev]; !done {
				keep = append(keep, dev)
			}
		}
		if len(keep) > 0 {
			slices.Sort(keep)
			out[idx] = slices.Compact(keep)
		}
	}
	return out
}

// claimEvents builds the CommandsSent events of want, at most ClaimChunk
// devices each. Their ids derive from this process, the stream, the
// expected revision and the content: repeating the same append is a no-op,
// while a different claim, or another node's, never shares an id.
func (d *Dispatcher) claimEvents(s *sendState, want map[int][]int64) ([]eventstore.EventData, error) {
	var events []domain.Event
	for _, idx := range slices.Sorted(maps.Keys(want)) {
		for chunk := range slices.Chunk(want[idx], d.opts.ClaimChunk) {
			events = append(events, domain.CommandsSent{SendID: s.id, Index: idx, Devices: chunk, Node: d.opts.Node})
		}
	}
	data, err := d.encode(events, domain.SystemActor(), requestPrefix+d.opts.Node, d.clock.Now())
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, e := range data {
		h.Write(e.Data)
	}
	name := "claim|" + d.opts.Node + "|" + d.instance + "|" + s.stream + "|" +
		strconv.FormatUint(s.rev, 10) + "|" + hex.EncodeToString(h.Sum(nil)[:16])
	for i := range data {
		data[i].ID = eventstore.DeriveEventID(name, i)
	}
	return data, nil
}

// write queues the commands to the devices won, in index order, and closes
// the connections of devices that got an update command once it is written.
func (d *Dispatcher) write(send int64, items map[int]*item, won map[int][]int64) {
	now := d.clock.Now()
	revoked := make(map[int64]struct{})
	for _, idx := range slices.Sorted(maps.Keys(won)) {
		it := items[idx]
		msg, err := it.message()
		if err != nil { // validated when issued; never expected
			d.log.Error("command object cannot be encoded", "send", send, "index", idx, "error", err)
			continue
		}
		for _, dev := range won[idx] {
			d.receipts.book.record(dev, send, idx, it.confirmable(), now)
			if d.hub.Send(dev, msg.Encode(domain.DeliveryID(send, idx, dev))) {
				d.stats.deliveries.Add(1)
			} else {
				d.stats.misses.Add(1)
			}
			if it.kind == domain.CommandUpdate {
				revoked[dev] = struct{}{}
			}
		}
	}
	for dev := range revoked {
		d.hub.CloseAfterFlush(dev, wsgateway.ReasonRevoked)
	}
}

// expire appends CommandExpired for items (whose ttl has passed) and forgets
// them. Each expiry has one fixed event id, so nodes racing to expire the
// same command store it once.
func (d *Dispatcher) expire(ctx context.Context, s *sendState, items []*item) {
	for attempt := 0; attempt <= d.opts.ClaimRetries; attempt++ {
		var events []domain.Event
		var idx []int
		for _, it := range items {
			if s.items[it.index] == it {
				events = append(events, domain.CommandExpired{SendID: s.id, Index: it.index})
				idx = append(idx, it.index)
			}
		}
		if len(events) == 0 {
			return
		}
		data, err := d.encode(events, domain.SystemActor(), requestPrefix+d.opts.Node, d.clock.Now())
		if err != nil {
			d.log.Error("encoding expiry", "send", s.id, "error", err)
			return
		}
		for i := range data {
			data[i].ID = eventstore.DeriveEventID("expired|"+s.stream+"|"+strconv.Itoa(idx[i]), 0)
		}
		res, err := d.appendEvents(ctx, s.stream, eventstore.Exact(s.rev), data)
		if err == nil {
			d.stats.expired.Add(uint64(len(idx)))
			d.state.setRev(s, res.NextExpected)
			for _, i := range idx {
				d.state.forget(s, i)
			}
			return
		}
		if !isConflict(err) {
			break
		}
		if _, err := d.readForward(ctx, s, nil); err != nil {
			break
		}
	}
	d.stats.expiryFailures.Add(1)
	d.retryLater(s.id)
}

// readForward applies the events of s's stream after the known revision
// and reports whether any of mine is among them.
func (d *Dispatcher) readForward(ctx context.Context, s *sendState, mine []eventstore.EventData) (bool, error) {
	rctx, cancel := d.appendCtx(ctx)
	defer cancel()
	events, err := d.store.ReadStream(rctx, s.stream, eventstore.Exact(s.rev+1), 0)
	if errors.Is(err, eventstore.ErrStreamNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dispatch: read %s after %d: %w", s.stream, s.rev, err)
	}
	landed := false
	for i := range events {
		for _, m := range mine {
			landed = landed || events[i].ID == m.ID
		}
	}
	d.applyBatch(ctx, projections.Decode(d.reg, events))
	return landed, nil
}

// isConflict reports whether an append lost to another one.
func isConflict(err error) bool {
	return errors.Is(err, eventstore.ErrWrongExpectedRevision) || errors.Is(err, eventstore.ErrDuplicateEventID)
}

// appendEvents appends with a bounded wait, repeating the identical append
// (same ids, same expectation, so a landed one is answered as such) twice
// more after a failure that is neither a conflict nor final.
func (d *Dispatcher) appendEvents(ctx context.Context, stream string, expect eventstore.Revision, events []eventstore.EventData) (eventstore.AppendResult, error) {
	var err error
	for try := 0; try < 3; try++ {
		if try > 0 && !sleep(ctx, time.Duration(try)*50*time.Millisecond) {
			break
		}
		actx, cancel := d.appendCtx(ctx)
		var res eventstore.AppendResult
		res, err = d.store.Append(actx, stream, expect, events...)
		cancel()
		if err == nil || isConflict(err) || !retryable(err) {
			return res, err
		}
	}
	return eventstore.AppendResult{}, fmt.Errorf("dispatch: append to %s: %w", stream, err)
}

// retryable reports whether repeating a failed append may help.
func retryable(err error) bool {
	return !errors.Is(err, eventstore.ErrInvalidAppend) && !errors.Is(err, eventstore.ErrClosed) &&
		!errors.Is(err, context.Canceled)
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// encode turns events into what the store appends (ids left to the
// caller), all with one metadata.
func (d *Dispatcher) encode(events []domain.Event, actor domain.Actor, requestID string, at time.Time) ([]eventstore.EventData, error) {
	md, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: at, Actor: actor, RequestID: requestID})
	if err != nil {
		return nil, err
	}
	out := make([]eventstore.EventData, len(events))
	for i, e := range events {
		typ, data, err := d.reg.Encode(e)
		if err != nil {
			return nil, err
		}
		out[i] = eventstore.EventData{Type: typ, Data: data, Metadata: md}
	}
	return out, nil
}

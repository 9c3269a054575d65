package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/projections"
	"tvsm/wsgateway"
)

// errConflicts ends a claim that lost ClaimRetries races in a row.
var errConflicts = errors.New("dispatch: claim kept conflicting")

// deliver claims want (command index → devices) for s and writes the
// commands to the devices it won, in index order. Devices claimed by anyone
// meanwhile, and commands expired meanwhile, are left out. A round of more
// than ClaimAppendMax devices is claimed, and written, a part at a time.
func (d *Dispatcher) deliver(ctx context.Context, s *sendState, want map[int][]int64) error {
	if len(want) == 0 {
		return nil
	}
	for _, part := range claimParts(want, d.opts.ClaimAppendMax) {
		if err := d.deliverPart(ctx, s, part); err != nil {
			return err
		}
	}
	return nil
}

// claimParts splits want into parts of at most max devices, in index
// order, so that no claim's append outgrows what the store takes at once
// (EventStoreDB refuses an append of more than 1 MiB by default: about
// 120,000 device ids). A command whose round records itself without
// devices goes with the part it comes in.
func claimParts(want map[int][]int64, max int) []map[int][]int64 {
	total := 0
	for _, devices := range want {
		total += len(devices)
	}
	if total <= max {
		return []map[int][]int64{want}
	}
	var parts []map[int][]int64
	part, n := map[int][]int64{}, 0
	for _, idx := range slices.Sorted(maps.Keys(want)) {
		devices := want[idx]
		if len(devices) == 0 {
			part[idx] = devices
		}
		for len(devices) > 0 {
			take := min(max-n, len(devices))
			part[idx] = devices[:take:take]
			devices, n = devices[take:], n+take
			if n == max {
				parts, part, n = append(parts, part), map[int][]int64{}, 0
			}
		}
	}
	if len(part) > 0 {
		parts = append(parts, part)
	}
	return parts
}

// deliverPart claims want and writes to the devices won.
func (d *Dispatcher) deliverPart(ctx context.Context, s *sendState, want map[int][]int64) error {
	items := make(map[int]*item, len(want))
	for idx := range want {
		items[idx] = s.items[idx]
	}
	won, recorded, err := d.claim(ctx, s, want)
	if err != nil {
		d.stats.claimFailures.Add(1)
		d.log.Warn("delivery round failed; retrying later", "send", s.id, "error", err)
		return err
	}
	d.write(s.id, items, won)
	// The claim in memory is noted once the devices have been written to,
	// so that the first device does not wait for it: nothing reads the
	// state meanwhile (the loop runs both).
	if recorded {
		for idx, devices := range won {
			d.state.claim(s, idx, devices, s.items[idx].late())
		}
	}
	return nil
}

// claim appends CommandsSent for want with the exact revision of s it
// knows. On a conflict it reads the stream forward (other nodes' claims,
// expiries), drops what is no longer due and tries again. It gives up
// after losing ClaimRetries times to appends it read, or ClaimRetries
// times to appends it could not read yet. It returns the devices this node
// won, per index; recorded says the caller is to note them as claimed in
// the state (state.claim), which reading the stream forward did otherwise.
func (d *Dispatcher) claim(ctx context.Context, s *sendState, want map[int][]int64) (won map[int][]int64, recorded bool, err error) {
	d.storeWaits.Add(1)
	defer d.storeWaits.Add(-1)
	lost, unseen := 0, 0
	for {
		want = d.stillDue(s, want)
		if len(want) == 0 {
			return nil, false, nil
		}
		if lost == d.opts.ClaimRetries || unseen == d.opts.ClaimRetries {
			return nil, false, errConflicts
		}
		events, err := d.claimEvents(s, want)
		if err != nil {
			return nil, false, err
		}
		res, err := d.appendEvents(ctx, s.stream, eventstore.Exact(s.rev), events)
		if err == nil {
			d.stats.claims.Add(1)
			roundsRecorded(s, want)
			d.state.setRev(s, res.NextExpected)
			return want, true, nil
		}
		if !isConflict(err) {
			return nil, false, err
		}
		d.stats.conflicts.Add(1)
		rev := s.rev
		landed, err := d.readForward(ctx, s, events.Data())
		if err != nil {
			return nil, false, err
		}
		if landed { // an earlier try of this very append had landed after all
			roundsRecorded(s, want)
			return want, false, nil
		}
		if s.rev != rev {
			lost++ // to another node's claim, now read: try again at once
			continue
		}
		// The append that won is not readable yet (a server may refuse an
		// append for one it has not made durable): trying again at once
		// would lose again, so pause, jittered and growing.
		unseen++
		if err := d.recorder().Policy.Pause(ctx, unseen); err != nil {
			return nil, false, err
		}
	}
}

// roundsRecorded notes that the rounds of want are recorded: their markers are
// no longer needed.
func roundsRecorded(s *sendState, want map[int][]int64) {
	for idx := range want {
		if it := s.items[idx]; it != nil {
			it.marker = false
		}
	}
}

// stillDue drops from want the devices already claimed and the commands no
// longer deliverable (forgotten, past their ttl or their late window). A
// command whose round must be recorded (item.marker) stays, without
// devices if need be, unless another node recorded its round meanwhile.
func (d *Dispatcher) stillDue(s *sendState, want map[int][]int64) map[int][]int64 {
	now := d.clock.Now()
	out := make(map[int][]int64, len(want))
	for idx, devices := range want {
		it := s.items[idx]
		if it == nil || (it.hasTTL() && !now.Before(it.ttl)) || (it.late() && !now.Before(it.lateUntil)) {
			continue
		}
		keep := make([]int64, 0, len(devices))
		for _, dev := range devices {
			if _, done := it.claimed[dev]; !done {
				keep = append(keep, dev)
			}
		}
		if len(keep) > 0 || (it.marker && (it.late() || !it.ran)) {
			sortDevices(keep)
			out[idx] = slices.Compact(keep)
		}
	}
	return out
}

// claimEvents builds the CommandsSent events of want, at most ClaimChunk
// devices each. Their ids derive from this process, the stream, the
// expected revision and the content: repeating the same append is a no-op,
// while a different claim, or another node's, never shares an id.
func (d *Dispatcher) claimEvents(s *sendState, want map[int][]int64) (record.Batch, error) {
	events := d.claims(s, want)
	b, err := d.recorder().Encode(events, d.systemMeta(), record.IDs{}) // named from their encoding below
	if err != nil {
		return record.Batch{}, err
	}
	h := sha256.New()
	for _, e := range b.Data() {
		h.Write(e.Data)
	}
	b.Name(record.Derived("claim|" + d.opts.Node + "|" + d.instance + "|" + s.stream + "|" +
		strconv.FormatUint(s.rev, 10) + "|" + hex.EncodeToString(h.Sum(nil)[:16])))
	return b, nil
}

// claims are the CommandsSent events of want, in index order.
func (d *Dispatcher) claims(s *sendState, want map[int][]int64) []domain.Event {
	var events []domain.Event
	for _, idx := range slices.Sorted(maps.Keys(want)) {
		late := s.items[idx].late()
		if len(want[idx]) == 0 { // a round that reached no device, recorded
			events = append(events, domain.CommandsSent{SendID: s.id, Index: idx, Devices: []int64{}, Node: d.opts.Node, Late: late})
		}
		for chunk := range slices.Chunk(want[idx], d.opts.ClaimChunk) {
			events = append(events, domain.CommandsSent{SendID: s.id, Index: idx, Devices: chunk, Node: d.opts.Node, Late: late})
		}
	}
	return events
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
		for i, dev := range won[idx] {
			d.receipts.book.record(dev, send, idx, it.confirmable(), now)
			if d.hub.Send(dev, msg.Encode(domain.DeliveryID(send, idx, dev))) {
				d.stats.deliveries.Add(1)
			} else {
				d.stats.misses.Add(1)
			}
			if i == 0 && len(won[idx]) > 1 {
				// The hub hands the first device's write to a new goroutine,
				// which would wait for this loop to queue the whole round
				// (milliseconds for thousands of devices) unless an idle
				// processor took it: up to 3.6 ms in a broadcast to 10,000.
				// Giving way once has the first devices written now.
				runtime.Gosched()
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

// expire appends CommandExpired for items, for reason (empty: their ttl
// passed), and forgets them. Each expiry has one fixed event id, so nodes
// racing to expire the same command store it once.
func (d *Dispatcher) expire(ctx context.Context, s *sendState, items []*item, reason string) {
	d.storeWaits.Add(1)
	defer d.storeWaits.Add(-1)
	for attempt := 0; attempt <= d.opts.ClaimRetries; attempt++ {
		var events []domain.Event
		var idx []int
		var ids []eventstore.EventID
		for _, it := range items {
			if s.items[it.index] == it {
				events = append(events, domain.CommandExpired{SendID: s.id, Index: it.index, Reason: reason})
				idx = append(idx, it.index)
				ids = append(ids, record.Derived("expired|"+s.stream+"|"+strconv.Itoa(it.index)).ID(0))
			}
		}
		if len(events) == 0 {
			return
		}
		b, err := d.recorder().Encode(events, d.systemMeta(), record.Explicit(ids...))
		if err != nil {
			d.log.Error("encoding expiry", "send", s.id, "error", err)
			return
		}
		res, err := d.appendEvents(ctx, s.stream, eventstore.Exact(s.rev), b)
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
		rev := s.rev
		if _, err := d.readForward(ctx, s, nil); err != nil {
			break
		}
		if s.rev == rev && d.recorder().Policy.Pause(ctx, attempt+1) != nil {
			break // the winning append is not readable yet: see claim
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
	var events []eventstore.RecordedEvent
	landed := false
	_, err := record.Read(rctx, d.store, s.stream, record.Head{Exists: true, Revision: s.rev}, func(e eventstore.RecordedEvent) error {
		for _, m := range mine {
			landed = landed || e.ID == m.ID
		}
		events = append(events, e)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("dispatch: read %s after %d: %w", s.stream, s.rev, err)
	}
	d.applyBatch(ctx, projections.Decode(d.reg, events))
	return landed, nil
}

// isConflict reports whether an append lost to another one.
func isConflict(err error) bool {
	return errors.Is(err, eventstore.ErrWrongExpectedRevision) || errors.Is(err, eventstore.ErrDuplicateEventID)
}

// recorder records the dispatcher's events: each send of an append is
// bounded by AppendTimeout, and one with an unknown outcome is resent as it
// is (same ids, same expectation, so one that landed is answered as such).
func (d *Dispatcher) recorder() record.Log {
	return record.Log{Store: d.store, Registry: d.reg, Policy: record.Policy{AttemptTimeout: d.opts.AppendTimeout}}
}

// systemMeta is the metadata of the events the dispatcher decides.
func (d *Dispatcher) systemMeta() domain.Metadata {
	return domain.Metadata{OccurredAt: d.clock.Now(), Actor: domain.SystemActor(), RequestID: requestPrefix + d.opts.Node}
}

// appendEvents appends b (see recorder). A conflict is returned as it is,
// for the caller to read forward and decide again.
func (d *Dispatcher) appendEvents(ctx context.Context, stream string, expect eventstore.Revision, b record.Batch) (eventstore.AppendResult, error) {
	res, err := d.recorder().Append(ctx, stream, expect, b)
	if err != nil && !isConflict(err) {
		return res, fmt.Errorf("dispatch: append to %s: %w", stream, err)
	}
	return res, err
}

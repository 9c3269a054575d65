package dispatch

import (
	"context"
	"iter"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/domain"
	"tvsm/internal/platform/supervise"
	"tvsm/projections"
	"tvsm/wsgateway"
)

// loopMsg is one request to the loop; exactly one field is set.
type loopMsg struct {
	events   iter.Seq[*projections.Event]
	applied  chan error // receives nil once events are applied, or the panic
	caughtUp bool
	settled  chan struct{}     // closed once pending work is done
	snapshot chan snapshotData // receives the encoded state
	claim    *claimRequest     // a send's claim for its own append
}

// pending is work handed to the loop by other goroutines: connections the
// hub opened, sends whose timers fired and sends appended with this node's
// claim. It never blocks them.
type pending struct {
	mu       sync.Mutex
	conns    []*wsgateway.Conn
	sends    map[int64]struct{}
	appended []appendedSend
	wake     chan struct{} // capacity 1
	live     *atomic.Bool  // the dispatcher has caught up
}

// appendedSend is a send appended with this node's claim (SendAppended).
type appendedSend struct {
	send int64
	rev  uint64
}

func (p *pending) opened(c *wsgateway.Conn) {
	if !p.live.Load() {
		return // catching up: the catch-up rounds see every connection
	}
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
	p.signal()
}

func (p *pending) due(send int64) {
	p.mu.Lock()
	if p.sends == nil {
		p.sends = make(map[int64]struct{})
	}
	p.sends[send] = struct{}{}
	p.mu.Unlock()
	p.signal()
}

func (p *pending) sendAppended(send int64, rev uint64) {
	p.mu.Lock()
	p.appended = append(p.appended, appendedSend{send, rev})
	p.mu.Unlock()
	p.signal()
}

func (p *pending) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take empties the pending work.
func (p *pending) take() ([]*wsgateway.Conn, []int64, []appendedSend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	conns, appended := p.conns, p.appended
	sends := slices.Sorted(maps.Keys(p.sends))
	p.conns, p.sends, p.appended = nil, nil, nil
	return conns, sends, appended
}

// loop owns the state until ctx ends.
func (d *Dispatcher) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.pending.wake:
			supervise.Do(d.log, panicComponent, func() { d.drainPending(ctx) })
		case m := <-d.inbox:
			if p := supervise.Do(d.log, panicComponent, func() { d.handle(ctx, m) }); p != nil {
				release(m, p)
			}
		}
		d.publishGauges()
	}
}

// panicComponent names the dispatcher in panic logs and metrics.
const panicComponent = "dispatcher"

// release answers the waiter of a message whose handling panicked (a
// panic is recovered, logged and counted, and the loop goes on): a batch
// fails with the panic, so the runner resubscribes and applies it again
// (state.apply passes over what it applied already); a settle returns; a
// snapshot is not taken.
func release(m loopMsg, p *supervise.Panic) {
	switch {
	case m.applied != nil:
		m.applied <- p
	case m.settled != nil:
		close(m.settled)
	case m.snapshot != nil:
		close(m.snapshot)
	case m.claim != nil:
		m.claim.reply <- nil
	}
}

// handle serves one loop message.
func (d *Dispatcher) handle(ctx context.Context, m loopMsg) {
	switch {
	case m.applied != nil:
		d.applyBatch(ctx, m.events)
		m.applied <- nil
	case m.caughtUp:
		if !d.caughtUp.Load() {
			// Set before the rounds below look at the hub: an OnOpen that
			// still saw it unset registered its connection before, so a
			// round sees that connection.
			d.liveSince = d.clock.Now()
			d.caughtUp.Store(true)
			d.log.Info("caught up", "live_sends", len(d.state.sends), "live_commands", d.state.items)
			for _, id := range slices.Sorted(maps.Keys(d.state.sends)) {
				d.evaluate(ctx, id)
			}
		}
	case m.settled != nil:
		d.drainPending(ctx)
		close(m.settled)
	case m.snapshot != nil:
		m.snapshot <- d.encodeSnapshot()
	case m.claim != nil:
		m.claim.reply <- d.claimForSend(m.claim)
	}
}

// applyBatch applies decoded log events to the state and, once caught up,
// starts the sends that became live. A send whose append carries this
// node's claim (ClaimWithSend) is started by that claim instead: when the
// log shows it, or on SendAppended, whichever comes first.
func (d *Dispatcher) applyBatch(ctx context.Context, events iter.Seq[*projections.Event]) {
	now := d.clock.Now()
	var created []int64
	var shown []*sendClaim
	for ev := range events {
		if ev.StreamRef.Kind == domain.StreamCommand && d.passOver(ev.StreamRef.ID, ev.Revision) {
			continue
		}
		a := d.state.apply(ev, now, d.opts.Grace)
		if a.err != nil {
			d.stats.decodeErrors.Add(1)
			d.log.Warn("skipping undecodable command event", "stream", ev.Stream,
				"revision", ev.Revision, "type", ev.Type, "error", a.err)
		}
		if a.created != nil && d.sendClaims[a.created.id] == nil {
			created = append(created, a.created.id)
		}
		if a.claim != nil && a.claim.node != d.opts.Node {
			d.receipts.acceptFrom(a.claim, ev.Created)
		}
		if a.claim != nil && a.claim.node == d.opts.Node {
			if c := d.sendClaims[a.claim.send]; c != nil && !c.written && !slices.Contains(shown, c) {
				shown = append(shown, c)
			}
		}
	}
	for _, c := range shown {
		d.claimShown(ctx, c)
	}
	if d.caughtUp.Load() {
		for _, id := range created {
			d.evaluate(ctx, id)
		}
	}
}

// drainPending handles sends appended with this node's claim, due timers
// and opened connections.
func (d *Dispatcher) drainPending(ctx context.Context) {
	conns, sends, appended := d.pending.take()
	if !d.caughtUp.Load() {
		return // catching up evaluates every send against every connection
	}
	for _, a := range appended {
		d.sendAppended(ctx, a.send, a.rev)
	}
	for _, id := range sends {
		d.evaluate(ctx, id)
	}
	if len(conns) > 0 {
		d.keepOpened(conns)
		d.deliverToOpened(ctx, conns)
	}
}

// evaluate does what is due for send id now: expire commands whose ttl has
// passed, run the send-time round of commands whose time has come, run or
// end the late delivery of commands without ttl whose send time passed
// while no node ran, expire those too late for either, and set timers for
// the rest.
func (d *Dispatcher) evaluate(ctx context.Context, id int64) {
	s := d.state.sends[id]
	if s == nil {
		return
	}
	now := d.clock.Now()
	expire := make(map[string][]*item) // by reason
	var start, late []*item
	for _, it := range s.items {
		switch {
		case it == nil:
		case it.hasTTL() && !now.Before(it.ttl):
			expire[""] = append(expire[""], it)
		case now.Before(it.start):
			d.timers.At(timerKey("start", id, it.index), it.start, d.dueFunc(id))
		case it.hasTTL():
			if !it.started {
				start = append(start, it)
			}
		default:
			switch step := d.noTTLStep(it, now); step {
			case stepForget:
				d.state.forget(s, it.index)
			case stepStart:
				start = append(start, it)
			case stepLate:
				late = append(late, it)
			case stepWait:
				d.timers.At(timerKey("late", id, it.index), it.lateUntil, d.dueFunc(id))
			case domain.ExpiredTooLate:
				d.log.Warn("command not delivered: no node handled it in time", "send", id, "index", it.index, "send_time", it.start)
				expire[step] = append(expire[step], it)
			default:
				expire[step] = append(expire[step], it)
			}
		}
		if it != nil && it.hasTTL() && now.Before(it.ttl) {
			d.timers.At(timerKey("ttl", id, it.index), it.ttl, d.dueFunc(id))
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(expire)) {
		d.expire(ctx, s, expire[reason], reason)
	}
	if len(start) > 0 {
		d.startRound(ctx, s, start)
	}
	if len(late) > 0 {
		d.lateRound(ctx, s, late)
	}
}

// What evaluate does with a command without ttl at or past its send time:
// one of these steps, or expire it for a reason (domain.Expired*).
const (
	stepNone   = ""
	stepForget = "forget"
	stepStart  = "start"
	stepLate   = "late"
	stepWait   = "wait"
)

// noTTLStep decides on a command without ttl at or past its send time.
// On time (this node ran at its send time, within the grace), the
// send-time round runs. A command some node handled on time is forgotten
// by a node that cannot run its round on time itself. One nobody handled:
// when this node was not running at the send time, the late delivery
// (within LateLimit of the send time); else, or past LateLimit, expired.
func (d *Dispatcher) noTTLStep(it *item, now time.Time) string {
	missed := it.start.Before(d.liveSince) // due before this node ran
	onTime := !missed && now.Sub(it.start) <= d.opts.Grace
	switch {
	case onTime && it.started:
		return stepNone
	case onTime:
		return stepStart
	case it.ran:
		return stepForget
	case !missed || d.liveSince.Sub(it.start) > d.opts.LateLimit:
		return domain.ExpiredTooLate
	case !it.late():
		return stepLate
	case now.Before(it.lateUntil):
		return stepWait
	}
	return domain.ExpiredMissedSendTime
}

// startRound delivers items at their send time: with a ttl to every target
// device connected now, without one to those connected at the send time.
// Commands without ttl are done afterwards, and their round is recorded
// even when it reached no device; a failed round is retried later, and
// startRound reports false. Devices claimed already are left out, so it
// also finishes a round whose first devices a send's own claim took.
func (d *Dispatcher) startRound(ctx context.Context, s *sendState, items []*item) bool {
	want, _ := roundWant(items, d.targetConns(s), d.targetCount(s), 0)
	if err := d.deliver(ctx, s, want); err != nil {
		d.retryLater(s.id)
		return false
	}
	d.roundDone(s, items)
	return true
}

// roundWant is what the send-time round of items claims (command index →
// devices): the target connections conns not claimed yet, for a command
// without ttl only those connected by its send time; a command without ttl
// whose round is not recorded yet is marked to record itself, with no
// device if need be. hint is how many conns there may be (0: unknown):
// lists of thousands grown by appending cost a quarter of the round.
//
// limit, when above 0, ends the round once its lists hold that many
// devices or more (less than one more connection's worth over it), and
// partial reports that connections were left: a device is in every list
// it is due in or in none, so that it gets the commands in index order.
func roundWant(items []*item, conns iter.Seq[wsgateway.Registered], hint, limit int) (want map[int][]int64, partial bool) {
	if limit > 0 && hint > limit {
		hint = limit
	}
	lists := make([][]int64, len(items)) // by position in items, into want at the end
	if hint > 0 {
		for i := range lists {
			lists[i] = make([]int64, 0, hint)
		}
	}
	listed := 0
	for c := range conns {
		if limit > 0 && listed >= limit {
			partial = true
			break
		}
		for i, it := range items {
			if it.isClaimed(c.Device) {
				continue
			}
			if !it.hasTTL() && c.ConnectedAt.After(it.start) {
				continue
			}
			lists[i] = append(lists[i], c.Device)
			listed++
		}
	}
	want = make(map[int][]int64, len(items))
	for i, it := range items {
		switch {
		case len(lists[i]) > 0:
			want[it.index] = lists[i]
		case !it.hasTTL() && !it.ran:
			want[it.index] = []int64{}
		}
		if !it.hasTTL() && !it.ran {
			it.marker = true
		}
	}
	return want, partial
}

// isClaimed reports whether device is claimed for it (most often none is,
// and the lookup is left out).
func (it *item) isClaimed(device int64) bool {
	if len(it.claimed) == 0 {
		return false
	}
	_, done := it.claimed[device]
	return done
}

// roundDone notes that the send-time round of items has run: a command
// without ttl is done, one with a ttl goes on to devices that connect.
func (d *Dispatcher) roundDone(s *sendState, items []*item) {
	for _, it := range items {
		it.started = true
		if !it.hasTTL() {
			d.state.forget(s, it.index)
		}
	}
}

// lateRound opens the late delivery of items, commands without ttl whose
// send time passed while no node ran: they go to the target devices
// connected now and to those connecting until LateWindow after this node
// caught up; the start of the window is recorded (a CommandsSent marked
// Late, with or without devices) so that the receipts show it is under
// way.
func (d *Dispatcher) lateRound(ctx context.Context, s *sendState, items []*item) {
	until := d.liveSince.Add(d.opts.LateWindow)
	conns := d.targetConns(s)
	want := make(map[int][]int64)
	for _, it := range items {
		d.log.Info("command due while no node ran: delivering it late", "send", s.id, "index", it.index,
			"send_time", it.start, "until", until)
		it.lateUntil, it.marker = until, true
		want[it.index] = []int64{}
		for c := range conns {
			if !it.isClaimed(c.Device) {
				want[it.index] = append(want[it.index], c.Device)
			}
		}
	}
	err := d.deliver(ctx, s, want)
	for _, it := range items {
		if err != nil {
			it.lateUntil = time.Time{} // opened again by the retry
			continue
		}
		it.started = true
		d.timers.At(timerKey("late", s.id, it.index), until, d.dueFunc(s.id))
	}
	if err != nil {
		d.retryLater(s.id)
	}
}

// targetConns yields the connections of the send's target devices: from
// the hub's lists by provider (contiguous, cheap to read for a round over
// many devices, under the lists' read lock: the loop body must not call
// the hub), or by device.
func (d *Dispatcher) targetConns(s *sendState) iter.Seq[wsgateway.Registered] {
	return func(yield func(wsgateway.Registered) bool) {
		switch s.recipients {
		case domain.RecipientDevices:
			for _, id := range s.ids {
				if c, ok := d.hub.Lookup(id); ok {
					id := c.Identity()
					if !yield(wsgateway.Registered{Device: id.Device, Account: id.Account, ConnectedAt: c.ConnectedAt()}) {
						return
					}
				}
			}
		case domain.RecipientProviders:
			for _, p := range s.ids {
				more := true
				d.hub.RangeProvider(p, func(r wsgateway.Registered) bool {
					more = yield(r)
					return more
				})
				if !more {
					return
				}
			}
		case domain.RecipientAccounts:
			d.hub.RangeRegistered(func(p int64, r wsgateway.Registered) bool {
				if s.targets(wsgateway.Identity{Device: r.Device, Account: r.Account, Provider: p}) {
					return yield(r)
				}
				return true
			})
		}
	}
}

// targetCount is how many target connections of s there may be, for
// roundWant (0: not known at once).
func (d *Dispatcher) targetCount(s *sendState) int {
	switch s.recipients {
	case domain.RecipientDevices:
		return min(len(s.ids), d.hub.Count())
	case domain.RecipientProviders:
		n := 0
		for _, p := range s.ids {
			n += d.hub.ProviderCount(p)
		}
		return n
	}
	return 0
}

// deliverToOpened delivers the live ttl commands to newly opened
// connections that are still current.
func (d *Dispatcher) deliverToOpened(ctx context.Context, conns []*wsgateway.Conn) {
	now := d.clock.Now()
	for _, id := range slices.Sorted(maps.Keys(d.state.sends)) {
		s := d.state.sends[id]
		if !s.openAt(now) {
			continue
		}
		want := make(map[int][]int64)
		for _, c := range conns {
			if cur, ok := d.hub.Lookup(c.DeviceID()); !ok || cur != c || !s.targets(c.Identity()) {
				continue
			}
			for _, it := range s.items {
				if it == nil || !it.started || !it.openAt(now) {
					continue
				}
				if _, done := it.claimed[c.DeviceID()]; !done {
					want[it.index] = append(want[it.index], c.DeviceID())
				}
			}
		}
		if err := d.deliver(ctx, s, want); err != nil {
			d.restart(s)
		}
	}
}

// openAt reports whether a command of s may be delivered to a device
// connecting at now.
func (s *sendState) openAt(now time.Time) bool {
	for _, it := range s.items {
		if it != nil && it.started && it.openAt(now) {
			return true
		}
	}
	return false
}

// restart makes the send-time round of s run again soon, after a failed
// delivery: it reaches every target connected then.
func (d *Dispatcher) restart(s *sendState) {
	for _, it := range s.items {
		if it != nil {
			it.started = false
		}
	}
	d.retryLater(s.id)
}

package dispatch

import (
	"context"
	"slices"
	"time"

	"tvsm/domain"
	"tvsm/wsgateway"
)

// A send made on this node can carry this node's claim in its own append
// (ClaimWithSend, then SendAppended): its devices then get the command
// after one durable append instead of two (the send's, then the claim's),
// and without waiting for the log to bring the send back. Nobody can claim
// before a send exists, so that claim cannot lose a race; other nodes see it
// with the send and claim their own devices after it, as they would after
// any claim.
//
// Between the claim and the append's outcome the send is not in the state:
// what the log shows of it waits (applyBatch), and connections opening
// meanwhile are kept for its commands with a ttl. The devices claimed are
// written once, on whichever comes first: SendAppended, or the log showing
// the claim (an append that failed with an unknown outcome may still have
// landed). A claim whose append never shows is dropped after Grace.

// sendClaim is this node's claim made for a send's own append.
type sendClaim struct {
	send  *sendState      // built from the issued event, as the log will show it
	items []*item         // the commands whose send-time round the claim is
	want  map[int][]int64 // the devices claimed, by command index
	// partial: the round met more than SendClaimMax devices and the claim
	// lists the first it met; the others are claimed in an append of
	// their own once those are written to.
	partial bool
	at      time.Time // when it was made
	// opened are connections opened since, for the commands with a ttl.
	opened []*wsgateway.Conn
	// written: the devices were written to (on SendAppended), and the log
	// has not yet shown the send up to rev; its events are passed over
	// until it has.
	written bool
	rev     uint64
}

// claimRequest asks the loop for a send's claim (ClaimWithSend).
type claimRequest struct {
	issued domain.CommandsIssued
	reply  chan []domain.Event // capacity 1
}

// ClaimWithSend returns this node's claim (CommandsSent events) of the
// commands of issued due now, for the target devices connected here, to be
// appended with issued in one append; then the caller reports the append
// with SendAppended. It returns nil, and the send is appended alone and
// claimed as usual once the log shows it, when nothing is due now, when no
// target device is connected here, when the dispatcher has not caught up
// with the log, and when its loop is waiting on the store (a claim or an
// expiry of another send): the send does not wait behind another send's
// append. A round of more than SendClaimMax devices is claimed in two
// steps: this claim lists the first SendClaimMax the round meets, and the
// others are claimed as any round is once those are written to.
func (d *Dispatcher) ClaimWithSend(ctx context.Context, issued domain.CommandsIssued) []domain.Event {
	if !d.caughtUp.Load() || d.storeWaits.Load() > 0 {
		return nil
	}
	req := &claimRequest{issued: issued, reply: make(chan []domain.Event, 1)}
	if err := d.send(ctx, loopMsg{claim: req}); err != nil {
		return nil
	}
	return <-req.reply // the loop answers at once: a claim waits on nothing
}

// SendAppended reports that a send's append, made with the claim
// ClaimWithSend returned, is durable up to lastRevision of its stream. It
// never blocks; the loop writes to the devices claimed.
func (d *Dispatcher) SendAppended(send int64, lastRevision uint64) {
	d.pending.sendAppended(send, lastRevision)
}

// claimForSend answers a claimRequest in the loop.
func (d *Dispatcher) claimForSend(req *claimRequest) []domain.Event {
	if !d.caughtUp.Load() {
		return nil
	}
	e := req.issued
	if _, known := d.state.sends[e.SendID]; known {
		return nil
	}
	s := newSend(e, 0)
	if s == nil {
		return nil
	}
	now := d.clock.Now()
	var due []*item
	for _, it := range s.items {
		if d.dueNow(it, now) {
			due = append(due, it)
		}
	}
	if len(due) == 0 {
		return nil
	}
	// The first devices only: their write waits for the send's append,
	// which grows with every device listed (encoding, then the fsync).
	want, partial := roundWant(due, d.targetConns(s), d.targetCount(s), min(d.opts.SendClaimMax, d.opts.ClaimAppendMax))
	devices := 0
	for _, list := range want {
		devices += len(list)
	}
	if devices == 0 {
		return nil
	}
	// A new send has no claims to leave out (what stillDue does for a round
	// of a known one): its lists are only put in order.
	for idx, list := range want {
		sortDevices(list)
		want[idx] = slices.Compact(list)
	}
	d.pruneSendClaims(now)
	d.sendClaims[e.SendID] = &sendClaim{send: s, items: due, want: want, partial: partial, at: now}
	return d.claims(s, want)
}

// dueNow reports whether the send-time round of a new send's command runs
// now (what evaluate decides for it): its send time has come, and it has a
// ttl that has not passed or is without ttl and on time.
func (d *Dispatcher) dueNow(it *item, now time.Time) bool {
	if now.Before(it.start) {
		return false
	}
	if it.hasTTL() {
		return now.Before(it.ttl)
	}
	return d.noTTLStep(it, now) == stepStart
}

// sendAppended handles SendAppended in the loop: the send joins the state
// as the log will show it (unless the log showed it already), and the
// claim's devices are written to.
func (d *Dispatcher) sendAppended(ctx context.Context, send int64, rev uint64) {
	c := d.sendClaims[send]
	if c == nil || c.written {
		return // the log showed the claim first, or it was dropped
	}
	c.written, c.rev = true, rev
	s := d.state.sends[send]
	if s == nil {
		s = c.send
		d.state.add(s)
	}
	d.state.setRev(s, rev)
	d.writeClaimed(ctx, s, c)
}

// claimShown handles the log showing this node's claim of a send before
// SendAppended did.
func (d *Dispatcher) claimShown(ctx context.Context, c *sendClaim) {
	delete(d.sendClaims, c.send.id)
	if s := d.state.sends[c.send.id]; s != nil {
		d.writeClaimed(ctx, s, c)
	}
}

// writeClaimed writes the claimed commands of s still live to their
// devices, notes the claim, ends their send-time round, hands the
// connections opened meanwhile to the commands with a ttl, and looks at
// the send's other commands.
func (d *Dispatcher) writeClaimed(ctx context.Context, s *sendState, c *sendClaim) {
	items := make(map[int]*item, len(c.items))
	won := make(map[int][]int64, len(c.want))
	var round []*item
	for _, it := range c.items {
		if cur := s.items[it.index]; cur != nil {
			items[it.index], won[it.index] = cur, c.want[it.index]
			round = append(round, cur)
		}
	}
	d.write(s.id, items, won)
	d.stats.sendClaims.Add(1)
	for idx, devices := range won {
		d.state.claim(s, idx, devices, false)
	}
	switch {
	case !c.partial:
		d.roundDone(s, round)
	case !d.startRound(ctx, s, round):
		// The rest of the round, claimed as any round is, failed: the round
		// runs again later for the devices nobody has claimed.
		return
	}
	if len(c.opened) > 0 {
		d.deliverToOpened(ctx, c.opened)
		c.opened = nil
	}
	d.evaluate(ctx, s.id)
}

// passOver reports whether the event of send at rev was applied already:
// the send joined the state with its claim on SendAppended, and the log is
// catching up with that append (the send may even be done and gone from
// the state, which must not take it for a new one).
func (d *Dispatcher) passOver(send int64, rev uint64) bool {
	c := d.sendClaims[send]
	if c == nil || !c.written {
		return false
	}
	if rev >= c.rev {
		delete(d.sendClaims, send)
	}
	return rev <= c.rev
}

// keepOpened keeps connections opened while claims are under way, for
// their commands with a ttl.
func (d *Dispatcher) keepOpened(conns []*wsgateway.Conn) {
	if len(d.sendClaims) == 0 {
		return
	}
	d.pruneSendClaims(d.clock.Now()) // so that a claim never shown keeps no connections
	for _, c := range d.sendClaims {
		if !c.written {
			c.opened = append(c.opened, conns...)
		}
	}
}

// pruneSendClaims drops claims made more than Grace ago whose append the
// log has not shown: a command without ttl would be too late by then.
func (d *Dispatcher) pruneSendClaims(now time.Time) {
	for id, c := range d.sendClaims {
		if now.Sub(c.at) > d.opts.Grace {
			delete(d.sendClaims, id)
		}
	}
}

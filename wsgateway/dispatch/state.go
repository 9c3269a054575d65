package dispatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"tvsm/domain"
	"tvsm/projections"
	"tvsm/wsgateway"
)

// sendState is a live send: the commands of one CommandsIssued that may
// still be delivered, and what is known of command-{id} up to rev.
type sendState struct {
	id         int64
	stream     string
	rev        uint64 // revision of the last event of stream applied
	recipients domain.Recipients
	ids        []int64 // sorted
	issuedAt   time.Time
	items      []*item // by command index; nil once the command is no longer live
	live       int     // non-nil items
}

// item is one live command of a send.
type item struct {
	index   int
	kind    domain.CommandKind
	msgType domain.MessageType
	start   time.Time // send time: post_time or issued_at
	ttl     time.Time // zero: none
	object  json.RawMessage
	claimed map[int64]struct{} // devices any node claimed
	// ran: some node recorded its send-time round (a CommandsSent that is
	// not Late, devices or none), so the command was handled on time.
	ran bool
	// started: the send-time round ran in this process (not persisted: a
	// restarted node runs it again, and claims keep it harmless).
	started bool
	// lateUntil, when set, ends the late delivery of a command without ttl
	// whose send time passed while no node ran: until then it goes to
	// target devices that connect (not persisted: a restarted node opens a
	// window of its own).
	lateUntil time.Time
	// marker: the round under way must record itself even when it claims
	// no device (CommandsSent with no devices), so that other nodes, and
	// the receipts, know the command was handled.
	marker bool
	msg    *wsgateway.CommandMessage // built on first delivery
}

func (it *item) hasTTL() bool { return !it.ttl.IsZero() }

// late reports whether the item is in a late delivery window.
func (it *item) late() bool { return !it.lateUntil.IsZero() }

// confirmable reports whether the item's deliveries can be confirmed.
func (it *item) confirmable() bool {
	return it.kind == domain.CommandUserMessage && it.msgType == domain.MessageConfirm
}

// openAt reports whether the item may be delivered to a device connecting at
// now: its send time has come and its ttl has not passed, or it is in its
// late delivery window.
func (it *item) openAt(now time.Time) bool {
	if it.late() {
		return now.Before(it.lateUntil)
	}
	return it.hasTTL() && !now.Before(it.start) && now.Before(it.ttl)
}

// message returns the item's encoded command, built once.
func (it *item) message() (*wsgateway.CommandMessage, error) {
	if it.msg == nil {
		m, err := wsgateway.NewCommandMessage(it.object)
		if err != nil {
			return nil, err
		}
		it.msg = m
	}
	return it.msg, nil
}

// targets reports whether the send addresses the connected identity.
func (s *sendState) targets(id wsgateway.Identity) bool {
	var x int64
	switch s.recipients {
	case domain.RecipientProviders:
		x = id.Provider
	case domain.RecipientAccounts:
		x = id.Account
	case domain.RecipientDevices:
		x = id.Device
	default:
		return false
	}
	_, found := slices.BinarySearch(s.ids, x)
	return found
}

// state is the set of live sends, owned by the loop goroutine.
type state struct {
	sends map[int64]*sendState
	items int // live items over all sends
	gen   uint64
}

func newState() *state { return &state{sends: make(map[int64]*sendState)} }

// newSend builds the live part of an issued send at now: every command,
// however old; a command handled on time is forgotten when its round's
// claim is applied, and evaluate expires the others. It returns nil when
// nothing is live.
func newSend(e domain.CommandsIssued, rev uint64) *sendState {
	s := &sendState{
		id: e.SendID, stream: domain.CommandStream(e.SendID), rev: rev,
		recipients: e.Recipients, ids: slices.Sorted(slices.Values(e.IDs)), issuedAt: e.IssuedAt,
		items: make([]*item, len(e.Commands)),
	}
	s.ids = slices.Compact(s.ids)
	for i, c := range e.Commands {
		it := &item{
			index: i, kind: c.Kind, msgType: c.MessageType, start: c.SendStart(e.IssuedAt),
			ttl: c.TTL, object: c.Object, claimed: make(map[int64]struct{}),
		}
		s.items[i] = it
		s.live++
	}
	if s.live == 0 {
		return nil
	}
	return s
}

// add makes s live.
func (st *state) add(s *sendState) {
	st.sends[s.id] = s
	st.items += s.live
	st.gen++
}

// forget drops item index of s, and s when it was its last live item.
func (st *state) forget(s *sendState, index int) {
	if index < 0 || index >= len(s.items) || s.items[index] == nil {
		return
	}
	s.items[index] = nil
	s.live--
	st.items--
	st.gen++
	if s.live == 0 && st.sends[s.id] == s {
		delete(st.sends, s.id)
	}
}

// claim records that devices were claimed for item index of s, by a late
// delivery or by a send-time round.
func (st *state) claim(s *sendState, index int, devices []int64, late bool) {
	if index < 0 || index >= len(s.items) || s.items[index] == nil {
		return
	}
	it := s.items[index]
	for _, d := range devices {
		it.claimed[d] = struct{}{}
	}
	it.ran = it.ran || !late
	st.gen++
}

// setRev records that s is known up to rev.
func (st *state) setRev(s *sendState, rev uint64) {
	if rev > s.rev {
		s.rev = rev
		st.gen++
	}
}

// applied is what applying one event did.
type applied struct {
	created *sendState // a send that became live
	err     error      // the event could not be decoded (it is skipped)
	claim   *claimed   // a delivery claim, of this node or another
}

// claimed is a CommandsSent claim of a live command.
type claimed struct {
	send        int64
	index       int
	devices     []int64
	node        string
	confirmable bool
}

// apply applies one event of a command-{id} stream. Events at or below the
// send's known revision were applied already (the dispatcher's own appends,
// a replayed tail) and are skipped, so applying is idempotent. An event of
// a type this node does not know counts as undecodable, as one whose data
// does not decode.
func (st *state) apply(ev *projections.Event, now time.Time, grace time.Duration) applied {
	if ev.StreamRef.Kind != domain.StreamCommand {
		return applied{}
	}
	id := ev.StreamRef.ID
	s := st.sends[id]
	if s != nil && ev.Revision <= s.rev {
		return applied{}
	}
	e, err := ev.Payload, ev.Err
	if ev.Unknown {
		err = fmt.Errorf("%w %q", domain.ErrUnknownEventType, ev.Type)
	}
	if err != nil {
		if s != nil {
			st.setRev(s, ev.Revision)
		}
		return applied{err: err}
	}
	if issued, ok := e.(domain.CommandsIssued); ok {
		if s == nil && issued.SendID == id {
			if s = newSend(issued, ev.Revision); s != nil {
				st.add(s)
				return applied{created: s}
			}
		}
		return applied{}
	}
	if s == nil {
		return applied{} // a send that is no longer (or never was) live
	}
	st.setRev(s, ev.Revision)
	switch e := e.(type) {
	case domain.CommandsSent:
		st.claim(s, e.Index, e.Devices, e.Late)
		if e.Index >= 0 && e.Index < len(s.items) && s.items[e.Index] != nil {
			it := s.items[e.Index]
			a := applied{claim: &claimed{send: s.id, index: e.Index, devices: e.Devices, node: e.Node,
				confirmable: it.confirmable()}}
			if !it.hasTTL() && it.ran && now.Sub(it.start) > grace {
				st.forget(s, e.Index) // handled on time, and too late to run here
			}
			return a
		}
	case domain.CommandExpired:
		st.forget(s, e.Index)
	}
	return applied{}
}

package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
	"tvsm/wsgateway"
)

var now0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testRegistry() *domain.Registry {
	r := domain.NewRegistry()
	domain.RegisterEvents(r)
	return r
}

// recorded encodes events as command-{send} revisions 0, 1, 2, ...
func recorded(t testing.TB, reg *domain.Registry, send int64, events ...domain.Event) []eventstore.RecordedEvent {
	t.Helper()
	out := make([]eventstore.RecordedEvent, len(events))
	for i, e := range events {
		typ, data, err := reg.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = eventstore.RecordedEvent{Stream: domain.CommandStream(send), Revision: uint64(i), Type: typ, Data: data}
	}
	return out
}

func issued(send int64, cmds ...domain.IssuedCommand) domain.CommandsIssued {
	return domain.CommandsIssued{SendID: send, Recipients: domain.RecipientAccounts, IDs: []int64{30, 10, 10}, Commands: cmds, IssuedAt: now0}
}

func cmd(post, ttl time.Time) domain.IssuedCommand {
	return domain.IssuedCommand{Kind: domain.CommandUserMessage, MessageType: domain.MessageConfirm,
		PostTime: post, TTL: ttl, Object: json.RawMessage(`{"command":"user_message","type":"confirm"}`)}
}

func snapshotOf(t testing.TB, st *state) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := st.marshal(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestApplyIsIdempotentAndKeepsOnlyLiveCommands(t *testing.T) {
	reg := testRegistry()
	evs := recorded(t, reg, 7,
		issued(7, cmd(time.Time{}, time.Time{}), cmd(time.Time{}, now0.Add(time.Hour)), cmd(now0.Add(time.Hour), time.Time{})),
		domain.CommandsSent{SendID: 7, Index: 0, Devices: []int64{}}, // its round, on time, reached no device
		domain.CommandsSent{SendID: 7, Index: 1, Devices: []int64{1, 2}},
		domain.CommandsSent{SendID: 7, Index: 2, Devices: []int64{3}},
		domain.CommandExpired{SendID: 7, Index: 2},
	)
	later := now0.Add(2 * time.Minute) // command 0 (no ttl, sent at issue, handled) is past the grace
	once := newState()
	for ev := range projections.Decode(reg, evs) {
		once.apply(ev, later, time.Minute)
	}
	twice := newState()
	for _, batch := range [][]eventstore.RecordedEvent{evs, evs, evs[2:]} {
		for ev := range projections.Decode(reg, batch) {
			twice.apply(ev, later, time.Minute)
		}
	}
	a, b := snapshotOf(t, once), snapshotOf(t, twice)
	if !bytes.Equal(a, b) {
		t.Fatalf("applying twice differs:\n%s\n%s", a, b)
	}
	s := once.sends[7]
	if s == nil || s.live != 1 || s.items[0] != nil || s.items[2] != nil || s.rev != 4 || once.items != 1 {
		t.Fatalf("state %+v", s)
	}
	if _, ok := s.items[1].claimed[2]; !ok || len(s.items[1].claimed) != 2 {
		t.Fatalf("claims %v", s.items[1].claimed)
	}
	if !s.targets(identity(5, 10)) || s.targets(identity(5, 20)) {
		t.Fatal("targets")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	reg := testRegistry()
	st := newState()
	evs := recorded(t, reg, 9,
		issued(9, cmd(now0.Add(time.Hour), now0.Add(2*time.Hour)), cmd(time.Time{}, now0.Add(time.Hour))),
		domain.CommandsSent{SendID: 9, Index: 1, Devices: []int64{4, 2}},
	)
	for ev := range projections.Decode(reg, evs) {
		st.apply(ev, now0, time.Minute)
	}
	data := snapshotOf(t, st)
	back := newState()
	if err := back.unmarshal(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if again := snapshotOf(t, back); !bytes.Equal(again, data) {
		t.Fatalf("round trip differs:\n%s\n%s", data, again)
	}
	if back.items != 2 || back.sends[9].rev != 1 {
		t.Fatalf("restored %+v", back.sends[9])
	}
}

// FuzzSnapshotRestore feeds arbitrary payloads to the snapshot decoder
// (the checksum normally keeps damaged files away; a future format bug must
// still not panic) and checks that whatever it accepts round-trips.
func FuzzSnapshotRestore(f *testing.F) {
	f.Add([]byte(snapshotFormat + "\n"))
	f.Add([]byte(snapshotFormat + "\n" + `{"id":3,"rev":2,"recipients":"devices","ids":[5],"issued_at":"2026-03-01T12:00:00Z","items":[{"index":1,"kind":"reinit","start":"2026-03-01T12:00:00Z","ttl":"2026-03-01T13:00:00Z","object":{"command":"reinit"},"claimed":[5]}]}` + "\n"))
	f.Add([]byte(snapshotFormat + "\n" + `{"id":3,"recipients":"providers","items":[{"index":15,"start":"2026-03-01T12:00:00Z","object":{}},{"index":15}]}`))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st := newState()
		if err := st.unmarshal(bytes.NewReader(data)); err != nil {
			return
		}
		out := snapshotOf(t, st)
		back := newState()
		if err := back.unmarshal(bytes.NewReader(out)); err != nil {
			t.Fatalf("re-reading own snapshot: %v\n%s", err, out)
		}
		if again := snapshotOf(t, back); !bytes.Equal(again, out) {
			t.Fatalf("not stable:\n%s\n%s", out, again)
		}
		for _, s := range st.sends {
			if len(s.items) > domain.MaxSendCommands || s.live == 0 {
				t.Fatalf("send %d accepted with %d command slots, %d live", s.id, len(s.items), s.live)
			}
		}
	})
}

func TestSentBookAcceptsEachReceiptOnce(t *testing.T) {
	b := newSentBook(3, time.Hour)
	b.record(1, 100, 0, false, now0)
	b.record(1, 100, 1, true, now0)
	if b.report(2, 100, 0, receiptAck) {
		t.Fatal("ack from a device that was not sent the command")
	}
	if !b.report(1, 100, 0, receiptAck) || b.report(1, 100, 0, receiptAck) {
		t.Fatal("ack accepted other than once")
	}
	if b.report(1, 100, 0, receiptConfirm) {
		t.Fatal("confirm of a notify accepted")
	}
	if !b.report(1, 100, 1, receiptConfirm) || !b.report(1, 100, 1, receiptAck) || b.report(1, 100, 1, receiptConfirm) {
		t.Fatal("confirm message: want one confirm and one ack")
	}
	if n := b.size(); n != 0 {
		t.Fatalf("%d entries left after every receipt", n)
	}
	for i := range 5 { // beyond perDevice: the oldest go
		b.record(1, int64(200+i), 0, false, now0.Add(time.Duration(i)*time.Minute))
	}
	if b.size() != 3 || b.report(1, 200, 0, receiptAck) || !b.report(1, 204, 0, receiptAck) {
		t.Fatal("per-device bound")
	}
	b.prune(now0.Add(time.Hour + 3*time.Minute + 30*time.Second))
	if b.size() != 0 {
		t.Fatalf("%d entries older than the window kept", b.size())
	}
}

func TestSentBookAcceptsEachReceiptOfAnotherNodesClaimOnce(t *testing.T) {
	// Given another node's claims of a notify and of a confirm message
	b := newSentBook(3, time.Hour)
	b.recordForeign([]int64{9, 3, 5}, 100, 0, false, now0) // unsorted, as an old record may be
	b.recordForeign([]int64{3, 7}, 100, 1, true, now0)
	if n := b.size(); n != 5 {
		t.Fatalf("%d devices held, want 5", n)
	}
	// When their devices report here, then each delivery is accepted once
	if b.report(4, 100, 0, receiptAck) || b.report(3, 101, 0, receiptAck) || b.report(9, 100, 1, receiptAck) {
		t.Fatal("ack of a delivery no claim made accepted")
	}
	for _, dev := range []int64{3, 5, 9} {
		if !b.report(dev, 100, 0, receiptAck) || b.report(dev, 100, 0, receiptAck) {
			t.Fatalf("device %d: ack accepted other than once", dev)
		}
		if b.report(dev, 100, 0, receiptConfirm) {
			t.Fatalf("device %d: confirm of a notify accepted", dev)
		}
	}
	if !b.report(7, 100, 1, receiptConfirm) || !b.report(7, 100, 1, receiptAck) ||
		b.report(7, 100, 1, receiptConfirm) || b.report(7, 100, 1, receiptAck) {
		t.Fatal("confirm message: want one confirm and one ack")
	}
	if !b.report(3, 100, 1, receiptAck) {
		t.Fatal("ack of a confirm message refused")
	}
	if n := b.size(); n != 1 { // device 3's confirm is still awaited
		t.Fatalf("%d entries left, want 1", n)
	}
	// and the window forgets claims and entries alike
	b.recordForeign([]int64{1}, 102, 0, false, now0.Add(30*time.Minute))
	b.prune(now0.Add(time.Hour + time.Minute))
	if n := b.size(); n != 1 || b.report(3, 100, 1, receiptConfirm) || !b.report(1, 102, 0, receiptAck) {
		t.Fatalf("after the window: %d held, or the wrong ones", n)
	}
}

func identity(device, account int64) wsgateway.Identity {
	return wsgateway.Identity{Device: device, Account: account, Provider: 1}
}

func TestApplySkipsOtherStreamsAndCountsUnknownTypesAsUndecodable(t *testing.T) {
	reg := testRegistry()
	// Given a live send and, after it, an event of a type this node does
	// not know, one of a receipt stream and one of a command stream whose
	// name no helper writes,
	evs := recorded(t, reg, 7, issued(7, cmd(time.Time{}, now0.Add(time.Hour))), domain.CommandExpired{SendID: 7, Index: 0})
	evs[1].Type = "CommandsRecalled.v1"
	receipt := recorded(t, reg, 7, domain.CommandExpired{SendID: 7, Index: 0})[0]
	receipt.Stream, receipt.Revision = domain.ReceiptStream(7), 5
	odd := recorded(t, reg, 7, domain.CommandExpired{SendID: 7, Index: 0})[0]
	odd.Stream, odd.Revision = "command-007", 6
	st := newState()
	var results []applied
	// when applied,
	for ev := range projections.Decode(reg, append(evs, receipt, odd)) {
		results = append(results, st.apply(ev, now0, time.Minute))
	}
	// then the unknown type is reported undecodable and its revision is
	// known, while the other streams change nothing.
	if results[0].created == nil || !errors.Is(results[1].err, domain.ErrUnknownEventType) ||
		results[2] != (applied{}) || results[3] != (applied{}) {
		t.Fatalf("results %+v", results)
	}
	if s := st.sends[7]; s == nil || s.rev != 1 || s.live != 1 || len(st.sends) != 1 {
		t.Fatalf("state %+v", st.sends)
	}
}

// A command without ttl stays live, however old, until a round handled it
// on time (its claim, with devices or none) or the dispatcher expires it;
// the claims of a late delivery do not count as handled on time. Whether
// a round ran survives a snapshot.
func TestCommandWithoutTTLLiveUntilItsRoundIsRecorded(t *testing.T) {
	reg := testRegistry()
	evs := recorded(t, reg, 8,
		issued(8, cmd(time.Time{}, time.Time{}), cmd(time.Time{}, time.Time{})),
		domain.CommandsSent{SendID: 8, Index: 1, Devices: []int64{5}, Late: true},
	)
	st := newState()
	dayLater := now0.Add(24 * time.Hour)
	for ev := range projections.Decode(reg, evs) {
		st.apply(ev, dayLater, time.Minute)
	}
	s := st.sends[8]
	if s == nil || s.live != 2 || s.items[1].ran || len(s.items[1].claimed) != 1 {
		t.Fatalf("after a late claim: %+v", s)
	}
	onTime := recorded(t, reg, 8, issued(8), domain.CommandsSent{SendID: 8, Index: 0, Devices: []int64{}})[1]
	onTime.Revision = 2
	for ev := range projections.Decode(reg, []eventstore.RecordedEvent{onTime}) {
		st.apply(ev, now0, time.Minute) // within the grace: still live, handled
	}
	if !s.items[0].ran || s.live != 2 {
		t.Fatalf("after an on-time round within the grace: %+v", s.items[0])
	}
	back := newState()
	if err := back.unmarshal(bytes.NewReader(snapshotOf(t, st))); err != nil {
		t.Fatal(err)
	}
	if b := back.sends[8]; !b.items[0].ran || b.items[1].ran {
		t.Fatalf("restored: ran %v and %v, want true and false", b.items[0].ran, b.items[1].ran)
	}
	onTime.Revision = 3
	for ev := range projections.Decode(reg, []eventstore.RecordedEvent{onTime}) {
		st.apply(ev, now0.Add(2*time.Minute), time.Minute) // past the grace: forgotten
	}
	if s.items[0] != nil || s.live != 1 {
		t.Fatalf("after an on-time round seen past the grace: %+v", s)
	}
}

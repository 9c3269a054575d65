package query_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/internal/app/query"
)

var sendT0 = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// at is an envelope of e recorded at t.
func at(t time.Time, e domain.Event) domain.Envelope {
	return domain.Envelope{Event: e, OccurredAt: t, Actor: domain.SystemActor(), RequestID: "r"}
}

// sendHistory is a send of four commands to devices 1-3 and what the
// dispatcher and the devices recorded of it: given for FoldSend.
func sendHistory() []domain.Envelope {
	obj := json.RawMessage(`{"command":"restart"}`)
	issued := domain.Envelope{Event: domain.CommandsIssued{SendID: 5, Recipients: domain.RecipientDevices, IDs: []int64{1, 2, 3},
		Scope: new(int64(7)), IssuedAt: sendT0, Commands: []domain.IssuedCommand{
			{Kind: domain.CommandRestart, Object: obj}, // 0: now, no ttl
			{Kind: domain.CommandUserMessage, MessageType: domain.MessageConfirm, TTL: sendT0.Add(time.Hour), Object: obj},    // 1: now until +1h
			{Kind: domain.CommandReinit, PostTime: sendT0.Add(10 * time.Minute), TTL: sendT0.Add(2 * time.Hour), Object: obj}, // 2: +10m until +2h
			{Kind: domain.CommandUpdate, PostTime: sendT0.Add(10 * time.Minute), Object: obj},                                 // 3: at +10m
		}}, OccurredAt: sendT0, Actor: domain.AdminActor("ops"), RequestID: "r"}
	s := func(d time.Duration) time.Time { return sendT0.Add(d) }
	return []domain.Envelope{
		issued,
		at(s(time.Second), domain.CommandsSent{SendID: 5, Index: 0, Devices: []int64{2, 1}}),
		at(s(time.Second), domain.CommandsSent{SendID: 5, Index: 1, Devices: []int64{1, 2, 3}}),
		at(s(2*time.Second), domain.CommandsAcked{SendID: 5, Index: 1, Devices: []int64{1, 2}}),
		at(s(3*time.Second), domain.CommandsAcked{SendID: 5, Index: 1, Devices: []int64{1}}), // a repeat: the first counts
		at(s(time.Minute), domain.CommandsConfirmed{SendID: 5, Index: 1, Devices: []int64{1}}),
		at(s(time.Minute), domain.CommandsAcked{SendID: 5, Index: 0, Devices: []int64{9}}), // never sent to 9: ignored
		at(s(time.Minute), domain.CommandsAcked{SendID: 5, Index: 7, Devices: []int64{1}}), // no command 7: ignored
	}
}

// receipts renders a command's receipts as "device:status ...".
func receipts(c query.CommandView) string {
	out := ""
	for i, r := range c.Receipts {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%d:%s", r.Device, r.Status)
	}
	return out
}

func TestFoldSendStates(t *testing.T) {
	expired := at(sendT0.Add(2*time.Hour), domain.CommandExpired{SendID: 5, Index: 2})
	tests := []struct {
		name     string
		now      time.Time
		extra    []domain.Envelope
		states   []query.CommandState
		receipts []string
	}{
		{"at once", sendT0.Add(5 * time.Minute), nil,
			[]query.CommandState{query.CommandDone, query.CommandSending, query.CommandQueued, query.CommandQueued},
			[]string{"1:sent 2:sent", "1:confirmed 2:acked 3:sent", "", ""}},
		{"after post_time", sendT0.Add(10 * time.Minute), nil,
			[]query.CommandState{query.CommandDone, query.CommandSending, query.CommandSending, query.CommandDone},
			[]string{"1:sent 2:sent", "1:confirmed 2:acked 3:sent", "", ""}},
		{"after the confirm's ttl", sendT0.Add(time.Hour), nil,
			[]query.CommandState{query.CommandDone, query.CommandExpired, query.CommandSending, query.CommandDone},
			[]string{"1:sent 2:sent", "1:confirmed 2:acked 3:expired", "", ""}},
		{"expiry recorded before the clock says so", sendT0.Add(20 * time.Minute), []domain.Envelope{expired},
			[]query.CommandState{query.CommandDone, query.CommandSending, query.CommandExpired, query.CommandDone},
			[]string{"1:sent 2:sent", "1:confirmed 2:acked 3:sent", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := query.FoldSend(append(sendHistory(), tt.extra...), tt.now)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range v.Commands {
				if c.Index != i || c.State != tt.states[i] || receipts(c) != tt.receipts[i] {
					t.Errorf("commands[%d]: index %d, %s, receipts %q; want %s, %q", i, c.Index, c.State, receipts(c), tt.states[i], tt.receipts[i])
				}
			}
		})
	}
}

// A command without ttl delivered late (its send time passed while no node
// ran) is sending while its late delivery is under way, then expired for
// its reason with the devices it reached; a ttl's expiry says so too.
func TestFoldSendLateDeliveryAndReasons(t *testing.T) {
	late := []domain.Envelope{
		at(sendT0.Add(20*time.Minute), domain.CommandsSent{SendID: 5, Index: 3, Devices: []int64{}, Late: true}),
		at(sendT0.Add(21*time.Minute), domain.CommandsSent{SendID: 5, Index: 3, Devices: []int64{2}, Late: true}),
	}
	v, err := query.FoldSend(append(sendHistory(), late...), sendT0.Add(21*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if c := v.Commands[3]; c.State != query.CommandSending || c.Reason != "" || c.Sent != 1 {
		t.Fatalf("during the late delivery: %s %q, %d sent", c.State, c.Reason, c.Sent)
	}
	ended := at(sendT0.Add(22*time.Minute), domain.CommandExpired{SendID: 5, Index: 3, Reason: domain.ExpiredMissedSendTime})
	v, err = query.FoldSend(append(append(sendHistory(), late...), ended), sendT0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		state  query.CommandState
		reason string
	}{
		{query.CommandDone, ""},
		{query.CommandExpired, query.ExpiredTTL}, // no event: the clock says so
		{query.CommandExpired, query.ExpiredTTL},
		{query.CommandExpired, domain.ExpiredMissedSendTime},
	} {
		if c := v.Commands[i]; c.State != want.state || c.Reason != want.reason {
			t.Errorf("commands[%d]: %s %q, want %s %q", i, c.State, c.Reason, want.state, want.reason)
		}
	}
	if c := v.Commands[3]; c.Sent != 1 || receipts(c) != "2:expired" {
		t.Errorf("the late delivery's receipts: %d sent, %q", c.Sent, receipts(c))
	}
}

func TestFoldSendReceipts(t *testing.T) {
	v, err := query.FoldSend(sendHistory(), sendT0.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if v.SendID != 5 || v.Recipients != domain.RecipientDevices || v.Scope == nil || *v.Scope != 7 ||
		!v.Issued.Equal(sendT0) || v.IssuedBy != domain.AdminActor("ops") || len(v.Commands) != 4 {
		t.Fatalf("view %+v", v)
	}
	c := v.Commands[1]
	if c.Sent != 3 || c.Acked != 2 || c.Confirmed != 1 {
		t.Errorf("counts %d/%d/%d, want 3/2/1", c.Sent, c.Acked, c.Confirmed)
	}
	want := query.DeviceReceipt{Device: 1, Status: query.ReceiptConfirmed,
		Sent: sendT0.Add(time.Second), Acked: sendT0.Add(2 * time.Second), Confirmed: sendT0.Add(time.Minute)}
	if c.Receipts[0] != want {
		t.Errorf("device 1: %+v, want %+v", c.Receipts[0], want)
	}
	if v.Commands[0].Acked != 0 {
		t.Errorf("an ack of a device never sent to counts: %+v", v.Commands[0])
	}
}

// The fold does not depend on the order events are read in, nor on
// repeats (the dispatcher may record a step twice).
func TestFoldSendOrderAndRepeats(t *testing.T) {
	now := sendT0.Add(time.Hour)
	want, err := query.FoldSend(sendHistory(), now)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		events := append(sendHistory(), sendHistory()[1:]...)
		r.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		got, err := query.FoldSend(events, now)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffled and repeated: %+v, %v\nwant %+v", got, err, want)
		}
	}
}

func TestFoldSendWithoutIssue(t *testing.T) {
	_, err := query.FoldSend(sendHistory()[1:], sendT0)
	if !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("error %v, want ErrNotFound", err)
	}
}

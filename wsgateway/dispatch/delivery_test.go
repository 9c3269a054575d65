package dispatch_test

import (
	"slices"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/wsgateway"
)

// fleet connects devices 1-4: 1 and 2 of account 10, 3 of account 20 (all
// of provider 1), 4 of account 30 of provider 2.
func fleet(t *testing.T, n *node) map[int64]*device {
	t.Helper()
	return map[int64]*device{
		1: n.connect(t, 1, 10, 1), 2: n.connect(t, 2, 10, 1),
		3: n.connect(t, 3, 20, 1), 4: n.connect(t, 4, 30, 2),
	}
}

func TestEachRecipientsClassReachesItsDevicesOnly(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	devs := fleet(t, n)
	for _, tt := range []struct {
		to   domain.Recipients
		ids  []int64
		want []int64
	}{
		{domain.RecipientProviders, []int64{1}, []int64{1, 2, 3}},
		{domain.RecipientAccounts, []int64{10, 30}, []int64{1, 2, 4}},
		{domain.RecipientDevices, []int64{3, 4, 99}, []int64{3, 4}},
	} {
		send := e.issue(t, tt.to, tt.ids, message("hello "+string(tt.to)))
		for id, dev := range devs {
			if !slices.Contains(tt.want, id) {
				dev.nothingMore(t)
				continue
			}
			m := dev.next(t)
			if m.Type != "command" || m.ID != domain.DeliveryID(send, 0, id) || m.Command["text"] != "hello "+string(tt.to) {
				t.Fatalf("%s: device %d got %+v", tt.to, id, m)
			}
		}
	}
}

func TestSeveralCommandsArriveInOrderWithDistinctIDs(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n.connect(t, 5, 50, 1)
	send := e.issue(t, domain.RecipientDevices, []int64{5},
		message("first"), kind(domain.CommandRefreshChannelList), kind(domain.CommandSwitchToChannel))
	for i, want := range []string{"user_message", "refresh_channel_list", "switch_to_channel"} {
		m := dev.next(t)
		if m.ID != domain.DeliveryID(send, i, 5) || m.Command["command"] != want {
			t.Fatalf("message %d: %+v, want %s", i, m, want)
		}
	}
	dev.nothingMore(t)
	// One claim per command, all in the send's stream.
	var claimed []int
	for _, ev := range e.events(t, domain.CommandStream(send)) {
		if c, ok := ev.(domain.CommandsSent); ok {
			if !slices.Equal(c.Devices, []int64{5}) || c.Node != "n1" {
				t.Fatalf("claim %+v", c)
			}
			claimed = append(claimed, c.Index)
		}
	}
	if !slices.Equal(claimed, []int{0, 1, 2}) {
		t.Fatalf("claims for commands %v", claimed)
	}
}

func TestDelayedCommandWaitsForPostTime(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	early := n.connect(t, 1, 10, 1)
	send := e.issue(t, domain.RecipientProviders, []int64{1}, message("later").at(t0.Add(10*time.Minute)))

	e.advance(t, 9*time.Minute)
	early.nothingMore(t)
	before := n.connect(t, 2, 10, 1) // connects before post_time: gets it

	e.advance(t, time.Minute)
	for _, dev := range []*device{early, before} {
		if m := dev.next(t); m.ID != domain.DeliveryID(send, 0, dev.id) {
			t.Fatalf("device %d got %+v", dev.id, m)
		}
	}
	e.advance(t, time.Second)
	late := n.connect(t, 3, 10, 1) // after post_time, no ttl: not a recipient
	late.nothingMore(t)
	early.nothingMore(t)
	if s := n.d.Stats(); s.LiveCommands != 0 {
		t.Fatalf("%d commands still live after their send time", s.LiveCommands)
	}
}

func TestCommandWithoutTTLSkipsDevicesConnectingAfterSendTime(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	on := n.connect(t, 1, 10, 1)
	e.clock.Advance(time.Second)
	issued := e.prepare(t, domain.RecipientAccounts, []int64{10}, message("now"))
	// Device 2 connects after the send was issued but before this node
	// handles it: it was not connected at the send time.
	e.clock.Advance(time.Second)
	after := n.connect(t, 2, 10, 1)
	e.publish(t, issued)
	if m := on.next(t); m.ID != domain.DeliveryID(issued.SendID, 0, 1) {
		t.Fatalf("got %+v", m)
	}
	after.nothingMore(t)
}

func TestTTLReachesDevicesConnectingBeforeItThenExpires(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	first := n.connect(t, 1, 10, 1)
	ttl := t0.Add(30 * time.Minute)
	send := e.issue(t, domain.RecipientProviders, []int64{1}, message("until").until(ttl))
	if m := first.next(t); m.ID != domain.DeliveryID(send, 0, 1) {
		t.Fatalf("got %+v", m)
	}

	e.advance(t, 10*time.Minute)
	second := n.connect(t, 2, 10, 1)
	if m := second.next(t); m.ID != domain.DeliveryID(send, 0, 2) {
		t.Fatalf("device connecting before ttl got %+v", m)
	}

	e.advance(t, 20*time.Minute) // reaches the ttl
	e.waitEvents(t, domain.CommandStream(send), "CommandExpired", func(evs []domain.Event) bool {
		return slices.Contains(evs, domain.Event(domain.CommandExpired{SendID: send, Index: 0}))
	})
	third := n.connect(t, 3, 10, 1)
	third.nothingMore(t)
	first.nothingMore(t)
	second.nothingMore(t)
	if s := n.d.Stats(); s.LiveCommands != 0 || s.Expired != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestNeverTwiceToAReconnectingDevice(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n.connect(t, 1, 10, 1)
	send := e.issue(t, domain.RecipientDevices, []int64{1}, message("once").until(t0.Add(time.Hour)))
	if m := dev.next(t); m.ID != domain.DeliveryID(send, 0, 1) {
		t.Fatalf("got %+v", m)
	}
	dev.hangUp(t)
	e.advance(t, time.Minute)
	again := n.connect(t, 1, 10, 1)
	again.nothingMore(t)
	// A replacing connection (the old one still registered) gets nothing either.
	third := n.connect(t, 1, 10, 1)
	third.nothingMore(t)
}

func TestNoTTLCommandHandledTooLateIsDropped(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n.connect(t, 1, 10, 1)
	e.issue(t, domain.RecipientDevices, []int64{1}, message("stale").at(t0.Add(time.Minute)))
	// The node wakes up three minutes later (a suspended VM, a clock jump):
	// more than the grace after the send time, so nothing is sent, and the
	// expiry says why.
	e.advance(t, 4*time.Minute)
	dev.nothingMore(t)
	if s := n.d.Stats(); s.LiveCommands != 0 || s.Deliveries != 0 {
		t.Fatalf("stats %+v", s)
	}
	if reason := e.expiredFor(t, 1); reason != domain.ExpiredTooLate {
		t.Fatalf("expired for %q, want %q", reason, domain.ExpiredTooLate)
	}
}

func TestUpdateCommandClosesConnectionWithRevokedAfterTheMessage(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n.connect(t, 1, 10, 1)
	other := n.connect(t, 2, 20, 1)
	send := e.issue(t, domain.RecipientDevices, []int64{1}, kind(domain.CommandUpdate))
	if m := dev.next(t); m.ID != domain.DeliveryID(send, 0, 1) || m.Command["command"] != "update" {
		t.Fatalf("got %+v", m)
	}
	if code := dev.closeCode(t); code != wsgateway.CloseRevoked {
		t.Fatalf("close code %d, want %d", code, wsgateway.CloseRevoked)
	}
	other.nothingMore(t)
	evs := e.waitEvents(t, domain.DeviceStream(1), "DeviceDisconnected", func(evs []domain.Event) bool { return len(evs) == 2 })
	if dis, ok := evs[1].(domain.DeviceDisconnected); !ok || dis.Code != wsgateway.CloseRevoked || dis.Reason != "revoked" {
		t.Fatalf("event %+v", evs[1])
	}
}

func TestConnectAndDisconnectAreAppended(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n.connect(t, 7, 70, 3)
	e.clock.Advance(90 * time.Second)
	dev.hangUp(t)
	evs := e.waitEvents(t, domain.DeviceStream(7), "two events", func(evs []domain.Event) bool { return len(evs) == 2 })
	want := []domain.Event{
		domain.DeviceConnected{DeviceID: 7, Account: 70, Provider: 3, Node: "n1", Address: "127.0.0.1"},
		domain.DeviceDisconnected{DeviceID: 7, Account: 70, Provider: 3, Node: "n1", Code: 1000, Reason: "client_closed", Seconds: 90},
	}
	if !slices.Equal(evs, want) {
		t.Fatalf("events %+v\nwant %+v", evs, want)
	}
	if s := n.d.Stats(); s.ConnectionEvents != 2 || s.ConnectionEventsDropped != 0 {
		t.Fatalf("stats %+v", s)
	}
}

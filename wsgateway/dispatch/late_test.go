package dispatch_test

import (
	"slices"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/wsgateway"
)

// sentEvents returns the CommandsSent of command index 0 of send.
func (e *env) sentEvents(t *testing.T, send int64) []domain.CommandsSent {
	t.Helper()
	var out []domain.CommandsSent
	for _, ev := range e.events(t, domain.CommandStream(send)) {
		if s, ok := ev.(domain.CommandsSent); ok && s.Index == 0 {
			out = append(out, s)
		}
	}
	return out
}

// expiredFor waits for command 0 of send to expire and returns the reason.
func (e *env) expiredFor(t *testing.T, send int64) string {
	t.Helper()
	var reason string
	e.waitEvents(t, domain.CommandStream(send), "CommandExpired", func(evs []domain.Event) bool {
		for _, ev := range evs {
			if x, ok := ev.(domain.CommandExpired); ok && x.Index == 0 {
				reason = x.Reason
				return true
			}
		}
		return false
	})
	return reason
}

// A delayed command whose post_time passed while no node ran goes, once a
// node has started, to the target devices that connect within the late
// window, each once; then it expires with the reason, and a device
// connecting later gets nothing.
func TestCommandDueWhileNoNodeRanIsDeliveredLate(t *testing.T) {
	e := newEnv(t)
	send := e.issue(t, domain.RecipientProviders, []int64{1}, message("at ten").at(t0.Add(10*time.Minute)))
	e.clock.Advance(20 * time.Minute) // no node runs at post_time
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	n.settle(t)
	// The window's start is recorded, with no device connected yet.
	if got := e.sentEvents(t, send); len(got) != 1 || !got[0].Late || len(got[0].Devices) != 0 {
		t.Fatalf("claims at the start of the window: %+v", got)
	}
	e.advance(t, 10*time.Second)
	first := n.connect(t, 1, 10, 1)
	if m := first.next(t); m.ID != domain.DeliveryID(send, 0, 1) || m.Command["text"] != "at ten" {
		t.Fatalf("device connecting within the window got %+v", m)
	}
	e.advance(t, 40*time.Second)
	second := n.connect(t, 2, 20, 1)
	if m := second.next(t); m.ID != domain.DeliveryID(send, 0, 2) {
		t.Fatalf("second device within the window got %+v", m)
	}
	first.hangUp(t)
	again := n.connect(t, 1, 10, 1) // reconnecting within the window: not twice
	again.nothingMore(t)

	e.advance(t, 11*time.Second) // the window (a minute from the start) ends
	if reason := e.expiredFor(t, send); reason != domain.ExpiredMissedSendTime {
		t.Fatalf("expired for %q, want %q", reason, domain.ExpiredMissedSendTime)
	}
	late := n.connect(t, 3, 30, 1)
	late.nothingMore(t)
	var devices []int64
	for _, c := range e.sentEvents(t, send) {
		if !c.Late {
			t.Fatalf("a claim of the late delivery not marked late: %+v", c)
		}
		devices = append(devices, c.Devices...)
	}
	if slices.Sort(devices); !slices.Equal(devices, []int64{1, 2}) {
		t.Fatalf("claimed %v, want devices 1 and 2 once each", devices)
	}
	if s := n.d.Stats(); s.LiveCommands != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// A device connected when the node catches up gets a command missed while
// no node ran at once; an immediate command issued just before a crash is
// missed the same way.
func TestImmediateCommandIssuedWhileNoNodeRanReachesConnectedDevices(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	n1 := e.startNode(t, "n1", dir, wsgateway.Options{})
	n1.stop(t)
	issued := e.prepare(t, domain.RecipientAccounts, []int64{10}, message("hello"))
	e.publishAsync(t, issued) // appended while no node runs
	e.clock.Advance(5 * time.Second)
	n2 := e.startNode(t, "n2", dir, wsgateway.Options{})
	dev := n2.connect(t, 1, 10, 1)
	if m := dev.next(t); m.ID != domain.DeliveryID(issued.SendID, 0, 1) {
		t.Fatalf("got %+v", m)
	}
	e.advance(t, time.Minute)
	if reason := e.expiredFor(t, issued.SendID); reason != domain.ExpiredMissedSendTime {
		t.Fatalf("expired for %q", reason)
	}
}

// A command some node handled on time is never delivered late, even when
// its round reached no device: the round is recorded all the same.
func TestCommandHandledOnTimeIsNotDeliveredLate(t *testing.T) {
	for _, snapshot := range []bool{true, false} {
		name := map[bool]string{true: "from snapshot", false: "without snapshot"}[snapshot]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			dir := t.TempDir()
			n1 := e.startNode(t, "n1", dir, wsgateway.Options{})
			send := e.issue(t, domain.RecipientDevices, []int64{1}, message("nobody home").at(t0.Add(time.Minute)))
			e.advance(t, time.Minute)
			if got := e.sentEvents(t, send); len(got) != 1 || got[0].Late || len(got[0].Devices) != 0 || got[0].Node != "n1" {
				t.Fatalf("the round without devices was recorded as %+v", got)
			}
			n1.stop(t)
			e.clock.Advance(5 * time.Minute)
			if !snapshot {
				dir = t.TempDir()
			}
			n2 := e.startNode(t, "n2", dir, wsgateway.Options{})
			dev := n2.connect(t, 1, 10, 1)
			dev.nothingMore(t)
			e.advance(t, 2*time.Minute)
			if evs := e.events(t, domain.CommandStream(send)); len(evs) != 2 {
				t.Fatalf("the send's stream: %+v, want the issue and its round only", evs)
			}
		})
	}
}

// Past the late limit a command missed while no node ran is expired
// undelivered.
func TestCommandMissedLongAgoExpiresUndelivered(t *testing.T) {
	e := newEnv(t)
	send := e.issue(t, domain.RecipientProviders, []int64{1}, message("old news"))
	e.clock.Advance(2 * time.Hour)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	if reason := e.expiredFor(t, send); reason != domain.ExpiredTooLate {
		t.Fatalf("expired for %q, want %q", reason, domain.ExpiredTooLate)
	}
	dev := n.connect(t, 1, 10, 1)
	dev.nothingMore(t)
	if got := e.sentEvents(t, send); len(got) != 0 {
		t.Fatalf("claims %+v", got)
	}
}

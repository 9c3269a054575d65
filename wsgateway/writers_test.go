package wsgateway

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Given a device that reads late, when a message bigger than the socket's
// buffers is sent and more follow, then the write turn writes what the
// socket takes, a writer goroutine waits to write the rest, and the device
// gets every message whole and in order.
func TestAFullSocketHandsTheRestToAWriter(t *testing.T) {
	e := newEnv(t, Options{QueueSize: 64})
	ws := e.dial(t, 1, nil)
	if !rawPath(t, e, 1) {
		t.Fatal("the connection is not written with write(2); the test needs it")
	}
	// Bigger than the socket buffers of both ends (Linux grows a send
	// buffer to 4 MiB by default), and the device reads nothing yet.
	big := `{"text":"` + strings.Repeat("x", 16<<20) + `"}`
	if !e.hub.Send(1, command(t, "big", big)) {
		t.Fatal("send refused")
	}
	c, _ := e.hub.Lookup(1)
	waitFor(t, 5*time.Second, func() bool { return c.writeStarted.Load() != 0 }, "a writer waiting on the full socket")
	for i := range 20 {
		if !e.hub.Send(1, command(t, strconv.Itoa(i), `{}`)) {
			t.Fatalf("send %d refused", i)
		}
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if env := readEnvelope(t, ws); env.ID != "big" || !strings.Contains(string(env.Command), strings.Repeat("x", 16<<20)) {
		t.Fatalf("first message %q of %d bytes", env.ID, len(env.Command))
	}
	for i := range 20 {
		if got := readEnvelope(t, ws).ID; got != strconv.Itoa(i) {
			t.Fatalf("message %d: id %q", i, got)
		}
	}
	// The device may read the last message before the writer counts it.
	waitFor(t, 5*time.Second, func() bool { return e.hub.Stats().MessagesSent >= 21 }, "21 messages counted")
	if s := e.hub.Stats(); s.MessagesSent != 21 {
		t.Fatalf("sent %d, want 21", s.MessagesSent)
	}
}

// Given the connection's write lock taken (a pong or a close frame under
// way), when a message is sent, then its turn does not wait on the lock: a
// writer goroutine does, and writes it once the lock is free.
func TestATakenLockHandsTheTurnToAWriter(t *testing.T) {
	e := newEnv(t, Options{})
	ws := e.dial(t, 2, nil)
	c, _ := e.hub.Lookup(2)
	c.wmu.Lock()
	for i := range 3 {
		if !e.hub.Send(2, command(t, strconv.Itoa(i), `{}`)) {
			t.Fatalf("send %d refused", i)
		}
	}
	// A second device on the same hub is not held up by the first one's lock.
	other := e.dial(t, 3, nil)
	if !e.hub.Send(3, command(t, "other", `{}`)) {
		t.Fatal("send refused")
	}
	if got := readEnvelope(t, other).ID; got != "other" {
		t.Fatalf("other device got %q", got)
	}
	c.wmu.Unlock()
	for i := range 3 {
		if got := readEnvelope(t, ws).ID; got != strconv.Itoa(i) {
			t.Fatalf("message %d: id %q", i, got)
		}
	}
}

// Given more connections with something to write than one drainer gives
// turns to, when one message goes to each at once, then every device gets
// it and the lanes end empty, with no drainer left waiting.
func TestDrainersLeaveNoTurnBehind(t *testing.T) {
	const devices = 5*turnsPerDrainer + 7
	e := newEnv(t, Options{})
	conns := make([]*websocket.Conn, devices)
	for i := range conns {
		conns[i] = e.dial(t, int64(i+1), nil)
	}
	for i := range devices {
		if !e.hub.Send(int64(i+1), command(t, strconv.Itoa(i+1), `{}`)) {
			t.Fatalf("send to %d refused", i+1)
		}
	}
	for i, ws := range conns {
		if got := readEnvelope(t, ws).ID; got != strconv.Itoa(i+1) {
			t.Fatalf("device %d got %q", i+1, got)
		}
	}
	// A device may read its message before its drainer has counted it.
	waitFor(t, 5*time.Second, func() bool {
		if e.hub.Stats().MessagesSent < devices {
			return false
		}
		for i := range e.hub.lanes {
			l := &e.hub.lanes[i]
			l.mu.Lock()
			idle := len(l.queue) == 0 && l.waiting == 0
			l.mu.Unlock()
			if !idle {
				return false
			}
		}
		return true
	}, "every message counted and the lanes empty")
	if s := e.hub.Stats(); s.MessagesSent != devices {
		t.Fatalf("sent %d, want %d", s.MessagesSent, devices)
	}
}

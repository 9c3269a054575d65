package wsgateway

import (
	"net"
	"testing"
	"time"
)

// deadlineCounter is a connection that counts the write deadlines set on
// it.
type deadlineCounter struct {
	net.Conn
	writeDeadlines []time.Time
}

func (c *deadlineCounter) SetWriteDeadline(t time.Time) error {
	c.writeDeadlines = append(c.writeDeadlines, t)
	return nil
}

func (c *deadlineCounter) SetDeadline(t time.Time) error {
	c.writeDeadlines = append(c.writeDeadlines, t)
	return nil
}

func TestWriteDeadlineReachesTheSocketOnlyWhenItChanges(t *testing.T) {
	// Given a socket without a write deadline
	socket := &deadlineCounter{}
	c := &writeDeadlineConn{Conn: socket}
	ping := time.Now().Add(time.Second)

	// When messages are written (gorilla clears the deadline before each),
	// then a ping with a deadline, then messages again
	steps := []time.Time{{}, {}, ping, {}, {}, {}}
	for _, d := range steps {
		if err := c.SetWriteDeadline(d); err != nil {
			t.Fatal(err)
		}
	}

	// Then the socket saw the ping's deadline and the one clearing it, no
	// other
	if got := socket.writeDeadlines; len(got) != 2 || !got[0].Equal(ping) || !got[1].IsZero() {
		t.Fatalf("socket's write deadlines: %v, want [%v, zero]", got, ping)
	}

	// And a deadline set on both directions (the handshake's) is cleared
	// before the next message write too
	socket.writeDeadlines = nil
	_ = c.SetDeadline(ping)
	_ = c.SetDeadline(time.Time{})
	_ = c.SetWriteDeadline(time.Time{})
	_ = c.SetDeadline(ping)
	_ = c.SetWriteDeadline(time.Time{})
	if got := socket.writeDeadlines; len(got) != 4 || !got[1].IsZero() || !got[3].IsZero() {
		t.Fatalf("socket's deadlines: %v, want ping, zero, ping, zero", got)
	}
}

func TestUpgradedConnectionSkipsUnchangedWriteDeadlines(t *testing.T) {
	// Given a device connected to a hub
	e := newEnv(t, Options{})
	ws := e.dial(t, 7, nil)
	defer ws.Close()

	// When a message is sent to it, then it arrives
	if !e.hub.Send(7, []byte(`{"command":"reboot"}`)) {
		t.Fatal("send refused")
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, msg, err := ws.ReadMessage(); err != nil || string(msg) != `{"command":"reboot"}` {
		t.Fatalf("read %q, %v", msg, err)
	}

	// And the hub's side of it writes through writeDeadlineConn
	c, ok := e.hub.Lookup(7)
	if !ok {
		t.Fatal("device not registered")
	}
	if _, wrapped := c.ws.NetConn().(*writeDeadlineConn); !wrapped {
		t.Fatalf("the hub writes to a %T", c.ws.NetConn())
	}
}

package wsgateway

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// writeDeadlineConn passes a write deadline to the socket only when it
// changes. gorilla's Conn sets one before every write, the zero time for a
// message (we bound message writes with the hub's sweep instead): each call
// takes the runtime poller's lock on the socket and looks at its timers,
// about 3% of a broadcast's CPU for nothing. gorilla makes every write, and
// so every SetWriteDeadline, under its write lock; the handshake's
// SetDeadline calls come before any write. So set needs no lock of its own.
type writeDeadlineConn struct {
	net.Conn
	set bool // a non-zero write deadline is in force
}

// SetWriteDeadline sets t unless t is zero and no deadline is in force.
func (c *writeDeadlineConn) SetWriteDeadline(t time.Time) error {
	if t.IsZero() && !c.set {
		return nil
	}
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	c.set = !t.IsZero()
	return nil
}

// SetDeadline sets both deadlines, noting the write deadline's.
func (c *writeDeadlineConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetDeadline(t); err != nil {
		return err
	}
	c.set = !t.IsZero()
	return nil
}

// deadlineHijacker hands the connection it hijacks to gorilla's Upgrader
// as a writeDeadlineConn.
type deadlineHijacker struct{ http.ResponseWriter }

// Hijack implements http.Hijacker.
func (w deadlineHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &writeDeadlineConn{Conn: conn}, brw, nil
}

package wsgateway

import (
	"errors"
	"net"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/supervise"
	"tvsm/internal/platform/wsframe"
)

// A connection's reader decodes the device's frames itself (wsframe).
// gorilla's reader cost each acknowledgement of a broadcast two read
// system calls: the one that brings it and one that finds the socket empty
// before the goroutine parks. A polled socket (poller_linux.go) is read
// with one read(2) a wakeup, into the poller's buffer; any other
// connection by a reader goroutine through net.Conn's Read.

// errPeerClosed ends reading once the device's close frame is answered.
var errPeerClosed = errors.New("wsgateway: the device closed the connection")

// errClosed ends reading once the connection is closed for a reason of
// its own: a hook panicked, or too many invalid messages came.
var errClosed = errors.New("wsgateway: connection closed")

// frameReader reads one connection's device frames.
type frameReader struct {
	c        *Conn
	dec      wsframe.Decoder
	bad      int       // invalid device messages so far
	extended time.Time // when the read deadline was last moved
}

// readPump reads device messages from a connection the hub does not poll
// until the socket fails or the device closes, and closes the connection
// with the reason.
func (c *Conn) readPump() {
	defer close(c.readerDone)
	defer supervise.Recover(c.hub.opts.Logger, panicComponent, func(*supervise.Panic) { c.close(ReasonInternalError) })
	r := &c.rd
	if err := r.readConn(c.nc); err != errClosed {
		c.close(r.endReason(err))
	}
}

// extend moves the read deadline PongWait ahead of now: for a polled
// socket, the time the hub's sweep reads (Hub.sweepConns).
func (r *frameReader) extend(now time.Time) {
	r.extended = now
	if r.c.polled {
		r.c.readAt.Store(now.UnixNano())
		return
	}
	_ = r.c.nc.SetReadDeadline(now.Add(r.c.hub.opts.PongWait))
}

// readConn reads a connection through its Read.
func (r *frameReader) readConn(nc net.Conn) error {
	for {
		room := r.dec.Space(nil)
		n, err := nc.Read(room)
		r.dec.Filled(n)
		if err != nil {
			return err
		}
		if err := r.decode(); err != nil {
			return err
		}
	}
}

// decode handles the frames read so far.
func (r *frameReader) decode() error {
	for {
		op, payload, ok, err := r.dec.Next()
		if err != nil || !ok {
			return err
		}
		if err := r.frame(op, payload); err != nil {
			return err
		}
	}
}

// frame handles one device message or control frame.
func (r *frameReader) frame(op byte, payload []byte) error {
	c := r.c
	o := &c.hub.opts
	switch op {
	case wsframe.OpPing:
		c.replyControl(wsframe.OpPong, payload)
		return nil
	case wsframe.OpPong:
		r.extend(time.Now())
		return nil
	case wsframe.OpClose:
		code, _ := wsframe.CloseFrame(payload)
		c.peerCode.Store(int32(code))
		c.replyControl(wsframe.OpClose, websocket.FormatCloseMessage(code, ""))
		return errPeerClosed
	}
	// A message moves the read deadline only once a tenth of PongWait has
	// passed since it last moved: moving a socket's deadline takes the
	// runtime's timer locks, which on every acknowledgement of a broadcast
	// cost about as much as reading it. So a device that sends messages but
	// answers no ping may be dropped after 9/10 of PongWait of silence; one
	// that answers pings, never early.
	if now := time.Now(); now.Sub(r.extended) >= o.PongWait/10 {
		r.extend(now)
	}
	m, err := ParseDeviceMessage(payload)
	if op != wsframe.OpText || err != nil {
		c.hub.stats.bad.Add(1)
		r.bad++
		if o.MaxBadMessages > 0 && r.bad >= o.MaxBadMessages {
			c.close(ReasonBadMessages)
			return errClosed
		}
		return nil
	}
	if o.OnMessage != nil && !c.hook(func() { o.OnMessage(c, m) }) {
		return errClosed
	}
	return nil
}

// endReason answers a frame the device must not send with a close frame
// (1002, or 1009 for a message over ReadLimit), as RFC 6455 asks, and
// classifies why reading ended: an end of stream without a close frame is
// a read error (code 1006).
func (r *frameReader) endReason(err error) CloseReason {
	var fe *wsframe.Error
	var ne net.Error
	switch {
	case err == errPeerClosed:
		return ReasonClientClosed
	case errors.As(err, &fe):
		text := ""
		if fe.Code == wsframe.CloseProtocolError {
			text = fe.Reason
		}
		msg := websocket.FormatCloseMessage(fe.Code, text)
		if len(msg) > 125 {
			msg = msg[:125]
		}
		r.c.replyControl(wsframe.OpClose, msg)
		if fe.Code == wsframe.CloseMessageTooBig {
			return ReasonMessageTooBig
		}
		return ReasonReadError
	case errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	}
	return ReasonReadError
}

package wsgateway

import (
	"errors"
	"io"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/supervise"
	"tvsm/internal/platform/wsframe"
)

// What a connection does with the bytes its hub's poller reads for it
// (poller_linux.go says why pollers read): it decodes the frames, hands
// device messages to OnMessage, answers pings, and ends reading on a close
// frame, a bad frame or a failed socket. Silence is found by the hub's
// sweep, from lastHeard, rather than by a read deadline.

// pollRead is a connection's reading by a poller. Its lock is held by the
// poller while it reads and by whoever ends the reading.
type pollRead struct {
	p      *poller // nil: a reader goroutine reads instead
	fd     int
	frames wsframe.Decoder
	bad    int  // invalid device messages so far
	ended  bool // readerDone is closed
}

// startPolled has a poller of the hub read c; false when none can, and
// the caller starts a reader goroutine.
func (c *Conn) startPolled() bool {
	if c.hub.goroutineReaders {
		return false
	}
	p := c.hub.readers.pick(c.hub)
	if p == nil {
		return false
	}
	c.lastHeard.Store(time.Now().UnixNano())
	c.rdMu.Lock()
	c.rd.frames = wsframe.Decoder{Masked: true, Limit: int(c.hub.opts.ReadLimit)}
	ok := p.add(c)
	c.rdMu.Unlock()
	if !ok {
		c.lastHeard.Store(0)
	}
	return ok
}

// readable reads what arrived on the socket into scratch, the poller's
// buffer, and handles the whole frames in it. full says the read filled
// the room it had: more may be waiting.
func (c *Conn) readable(scratch []byte) (full bool) {
	defer supervise.Recover(c.hub.opts.Logger, panicComponent, func(*supervise.Panic) {
		c.close(ReasonInternalError)
		c.stopReading()
	})
	c.rdMu.Lock()
	defer c.rdMu.Unlock()
	if c.rd.ended {
		return false
	}
	room := c.rd.frames.Space(scratch)
	n, again, err := readSocket(c.rd.fd, room)
	if again {
		c.rd.frames.Keep()
		return false
	}
	if err == nil && n == 0 {
		err = io.EOF
	}
	if err != nil {
		c.endReadLocked()
		c.close(ReasonReadError)
		return false
	}
	c.lastHeard.Store(time.Now().UnixNano())
	c.rd.frames.Filled(n)
	c.decodeFrames()
	if !c.rd.ended {
		c.rd.frames.Keep()
	}
	return n == len(room)
}

// decodeFrames handles the whole frames buffered, until reading ends.
func (c *Conn) decodeFrames() {
	for {
		op, payload, ok, err := c.rd.frames.Next()
		if err != nil {
			var fe *wsframe.Error
			if !errors.As(err, &fe) {
				fe = &wsframe.Error{Code: wsframe.CloseProtocolError, Reason: err.Error()}
			}
			reason, text := ReasonReadError, fe.Reason
			if fe.Code == wsframe.CloseMessageTooBig {
				reason, text = ReasonMessageTooBig, ""
			}
			c.endReadLocked()
			c.replyAndClose(closeMessage(fe.Code, text), reason)
			return
		}
		if !ok {
			return
		}
		switch op {
		case wsframe.OpText, wsframe.OpBinary:
			if !c.polledMessage(op == wsframe.OpText, payload) {
				return
			}
		case wsframe.OpPing:
			c.pong(payload)
		case wsframe.OpClose:
			code, _ := wsframe.CloseFrame(payload)
			c.peerCode.Store(int32(code))
			c.endReadLocked()
			// Echo the device's code, as gorilla's default close handler does.
			c.replyAndClose(websocket.FormatCloseMessage(code, ""), ReasonClientClosed)
			return
		}
	}
}

// polledMessage handles a device message as the reader goroutine does
// (readPump) and reports whether reading goes on.
func (c *Conn) polledMessage(text bool, data []byte) bool {
	o := &c.hub.opts
	m, err := ParseDeviceMessage(data)
	if !text || err != nil {
		c.hub.stats.bad.Add(1)
		c.rd.bad++
		if o.MaxBadMessages > 0 && c.rd.bad >= o.MaxBadMessages {
			c.endReadLocked()
			c.close(ReasonBadMessages)
			return false
		}
		return true
	}
	if o.OnMessage != nil && !c.hook(func() { o.OnMessage(c, m) }) {
		c.endReadLocked()
		return false
	}
	return true
}

// pong answers a device's ping off the poller, which must not wait for
// room in one device's socket: one answer at a time per connection, so a
// device that floods pings gets some answered (RFC 6455 section 5.5.3
// allows answering only the latest).
func (c *Conn) pong(payload []byte) {
	if !c.ponging.CompareAndSwap(false, true) {
		return
	}
	data := append([]byte(nil), payload...)
	go func() {
		defer c.ponging.Store(false)
		_ = c.ws.WriteControl(websocket.PongMessage, data, c.deadline())
	}()
}

// replyAndClose sends the close frame msg, off the poller, then closes
// the connection for r (the socket is closed after the frame).
func (c *Conn) replyAndClose(msg []byte, r CloseReason) {
	go func() {
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, c.deadline())
		c.close(r)
	}()
}

// closeMessage is a close frame's body of code and text, the text cut to
// what a control frame holds.
func closeMessage(code int, text string) []byte {
	msg := websocket.FormatCloseMessage(code, text)
	return msg[:min(len(msg), 125)]
}

// endReadLocked ends the poller's reading (the lock held): the socket is
// left out of its epoll set, the decoder's memory let go, and readerDone
// closed.
func (c *Conn) endReadLocked() {
	if c.rd.ended {
		return
	}
	c.rd.ended = true
	c.rd.p.remove(c)
	c.rd.frames = wsframe.Decoder{}
	close(c.readerDone)
}

// stopReading ends a poller's reading of c before its socket is closed,
// waiting for a read under way; a reader goroutine ends by the socket's
// close instead.
func (c *Conn) stopReading() {
	c.rdMu.Lock()
	defer c.rdMu.Unlock()
	if c.rd.p != nil {
		c.endReadLocked()
	}
}

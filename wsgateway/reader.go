package wsgateway

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/supervise"
	"tvsm/internal/platform/wsframe"
)

// A connection's reader decodes the device's frames itself (wsframe).
// gorilla's reader cost each acknowledgement of a broadcast two read
// system calls: the one that brings it and one that finds the socket empty
// before the goroutine parks. On a TCP socket the reader stays inside one
// wait of the runtime's poller for the connection's whole life
// (syscall.RawConn.Read): a read that returns less than the room it was
// given has emptied the socket, and a byte arriving later is an edge the
// poller keeps for the next wait (the runtime's epoll is edge-triggered,
// and nothing resets the readiness inside one wait), so the reader parks
// at once.

// readScratch holds the bytes of one wake's reads: a connection keeps no
// read buffer of its own between messages, only a partial frame's bytes.
var readScratch = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

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

// readPump reads device messages until the socket fails or the device
// closes, and closes the connection with the reason.
func (c *Conn) readPump() {
	defer close(c.readerDone)
	defer supervise.Recover(c.hub.opts.Logger, panicComponent, func(*supervise.Panic) { c.close(ReasonInternalError) })
	o := &c.hub.opts
	r := &frameReader{c: c, dec: wsframe.Decoder{Masked: true, Limit: int(o.ReadLimit)}}
	r.extend(time.Now())
	var err error
	if c.raw != nil {
		err = r.readRaw(c.raw)
	} else {
		err = r.readConn(c.nc)
	}
	if err != errClosed {
		c.close(r.endReason(err))
	}
}

// extend moves the read deadline PongWait ahead of now.
func (r *frameReader) extend(now time.Time) {
	r.extended = now
	_ = r.c.nc.SetReadDeadline(now.Add(r.c.hub.opts.PongWait))
}

// readRaw reads a TCP socket with one read(2) a wake.
func (r *frameReader) readRaw(raw syscall.RawConn) error {
	var end error
	read := func(fd uintptr) bool {
		scratch := readScratch.Get().(*[]byte)
		defer readScratch.Put(scratch)
		defer r.dec.Keep()
		for {
			room := r.dec.Space(*scratch)
			n, err := sysRead(fd, room)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false
			case err != nil:
				end = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", err)}
				return true
			case n == 0:
				end = io.EOF
				return true
			}
			r.dec.Filled(n)
			if end = r.decode(); end != nil {
				return true
			}
			if n < len(room) {
				return false // emptied: the next byte is an edge the poller keeps
			}
		}
	}
	if err := raw.Read(read); err != nil {
		return err // the deadline passed, or the socket was closed
	}
	return end
}

// readConn reads any other connection (TLS, in tests) through its Read.
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
		// A failed pong is the writer's to find.
		_ = c.writeControl(wsframe.OpPong, payload)
		return nil
	case wsframe.OpPong:
		r.extend(time.Now())
		return nil
	case wsframe.OpClose:
		code, _ := wsframe.CloseFrame(payload)
		c.peerCode.Store(int32(code))
		_ = c.writeControl(wsframe.OpClose, websocket.FormatCloseMessage(code, ""))
		return errPeerClosed
	}
	// A message moves the read deadline only once a tenth of PongWait has
	// passed since it last moved: moving it takes the runtime's timer
	// locks, which on every acknowledgement of a broadcast cost about as
	// much as reading it. So a device that sends messages but answers no
	// ping may be dropped after 9/10 of PongWait of silence; one that
	// answers pings, never early.
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
		_ = r.c.writeControl(wsframe.OpClose, msg)
		if fe.Code == wsframe.CloseMessageTooBig {
			return ReasonMessageTooBig
		}
		return ReasonReadError
	case errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	}
	return ReasonReadError
}

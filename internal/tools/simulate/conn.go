package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/wsframe"
)

// How a device reads its websocket (Options.Reader).
const (
	// ReaderEpoll: one goroutine of the process waits on every socket
	// with epoll and decodes the frames itself (Linux only).
	ReaderEpoll = "epoll"
	// ReaderGoroutine: a goroutine per connection blocked in gorilla's
	// reader.
	ReaderGoroutine = "goroutine"
)

// maxMessage bounds a message the epoll reader takes (all its fragments):
// a server's commands are a few hundred bytes.
const maxMessage = 1 << 20

// A handler takes a session's messages in turn, replying through out; an
// error ends the session.
type handler interface {
	message(data []byte, out replies) error
}

// replies is how a handler answers on its connection.
type replies interface {
	// send writes one text message.
	send(msg []byte) error
	// settled ends the bound on the session's opening (handshakeTimeout).
	settled()
}

// session is one websocket of a device: dialled, then read by the
// process's poller or by a goroutine of its own until it ends. hello is
// written first, when not nil; with handshakeTimeout, the handler must
// call settled within that time. relogin reports an HTTP 401 answer to
// the handshake. The error ending a session after the handshake may be a
// *websocket.CloseError (goroutine reader) or a *closeError (poller):
// closeCode reads either.
type session struct {
	url              string
	header           http.Header
	hello            []byte
	handshakeTimeout time.Duration
	h                handler
	// connected is called once the websocket is open.
	connected func()
}

// run dials and serves s until it ends or ctx is done.
func (sim *Sim) run(ctx context.Context, s session) (unauthorized bool, err error) {
	var hs *handshakeConn
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 512, WriteBufferSize: 512,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := sim.dialer.DialContext(ctx, network, addr)
			if err != nil || sim.poller == nil {
				return c, err
			}
			hs = &handshakeConn{Conn: c}
			return hs, nil
		}}
	ws, resp, err := d.DialContext(ctx, s.url, s.header)
	if err != nil {
		return resp != nil && resp.StatusCode == http.StatusUnauthorized, err
	}
	if s.connected != nil {
		s.connected()
	}
	if tc, ok := ws.NetConn().(*handshakeConn); ok && hs == tc && hs.done {
		if fd, err := takeFD(hs.Conn); err == nil {
			return false, sim.poller.serve(ctx, fd, hs.rest, s)
		}
	}
	return false, serveGoroutine(ctx, ws, s)
}

// serveGoroutine reads ws in this goroutine until the session ends.
func serveGoroutine(ctx context.Context, ws *websocket.Conn, s session) error {
	stop := context.AfterFunc(ctx, func() { _ = ws.Close() })
	defer stop()
	defer ws.Close()
	out := &gorillaReplies{ws: ws}
	if s.handshakeTimeout > 0 {
		_ = ws.SetReadDeadline(time.Now().Add(s.handshakeTimeout))
	}
	if s.hello != nil {
		if err := out.send(s.hello); err != nil {
			return err
		}
	}
	var r reader
	for {
		data, err := r.next(ws)
		if err != nil {
			return err
		}
		if err := s.h.message(data, out); err != nil {
			return err
		}
	}
}

// closeError is a close frame from the server, read by the poller.
type closeError struct {
	code   int // 1005 (none given) when the frame has no body
	reason string
}

func (e *closeError) Error() string {
	return fmt.Sprintf("websocket: close %d %s", e.code, e.reason)
}

// closeFrameError is the error ending a session at the server's close
// frame, its payload as wsframe.Decoder returned it.
func closeFrameError(payload []byte) error {
	code, reason := wsframe.CloseFrame(payload)
	return &closeError{code: code, reason: reason}
}

// closeCode is the code of the server's close frame that ended a session,
// or 0.
func closeCode(err error) int {
	var ce *websocket.CloseError
	var own *closeError
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.As(err, &own):
		return own.code
	}
	return 0
}

// gorillaReplies writes through gorilla's connection. The write deadline
// moves once a second rather than before every write.
type gorillaReplies struct {
	ws      *websocket.Conn
	movedAt time.Time
}

func (g *gorillaReplies) send(msg []byte) error {
	if now := time.Now(); now.Sub(g.movedAt) >= time.Second {
		g.movedAt = now
		_ = g.ws.SetWriteDeadline(now.Add(10 * time.Second))
	}
	return g.ws.WriteMessage(websocket.TextMessage, msg)
}

func (g *gorillaReplies) settled() { _ = g.ws.SetReadDeadline(time.Time{}) }

// reader reads whole messages into one buffer, reused.
type reader struct{ buf []byte }

// next returns the next message; it is valid until the next call.
func (r *reader) next(ws *websocket.Conn) ([]byte, error) {
	_, rd, err := ws.NextReader()
	if err != nil {
		return nil, err
	}
	r.buf = r.buf[:0]
	for {
		if len(r.buf) == cap(r.buf) {
			r.buf = append(r.buf, 0)[:len(r.buf)]
		}
		n, err := rd.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if err == io.EOF {
			return r.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// handshakeConn hands gorilla's handshake the bytes up to the end of the
// server's HTTP response only, and keeps what follows (the first frames,
// when the server wrote them at once) in rest: gorilla's buffered reader
// would otherwise hold them when the poller takes the socket.
type handshakeConn struct {
	net.Conn
	matched int  // bytes of "\r\n\r\n" seen in a row
	done    bool // the response's head is read
	rest    []byte
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	if c.done {
		if len(c.rest) > 0 {
			n := copy(p, c.rest)
			c.rest = c.rest[n:]
			return n, nil
		}
		return c.Conn.Read(p)
	}
	n, err := c.Conn.Read(p)
	for i := range n {
		switch {
		case p[i] == "\r\n\r\n"[c.matched]:
			c.matched++
		case p[i] == '\r':
			c.matched = 1
		default:
			c.matched = 0
		}
		if c.matched == 4 {
			c.done = true
			c.rest = append([]byte(nil), p[i+1:n]...)
			return i + 1, nil
		}
	}
	return n, err
}

// readerError names a reader that does not exist or does not run here.
func readerError(name string) error {
	return fmt.Errorf("simulate: reader %q: want %q (Linux) or %q", name, ReaderEpoll, ReaderGoroutine)
}

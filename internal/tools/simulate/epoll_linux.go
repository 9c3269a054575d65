package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"tvsm/internal/platform/epoll"
	"tvsm/internal/platform/wsframe"
)

// A device's goroutine blocked in a read is woken through the Go runtime's
// netpoller for each message, and the wakeups, not the reading, were most
// of the simulator's CPU per message. The poller instead takes the
// sockets from the runtime and one goroutine waits on all of them (package
// epoll): a wakeup brings every socket ready by then, read with one
// read(2) each and decoded by a wsframe.Decoder (the server's frames
// arrive unmasked); the replies are written at once with write(2). The
// device's goroutine waits, parked, until its session ends.

// epollSupported tells that ReaderEpoll runs here.
const epollSupported = epoll.Supported

// maxClientHead is the longest head of a client's frame: two bytes, a
// length of eight and a mask of four.
const maxClientHead = 14

// writeTimeout bounds a reply's wait for room in the socket's buffer.
const writeTimeout = 10 * time.Second

// poller reads the sockets it was given until stopped.
type poller struct {
	ep    *epoll.Poller
	mu    sync.Mutex
	conns map[int32]*pollConn
}

// newPoller starts a poller.
func newPoller() (*poller, error) {
	p := &poller{conns: map[int32]*pollConn{}}
	ep, err := epoll.New(p.ready)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	p.ep = ep
	return p, nil
}

// stop ends the poller; the sessions must have ended.
func (p *poller) stop() { p.ep.Stop() }

// ready reads socket fd, on the poller's goroutine.
func (p *poller) ready(fd int32, events uint32) {
	p.mu.Lock()
	c := p.conns[fd]
	p.mu.Unlock()
	if c == nil {
		return
	}
	if err := c.readable(events&(epoll.RDHup|epoll.Hup) != 0); err != nil {
		p.end(c, err)
	}
}

// serve reads the socket fd (its own descriptor: the session closes it)
// for session s until the session ends or ctx is done. rest are the bytes
// read past the handshake.
func (p *poller) serve(ctx context.Context, fd int, rest []byte, s session) error {
	// Its buffers are made now, while it connects: a broadcast reaches every
	// connection once, so an allocation at a first message is one a message.
	c := &pollConn{fd: fd, h: s.h, done: make(chan error, 1), wbuf: make([]byte, 0, replyRoom),
		frames: wsframe.Decoder{Masked: false, Limit: maxMessage}}
	c.frames.Space(nil) // the room of a read, made now
	if s.handshakeTimeout > 0 {
		c.deadline = time.AfterFunc(s.handshakeTimeout, c.shutdown)
		defer c.deadline.Stop()
	}
	stop := context.AfterFunc(ctx, c.shutdown)
	defer stop()
	err := func() error {
		if s.hello != nil {
			if err := c.send(s.hello); err != nil {
				return err
			}
		}
		c.frames.Feed(rest)
		if err := c.decode(); err != nil {
			return err
		}
		p.mu.Lock()
		p.conns[int32(fd)] = c
		p.mu.Unlock()
		return p.ep.Add(fd, epoll.In|epoll.RDHup|epoll.ET)
	}()
	if err != nil {
		p.end(c, err)
	}
	return <-c.done
}

// end forgets c, closes its socket and ends its session with err.
func (p *poller) end(c *pollConn, err error) {
	p.mu.Lock()
	delete(p.conns, int32(c.fd))
	p.mu.Unlock()
	p.ep.Del(c.fd)
	c.mu.Lock()
	c.closed = true
	_ = syscall.Close(c.fd)
	c.mu.Unlock()
	c.done <- err
}

// pollConn is a socket of the poller. Only the poller's goroutine reads
// and writes it once it is registered; shutdown may come from anywhere.
type pollConn struct {
	fd       int
	h        handler
	frames   wsframe.Decoder
	wbuf     []byte
	deadline *time.Timer
	done     chan error

	mu     sync.Mutex // closed, against shutting down a descriptor reused
	closed bool
}

// readable reads what arrived and handles the whole messages in it.
//
// The sockets are edge-triggered: a level-triggered socket is polled again
// at the next epoll_wait after every read, to see that it is drained. So
// each wakeup must read what is there: a read that does not fill its room
// took it all (what arrives later is a new edge), unless the peer hung up
// (hangup), when the reads go on to the end of the stream.
func (c *pollConn) readable(hangup bool) error {
	for {
		room := c.frames.Space(nil)
		n, err := epoll.Read(c.fd, room)
		switch {
		case err == syscall.EAGAIN:
			return nil
		case err == syscall.EINTR:
			continue
		case err != nil:
			return err
		case n == 0:
			return io.EOF
		}
		c.frames.Filled(n)
		if err := c.decode(); err != nil {
			return err
		}
		if n < len(room) && !hangup {
			return nil
		}
	}
}

// decode handles the whole messages and control frames buffered.
func (c *pollConn) decode() error {
	for {
		op, payload, ok, err := c.frames.Next()
		if err != nil || !ok {
			return err
		}
		switch op {
		case wsframe.OpText, wsframe.OpBinary:
			err = c.h.message(payload, c)
		case wsframe.OpPing:
			err = c.write(wsframe.OpPong, payload)
		case wsframe.OpClose:
			// Echo its code, as the protocol asks, then hang up.
			_ = c.write(wsframe.OpClose, payload[:min(len(payload), 2)])
			return closeFrameError(payload)
		}
		if err != nil {
			return err
		}
	}
}

func (c *pollConn) send(msg []byte) error { return c.write(wsframe.OpText, msg) }

func (c *pollConn) settled() {
	if c.deadline != nil {
		c.deadline.Stop()
	}
}

// write writes one frame, masked as a client's must be, waiting for room in
// the socket's buffer when there is none.
func (c *pollConn) write(op byte, payload []byte) error {
	c.wbuf = wsframe.AppendFrame(slices.Grow(c.wbuf[:0], maxClientHead+len(payload)), op, payload, true)
	b := c.wbuf
	var until time.Time
	for len(b) > 0 {
		n, err := epoll.Write(c.fd, b)
		switch {
		case n > 0:
			b = b[n:]
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			if until.IsZero() {
				until = time.Now().Add(writeTimeout)
			}
			if err := waitWritable(c.fd, until); err != nil {
				return err
			}
		case err != nil:
			return err
		}
	}
	return nil
}

// shutdown ends the connection from outside the poller: the poller then
// reads its end and ends the session.
func (c *pollConn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		_ = syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	}
}

// waitWritable waits until fd may be written or until passes.
func waitWritable(fd int, until time.Time) error {
	type pollFd struct {
		fd             int32
		events, revent int16
	}
	const pollOut = 0x4
	for {
		left := time.Until(until)
		if left <= 0 {
			return fmt.Errorf("simulate: write: %w", errWriteTimeout)
		}
		pfd := pollFd{fd: int32(fd), events: pollOut}
		ts := syscall.NsecToTimespec(left.Nanoseconds())
		_, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno != 0 && errno != syscall.EINTR {
			return errno
		}
		if pfd.revent != 0 {
			return nil
		}
	}
}

var errWriteTimeout = errors.New("no room in the socket's buffer for 10 s")

// takeFD takes conn's socket from the Go runtime (epoll.TakeFD).
func takeFD(conn net.Conn) (int, error) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return -1, fmt.Errorf("simulate: %T is no TCP connection", conn)
	}
	return epoll.TakeFD(tc)
}

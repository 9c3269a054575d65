//go:build linux

package wsgateway

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"tvsm/internal/platform/epoll"
	"tvsm/internal/platform/supervise"
)

// On Linux a connection's TCP socket leaves the runtime's poller: the
// connection keeps a duplicate of its descriptor and closes the one the
// runtime watched, and one of the hub's pollers (one per core, package
// epoll) waits on its sockets. A poller's goroutine reads every socket
// ready at a wakeup with one read(2) into a buffer of its own and hands
// the device's frames to the connection; an edge of room in a full socket
// wakes the connection's writer. Through the runtime's poller every
// acknowledgement of a broadcast woke its connection's reader goroutine;
// now one wakeup brings every acknowledgement arrived meanwhile, and an
// idle connection holds no goroutine at all.

// socket is a connection's own descriptor of its TCP socket.
type socket struct {
	fd int
	p  *poller
	// mu guards reading and closed. The poller holds it while it reads the
	// socket, and the descriptor is shut down and closed under it: neither
	// may meet the number once another connection has it.
	mu      sync.Mutex
	reading bool // the poller reads the socket for the connection
	closed  bool // fd is closed (set with the connection's wmu held too)
	// writable holds a token once the socket may have room again or was
	// shut down: a writer that found it full waits for one. waiting says a
	// writer may wait, so that the poller passes the edges of room on: the
	// event comes with every acknowledgement, and a channel send on each
	// cost a broadcast 4% of its CPU.
	writable chan struct{}
	waiting  atomic.Bool
}

// pollSet is the hub's pollers, started with its first TCP connection and
// stopped once the hub has shut down and its connections have finished.
type pollSet struct {
	mu      sync.Mutex
	ps      []*poller
	stopped bool
	failed  error // the pollers could not start: sockets stay with the runtime
}

// pollEvents are the events a socket is watched for, edge-triggered.
const pollEvents = epoll.In | epoll.Out | epoll.RDHup | epoll.ET

// readRoom is a poller's read buffer: what one read(2) of a socket takes.
const readRoom = 16 << 10

// takeSocket takes nc's TCP socket from the runtime into s, for one of the
// hub's pollers; false when nc is no TCP connection or the pollers cannot
// run, and nc is then read and written through its own methods.
func (h *Hub) takeSocket(s *socket, nc net.Conn, seq uint64) bool {
	tc := tcpConn(nc)
	if tc == nil {
		return false
	}
	p := h.polls.pick(seq, h.opts.Logger)
	if p == nil {
		return false
	}
	fd, err := epoll.TakeFD(tc)
	if err != nil {
		h.opts.Logger.Warn("wsgateway: socket stays with the runtime's poller", "err", err)
		return false
	}
	s.fd, s.p, s.writable = fd, p, make(chan struct{}, 1)
	return true
}

// tcpConn finds the *net.TCPConn under nc's wrappers (connlimit's, for
// one), nil if there is none.
func tcpConn(nc net.Conn) *net.TCPConn {
	for {
		switch c := nc.(type) {
		case *net.TCPConn:
			return c
		case interface{ Unwrap() net.Conn }:
			nc = c.Unwrap()
		default:
			return nil
		}
	}
}

// pick returns the poller of connection seq, starting the pollers first;
// nil once they have stopped or when they could not start.
func (s *pollSet) pick(seq uint64, log *slog.Logger) *poller {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.failed != nil {
		return nil
	}
	if s.ps == nil {
		n := runtime.GOMAXPROCS(0)
		for range n {
			p, err := newPoller()
			if err != nil {
				s.failed = err
				log.Warn("wsgateway: sockets stay with the runtime's poller", "err", err)
				break
			}
			s.ps = append(s.ps, p)
		}
		if s.failed != nil {
			for _, p := range s.ps {
				p.stop()
			}
			s.ps = nil
			return nil
		}
	}
	return s.ps[seq%uint64(len(s.ps))]
}

// stop ends the pollers: the hub's connections have all finished.
func (s *pollSet) stop() {
	s.mu.Lock()
	ps := s.ps
	s.ps, s.stopped = nil, true
	s.mu.Unlock()
	for _, p := range ps {
		p.stop()
	}
}

// poller reads the sockets of its connections.
type poller struct {
	ep    *epoll.Poller
	mu    sync.Mutex
	conns []*Conn // by descriptor
}

// newPoller starts a poller.
func newPoller() (*poller, error) {
	p := &poller{}
	scratch := make([]byte, readRoom)
	ep, err := epoll.New(func(fd int32, events uint32) { p.serve(fd, events, scratch) })
	if err != nil {
		return nil, fmt.Errorf("wsgateway: %w", err)
	}
	p.ep = ep
	return p, nil
}

// stop ends the poller.
func (p *poller) stop() { p.ep.Stop() }

// conn returns the connection of descriptor fd, nil if none.
func (p *poller) conn(fd int32) *Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if int(fd) < len(p.conns) {
		return p.conns[fd]
	}
	return nil
}

// register has the poller read c's socket from now on.
func (s *socket) register(c *Conn) error { return s.p.register(c) }

func (p *poller) register(c *Conn) error {
	s := &c.sock
	p.mu.Lock()
	if s.fd >= len(p.conns) {
		p.conns = append(p.conns, make([]*Conn, s.fd+1-len(p.conns))...)
	}
	p.conns[s.fd] = c
	p.mu.Unlock()
	s.mu.Lock()
	s.reading = true
	s.mu.Unlock()
	if err := p.ep.Add(s.fd, pollEvents); err != nil {
		s.mu.Lock()
		s.reading = false
		s.mu.Unlock()
		p.forget(c)
		return fmt.Errorf("wsgateway: %w", err)
	}
	return nil
}

// forget removes c from the poller's descriptors.
func (p *poller) forget(c *Conn) {
	p.mu.Lock()
	if fd := c.sock.fd; fd < len(p.conns) && p.conns[fd] == c {
		p.conns[fd] = nil
	}
	p.mu.Unlock()
}

// serve handles the events of socket fd, on the poller's goroutine, with
// scratch as the room of its reads.
func (p *poller) serve(fd int32, events uint32, scratch []byte) {
	c := p.conn(fd)
	if c == nil {
		return // closed since the event
	}
	if events&(epoll.Out|epoll.Err|epoll.Hup) != 0 && c.sock.waiting.Load() {
		c.sock.wake()
	}
	if events&(epoll.In|epoll.RDHup|epoll.Err|epoll.Hup) != 0 {
		c.readPolled(scratch, events&(epoll.RDHup|epoll.Hup|epoll.Err) != 0)
	}
}

// wake gives a writer waiting for room its token.
func (s *socket) wake() {
	select {
	case s.writable <- struct{}{}:
	default:
	}
}

// readPolled reads what arrived on c's socket and handles its frames, on
// the poller's goroutine; hangup says the device hung up or the socket
// failed, when the reads go on to the end of the stream. It must not
// block: a control frame in reply is written only if the socket takes it
// at once, else by a goroutine (replyControl).
func (c *Conn) readPolled(scratch []byte, hangup bool) {
	s := &c.sock
	var end error
	func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.reading || s.closed {
			return
		}
		defer func() {
			if end != nil {
				s.endReading(c)
			}
		}()
		defer supervise.Recover(c.hub.opts.Logger, panicComponent, func(*supervise.Panic) {
			end = errClosed
			c.close(ReasonInternalError)
		})
		end = c.rd.readSocket(s.fd, scratch, hangup)
	}()
	if end != nil && end != errClosed {
		c.close(c.rd.endReason(end))
	}
}

// endReading marks the reader of c ended, with s.mu held: the poller
// reads the socket no more (its writes may still wait for room).
func (s *socket) endReading(c *Conn) {
	if s.reading {
		s.reading = false
		close(c.readerDone)
	}
}

// readSocket reads fd until it is empty (edge-triggered: what arrives later
// is a new event), decoding as it goes; with hangup, until its end.
func (r *frameReader) readSocket(fd int, scratch []byte, hangup bool) error {
	defer r.dec.Keep()
	for {
		room := r.dec.Space(scratch)
		n, err := epoll.Read(fd, room)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return nil
		case err != nil:
			return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", err)}
		case n == 0:
			return io.EOF
		}
		r.dec.Filled(n)
		if err := r.decode(); err != nil {
			return err
		}
		if n < len(room) && !hangup {
			return nil // emptied: the next byte is a new edge
		}
	}
}

// write writes b to the socket, with the connection's wmu held, and
// returns how much it took. With wait it waits for room until all is
// written or the socket is shut down; without, it returns at a full
// socket.
func (s *socket) write(b []byte, wait bool) (int, error) {
	if s.closed {
		return 0, net.ErrClosed
	}
	if wait {
		// Set before the write that may find the socket full: the edge of
		// room that follows it finds the flag.
		s.waiting.Store(true)
		defer s.waiting.Store(false)
	}
	done := 0
	for done < len(b) {
		n, err := epoll.Write(s.fd, b[done:])
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			if !wait {
				return done, nil
			}
			<-s.writable
		case err != nil:
			return done, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", err)}
		case n == 0:
			return done, io.ErrShortWrite
		default:
			done += n
		}
	}
	return done, nil
}

// abort shuts the socket down: a write waiting for room ends, as does the
// reading. The descriptor stays open until close.
func (s *socket) abort() {
	s.mu.Lock()
	if !s.closed {
		_ = syscall.Shutdown(s.fd, syscall.SHUT_RDWR)
	}
	s.mu.Unlock()
	s.wake()
}

// close ends reading and closes the descriptor, with c's wmu held: no
// write is under way.
func (s *socket) close(c *Conn) {
	s.p.forget(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.endReading(c)
	s.p.ep.Del(s.fd)
	_ = syscall.Close(s.fd)
	s.closed = true
}

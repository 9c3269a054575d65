package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"tvsm/internal/platform/wsframe"
)

// A device's goroutine blocked in a read is woken through the Go runtime's
// netpoller for each message, and the wakeups, not the reading, were most
// of the simulator's CPU per message. The poller instead takes the
// sockets from the runtime (a duplicate of each descriptor) and one
// goroutine waits on all of them with epoll: a wakeup brings every socket
// ready by then, read with one read(2) each and decoded by a
// wsframe.Decoder (the server's frames arrive unmasked); the replies are
// written at once with write(2). The device's goroutine waits, parked,
// until its session ends.
//
// The poller's goroutine does not block in epoll_wait itself: a thread
// blocked in a system call must win a P back when it returns, which on a
// busy machine delayed the first message by tens to hundreds of
// milliseconds. The epoll descriptor is handed to the runtime's own
// poller instead (an epoll descriptor is readable while it has events), so
// the goroutine parks like any reader and calls epoll_wait only when it
// returns at once.

// epollSupported tells that ReaderEpoll runs here.
const epollSupported = true

// epollET is EPOLLET as the event mask's type holds it (syscall declares
// it negative).
const epollET = 1 << 31

// maxClientHead is the longest head of a client's frame: two bytes, a
// length of eight and a mask of four.
const maxClientHead = 14

// writeTimeout bounds a reply's wait for room in the socket's buffer.
const writeTimeout = 10 * time.Second

// poller reads the sockets it was given until stopped.
type poller struct {
	epfd   int
	ep     *os.File        // epfd, owned by the runtime's poller
	raw    syscall.RawConn // waits for ep to be readable
	wakeR  int             // the read end of a pipe that ends the loop
	wakeW  int
	mu     sync.Mutex
	conns  map[int32]*pollConn
	ended  chan struct{}
	closed bool
}

// newPoller starts a poller.
func newPoller() (*poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("simulate: epoll: %w", err)
	}
	var pipe [2]int
	if err := syscall.Pipe2(pipe[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		_ = syscall.Close(epfd)
		return nil, fmt.Errorf("simulate: pipe: %w", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		_ = syscall.Close(epfd)
		return nil, fmt.Errorf("simulate: epoll: %w", err)
	}
	p := &poller{epfd: epfd, ep: os.NewFile(uintptr(epfd), "epoll"), wakeR: pipe[0], wakeW: pipe[1], conns: map[int32]*pollConn{}, ended: make(chan struct{})}
	raw, err := p.ep.SyscallConn()
	if err != nil {
		p.closeFDs()
		return nil, fmt.Errorf("simulate: epoll: %w", err)
	}
	p.raw = raw
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p.wakeR, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p.wakeR)}); err != nil {
		p.closeFDs()
		return nil, fmt.Errorf("simulate: epoll: %w", err)
	}
	go p.loop()
	return p, nil
}

// stop ends the loop and waits for it; the sessions must have ended.
func (p *poller) stop() {
	_, _ = syscall.Write(p.wakeW, []byte{0})
	<-p.ended
	p.closeFDs()
}

func (p *poller) closeFDs() {
	_ = p.ep.Close()
	_ = syscall.Close(p.wakeR)
	_ = syscall.Close(p.wakeW)
}

// loop waits for sockets to be readable and reads them, in turn.
func (p *poller) loop() {
	defer close(p.ended)
	events := make([]syscall.EpollEvent, 256)
	// One closure for every wait: a closure made in the loop would take
	// its captures to the heap at every wakeup.
	var n int
	var waitErr error
	wait := func(fd uintptr) bool {
		n, waitErr = rawEpollWait(int(fd), events)
		if waitErr == syscall.EINTR {
			n, waitErr = 0, nil
		}
		return waitErr != nil || n > 0 // none ready: park until ep is readable
	}
	for {
		err := p.raw.Read(wait)
		if err == nil {
			err = waitErr
		}
		if err != nil {
			panic(fmt.Sprintf("simulate: epoll_wait: %v", err)) // a bad descriptor: a bug of ours
		}
		for _, ev := range events[:n] {
			if int(ev.Fd) == p.wakeR {
				return
			}
			p.mu.Lock()
			c := p.conns[ev.Fd]
			p.mu.Unlock()
			if c == nil {
				continue
			}
			if err := c.readable(ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP) != 0); err != nil {
				p.end(c, err)
			}
		}
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
		return syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET, Fd: int32(fd)})
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
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil) // not registered yet: nothing to undo
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
		n, err := rawRead(c.fd, room)
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
		n, err := rawWrite(c.fd, b)
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

// takeFD takes conn's socket from the Go runtime: a duplicate of its
// descriptor (non-blocking, as the runtime set it, and close-on-exec),
// then conn closed, which removes the runtime's interest in it.
func takeFD(conn net.Conn) (int, error) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return -1, fmt.Errorf("simulate: %T is no TCP connection", conn)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(orig uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, orig, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			dupErr = errno
			return
		}
		fd = int(r)
	}); err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, dupErr
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	_ = tc.Close()
	return fd, nil
}

// The sockets are non-blocking and epoll_wait is called without a timeout,
// so these system calls never wait: they are made raw, without telling the
// runtime. Its bookkeeping around a system call (the P handed over, and
// sysmon waking every 20 µs while calls go on, to take it back) was a
// tenth of the simulator's CPU per message.

func rawRead(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_READ, fd, p) }

func rawWrite(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_WRITE, fd, p) }

// rawIO makes read(2) or write(2) (trap) of fd with p.
func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, errno := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// rawEpollWait returns the events ready now (epoll_pwait: every
// architecture has it), waiting for none.
func rawEpollWait(epfd int, events []syscall.EpollEvent) (int, error) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

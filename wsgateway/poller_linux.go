package wsgateway

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// Devices mostly read: what they send is an acknowledgement now and then.
// A goroutine blocked in a read per connection costs, for each of them, a
// wakeup through the runtime's netpoller, a second read that finds nothing
// and parks it again, and gorilla's reading of the frame into memory of
// its own; in a broadcast that was about a quarter of the node's CPU per
// message. The hub instead reads its TCP connections with a few pollers,
// one goroutine each: a poller waits with epoll on many sockets, and a
// wakeup brings every socket ready by then, read with one read(2) each
// into a buffer the poller shares among them and decoded there
// (wsframe). Writes still go through gorilla, from the connection's
// writer. Other connections (TLS, or another system) keep a reader
// goroutine of their own.
//
// A poller's goroutine does not block in epoll_wait itself: a thread
// blocked in a system call must win a P back when it returns, which on a
// busy machine delays reads. The epoll descriptor is handed to the
// runtime's own poller instead (an epoll descriptor is readable while it
// has events), so the goroutine parks like any reader and calls
// epoll_wait only when it returns at once.

// pollScratch is the size of a poller's read buffer: a read takes what
// fits, and a frame longer than what is left is finished in memory of the
// connection's own.
const pollScratch = 16 << 10

// pollers are the hub's readers, started with the first connection they
// take and stopped by Shutdown.
type pollers struct {
	once, stopped sync.Once
	list          []*poller
	next          atomic.Uint32
}

// pick returns a poller for a new connection, the pollers started if need
// be; nil when they could not be (the connection then reads on a
// goroutine of its own).
func (ps *pollers) pick(h *Hub) *poller {
	ps.once.Do(func() {
		for range max(1, runtime.GOMAXPROCS(0)) {
			p, err := newPoller(h)
			if err != nil {
				h.opts.Logger.Warn("websocket: reading with a goroutine per connection", "error", err)
				break
			}
			ps.list = append(ps.list, p)
		}
	})
	if len(ps.list) == 0 {
		return nil
	}
	return ps.list[ps.next.Add(1)%uint32(len(ps.list))]
}

// stop ends the pollers that were started; none starts after it.
func (ps *pollers) stop() {
	ps.once.Do(func() {})
	ps.stopped.Do(func() {
		for _, p := range ps.list {
			p.stop()
		}
	})
}

// poller reads the sockets registered with it until stopped.
type poller struct {
	hub     *Hub
	epfd    int
	ep      *os.File        // epfd, owned by the runtime's poller
	raw     syscall.RawConn // waits for ep to be readable
	wakeR   int             // the read end of a pipe that ends the loop
	wakeW   int
	scratch []byte
	mu      sync.Mutex
	conns   map[int32]*Conn // by descriptor
	ended   chan struct{}
}

func newPoller(h *Hub) (*poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	var pipe [2]int
	if err := syscall.Pipe2(pipe[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		_ = syscall.Close(epfd)
		return nil, fmt.Errorf("pipe: %w", err)
	}
	p := &poller{hub: h, epfd: epfd, wakeR: pipe[0], wakeW: pipe[1], scratch: make([]byte, pollScratch),
		conns: map[int32]*Conn{}, ended: make(chan struct{})}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		p.closeFDs(false)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	p.ep = os.NewFile(uintptr(epfd), "epoll")
	if p.raw, err = p.ep.SyscallConn(); err != nil {
		p.closeFDs(true)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p.wakeR, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p.wakeR)}); err != nil {
		p.closeFDs(true)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	go p.loop()
	return p, nil
}

func (p *poller) closeFDs(owned bool) {
	if owned {
		_ = p.ep.Close()
	} else {
		_ = syscall.Close(p.epfd)
	}
	_ = syscall.Close(p.wakeR)
	_ = syscall.Close(p.wakeW)
}

// stop ends the loop, waits for it and closes the poller's descriptors.
func (p *poller) stop() {
	_, _ = syscall.Write(p.wakeW, []byte{0})
	<-p.ended
	p.closeFDs(true)
}

// loop waits for sockets to be readable and reads them, in turn.
//
// The rounds run inside one wait of the runtime's poller on ep (RawConn.Read
// makes its descriptor's readiness stale only once, when it begins). After
// a round that read every socket epoll reported as far as it went, the
// loop waits before asking epoll again: asking would mostly find nothing,
// and cost a system call per wakeup. Nothing is missed by it, since every
// event added to ep wakes the runtime's poller, which registered ep
// edge-triggered: an event that came during the round has made ep ready
// already, and the wait returns at once. A round that may have left
// something (a full batch of events, a read that filled the room it had)
// asks again at once.
func (p *poller) loop() {
	defer close(p.ended)
	events := make([]syscall.EpollEvent, 256)
	var waitErr error
	err := p.raw.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.EpollWait(int(fd), events, 0)
			switch {
			case err == syscall.EINTR:
				continue
			case err != nil:
				waitErr = err
				return true
			case n == 0:
				return false // wait until ep is readable
			}
			more := n == len(events)
			for _, ev := range events[:n] {
				if int(ev.Fd) == p.wakeR {
					return true
				}
				p.mu.Lock()
				c := p.conns[ev.Fd]
				p.mu.Unlock()
				if c != nil && c.readable(p.scratch) {
					more = true
				}
			}
			if !more {
				return false
			}
		}
	})
	if err == nil {
		err = waitErr
	}
	if err != nil {
		// The descriptor is the poller's own: only a bug of ours gets here.
		panic(fmt.Sprintf("wsgateway: epoll_wait: %v", err))
	}
}

// add has p read c's socket; false when it cannot (the caller then starts
// a reader goroutine). The connection must give its socket (syscall.Conn,
// as a TCP connection and the connection cap's wrapper of one do): one
// that transforms the stream, such as TLS, does not.
func (p *poller) add(c *Conn) bool {
	sc, ok := c.ws.NetConn().(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	if err := rc.Control(func(s uintptr) { fd = int(s) }); err != nil || fd < 0 {
		return false
	}
	c.rd.p, c.rd.fd = p, fd
	p.mu.Lock()
	p.conns[int32(fd)] = c
	p.mu.Unlock()
	// Level-triggered: what one read leaves is reported again.
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}); err != nil {
		p.mu.Lock()
		delete(p.conns, int32(fd))
		p.mu.Unlock()
		c.rd.p = nil
		return false
	}
	return true
}

// remove stops reading c's socket. The socket is still open, so its
// descriptor cannot name another connection yet.
func (p *poller) remove(c *Conn) {
	p.mu.Lock()
	if p.conns[int32(c.rd.fd)] == c {
		delete(p.conns, int32(c.rd.fd))
	}
	p.mu.Unlock()
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, c.rd.fd, nil)
}

// readSocket reads what arrived on fd into buf.
func readSocket(fd int, buf []byte) (n int, again bool, err error) {
	n, err = syscall.Read(fd, buf)
	switch {
	case err == syscall.EAGAIN || err == syscall.EINTR:
		return 0, true, nil
	case err != nil:
		return 0, false, err
	}
	return n, false, nil
}

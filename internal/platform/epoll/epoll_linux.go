//go:build linux

package epoll

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Supported says that Pollers run here.
const Supported = true

// The events a socket may be watched for (Add) and reported with.
const (
	In    = syscall.EPOLLIN
	Out   = syscall.EPOLLOUT
	RDHup = syscall.EPOLLRDHUP
	Hup   = syscall.EPOLLHUP
	Err   = syscall.EPOLLERR
	// ET makes the watch edge-triggered: an event comes when the socket
	// becomes readable (or writable), so each one must be read until the
	// socket is empty. (syscall declares EPOLLET negative.)
	ET = 1 << 31
)

// Poller waits on its sockets and calls its handler for those ready.
type Poller struct {
	epfd   int
	ep     *os.File        // epfd, watched by the runtime's poller
	raw    syscall.RawConn // waits for ep to be readable
	wakeR  int             // the read end of a pipe that ends the loop
	wakeW  int
	handle func(fd int32, events uint32)
	ended  chan struct{}
}

// New starts a Poller whose goroutine calls handle with every socket
// ready and the events it is ready for, one at a time, until Stop.
func New(handle func(fd int32, events uint32)) (*Poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: create: %w", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		_ = syscall.Close(epfd)
		return nil, fmt.Errorf("epoll: nonblock: %w", err)
	}
	var pipe [2]int
	if err := syscall.Pipe2(pipe[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		_ = syscall.Close(epfd)
		return nil, fmt.Errorf("epoll: pipe: %w", err)
	}
	p := &Poller{epfd: epfd, ep: os.NewFile(uintptr(epfd), "epoll"), wakeR: pipe[0], wakeW: pipe[1],
		handle: handle, ended: make(chan struct{})}
	if p.raw, err = p.ep.SyscallConn(); err != nil {
		p.closeFDs()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if err := p.Add(p.wakeR, In); err != nil {
		p.closeFDs()
		return nil, err
	}
	go p.loop()
	return p, nil
}

// Add watches socket fd for events (In, Out, RDHup, ET). A socket ready
// already is reported at once.
func (p *Poller) Add(fd int, events uint32) error {
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: events, Fd: int32(fd)}); err != nil {
		return fmt.Errorf("epoll: add: %w", err)
	}
	return nil
}

// Del stops watching fd, before it is closed: a descriptor duplicated
// elsewhere would otherwise stay watched.
func (p *Poller) Del(fd int) {
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, fd, nil) // not watched: nothing to undo
}

// Stop ends the loop, waits for it and closes the poller's descriptors.
func (p *Poller) Stop() {
	_, _ = syscall.Write(p.wakeW, []byte{0})
	<-p.ended
	p.closeFDs()
}

func (p *Poller) closeFDs() {
	_ = p.ep.Close()
	_ = syscall.Close(p.wakeR)
	_ = syscall.Close(p.wakeW)
}

// loop waits for sockets to be ready and hands them to handle, in turn.
func (p *Poller) loop() {
	defer close(p.ended)
	events := make([]syscall.EpollEvent, 256)
	// One closure for every wait: one made in the loop would take its
	// captures to the heap at every wakeup.
	var n int
	var waitErr error
	wait := func(fd uintptr) bool {
		n, waitErr = epollWait(int(fd), events)
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
			panic(fmt.Sprintf("epoll: wait: %v", err)) // a bad descriptor: a bug of ours
		}
		for _, ev := range events[:n] {
			if int(ev.Fd) == p.wakeR {
				return
			}
			p.handle(ev.Fd, ev.Events)
		}
	}
}

// TakeFD takes tc's socket from the runtime: a duplicate of its descriptor
// (non-blocking, as the runtime set it, and close-on-exec), then tc
// closed, which ends the runtime's interest in it. Wrappers of tc are left
// open: closing one later frees what it holds.
func TakeFD(tc *net.TCPConn) (int, error) {
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
		return -1, fmt.Errorf("epoll: dup: %w", dupErr)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return -1, fmt.Errorf("epoll: nonblock: %w", err)
	}
	_ = tc.Close()
	return fd, nil
}

// The sockets are non-blocking and epoll_wait is called without a timeout,
// so these system calls never wait: they are made raw, without telling the
// runtime. Its bookkeeping around a system call (the processor handed
// over, and its monitor waking every 20 µs while calls go on, to take it
// back) was a tenth of the device simulator's CPU per message.

// Read reads from non-blocking fd into p: read(2), errors as its errno.
func Read(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_READ, fd, p) }

// Write writes p to non-blocking fd: write(2), errors as its errno.
func Write(fd int, p []byte) (int, error) { return rawIO(syscall.SYS_WRITE, fd, p) }

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

// epollWait returns the events ready now (epoll_pwait: every architecture
// has it), waiting for none.
func epollWait(epfd int, events []syscall.EpollEvent) (int, error) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

//go:build linux

package epoll

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// pair returns a loopback TCP connection's two ends, the server's taken
// from the runtime.
func pair(t *testing.T) (fd int, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = peer.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if fd, err = TakeFD(c.(*net.TCPConn)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	return fd, peer
}

// Given a socket taken from the runtime and watched edge-triggered, when
// the peer writes, then the handler gets the socket once, its bytes read
// with Read; what the server writes with Write reaches the peer; the
// socket keeps working after the runtime's descriptor was closed; and
// after Del and Stop nothing more is handed over.
func TestPollerHandsReadySocketsOver(t *testing.T) {
	fd, peer := pair(t)
	type event struct {
		fd     int32
		events uint32
		data   string
	}
	got := make(chan event, 16)
	buf := make([]byte, 64)
	p, err := New(func(fd int32, events uint32) {
		n, _ := Read(int(fd), buf)
		got <- event{fd, events, string(buf[:max(n, 0)])}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add(fd, In|RDHup|ET); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"one", "two"} {
		if _, err := peer.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-got:
			if int(ev.fd) != fd || ev.events&In == 0 || ev.data != msg {
				t.Fatalf("got %+v, want %q on %d", ev, msg, fd)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q not handed over", msg)
		}
	}
	if n, err := Write(fd, []byte("back")); n != 4 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 4)
	if _, err := peer.Read(b); err != nil || string(b) != "back" {
		t.Fatalf("peer read %q, %v", b, err)
	}
	if n, err := Read(fd, buf); err != syscall.EAGAIN || n != 0 {
		t.Fatalf("read of an empty socket: %d, %v; want EAGAIN", n, err)
	}
	p.Del(fd)
	if _, err := peer.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		t.Fatalf("handed over after Del: %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
	p.Stop()
}

// Given a hung-up peer, the socket is handed over with RDHup and its reads
// come to the end of the stream.
func TestPollerReportsHangUp(t *testing.T) {
	fd, peer := pair(t)
	got := make(chan uint32, 4)
	p, err := New(func(_ int32, events uint32) { got <- events })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := p.Add(fd, In|RDHup|ET); err != nil {
		t.Fatal(err)
	}
	_ = peer.Close()
	select {
	case ev := <-got:
		if ev&RDHup == 0 {
			t.Fatalf("events %#x without RDHup", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hang-up not handed over")
	}
	if n, err := Read(fd, make([]byte, 8)); n != 0 || err != nil {
		t.Fatalf("read at the end: %d, %v", n, err)
	}
}

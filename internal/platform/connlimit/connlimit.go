// Package connlimit caps the connections a server holds: at most Max in all
// and at most PerAddress from one client address, so that clients holding
// connections open (idle keep-alives, bodies sent a byte at a time) cannot
// take every file descriptor and goroutine of the node, and one address
// cannot take them all from the others.
//
// A Listener refuses a connection over a cap as soon as it is accepted: it
// writes a short answer (Options.Refusal, an HTTP response) and closes it,
// and the server never sees it. A Counter is the per-address count itself,
// for caps on something narrower than connections (websockets).
//
// Addresses are counted by Key: an IPv4 address by itself, an IPv6 address
// by its /64, since one IPv6 client is commonly given a whole /64.
package connlimit

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Reason says which cap refused a connection.
type Reason int

// The caps.
const (
	// Total: Options.Max connections are open.
	Total Reason = iota + 1
	// PerAddress: Options.PerAddress connections from the client's address
	// are open.
	PerAddress
)

// String names the reason in metrics and logs.
func (r Reason) String() string {
	switch r {
	case Total:
		return "total"
	case PerAddress:
		return "address"
	}
	return "unknown"
}

// Limits of the answer to a refused connection: how long it may take to
// write the answer and read what the client sent meanwhile (so that closing
// does not reset the connection before the client read the answer), and how
// many refusals may be under way at once (past that, refused connections
// are closed without an answer).
const (
	refusalTime   = time.Second
	refusalDrain  = 16 << 10
	maxRefusing   = 64
	refusalLinger = 250 * time.Millisecond
)

// Options configure a Listener. Zero caps are no caps.
type Options struct {
	// Max is the most connections open at once.
	Max int
	// PerAddress is the most connections open at once from one client
	// address (Key).
	PerAddress int
	// Refusal returns what is written to a connection refused for reason
	// before it is closed (nil: nothing).
	Refusal func(reason Reason) []byte
}

// Listener is a net.Listener that holds to Options' caps. A connection it
// returns counts until it is closed, hijacked or not.
type Listener struct {
	net.Listener
	opts    Options
	total   atomic.Int64
	addrs   *Counter
	refused [PerAddress + 1]atomic.Uint64
	// refusing counts the refusals being written.
	refusing atomic.Int32
}

// Wrap returns l with the caps of opts.
func Wrap(l net.Listener, opts Options) *Listener {
	return &Listener{Listener: l, opts: opts, addrs: NewCounter(opts.PerAddress)}
}

// Accept returns the next connection within the caps; connections over a
// cap are refused on the way and never returned.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, keyed := remoteKey(c)
		if n := l.total.Add(1); l.opts.Max > 0 && n > int64(l.opts.Max) {
			l.total.Add(-1)
			l.refuse(c, Total)
			continue
		}
		if keyed && !l.addrs.Acquire(key) {
			l.total.Add(-1)
			l.refuse(c, PerAddress)
			continue
		}
		return &conn{Conn: c, l: l, key: key, keyed: keyed}, nil
	}
}

// Open returns the number of connections open.
func (l *Listener) Open() int { return int(l.total.Load()) }

// Refused returns the number of connections refused for reason.
func (l *Listener) Refused(reason Reason) uint64 {
	if reason != Total && reason != PerAddress {
		return 0
	}
	return l.refused[reason].Load()
}

// refuse answers c with the refusal for reason and closes it, off the
// accepting goroutine.
func (l *Listener) refuse(c net.Conn, reason Reason) {
	l.refused[reason].Add(1)
	var answer []byte
	if l.opts.Refusal != nil {
		answer = l.opts.Refusal(reason)
	}
	if len(answer) == 0 {
		_ = c.Close()
		return
	}
	if l.refusing.Add(1) > maxRefusing {
		l.refusing.Add(-1)
		_ = c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		writeAndClose(c, answer)
	}()
}

// writeAndClose writes answer to c, then closes c gracefully: it stops
// sending and reads (a little, briefly) what the client sent, because
// closing a socket with unread input resets the connection, and the client
// might lose the answer.
func writeAndClose(c net.Conn, answer []byte) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refusalTime))
	if _, err := c.Write(answer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(refusalLinger))
	buf := make([]byte, 4<<10)
	for read := 0; read < refusalDrain; {
		n, err := c.Read(buf)
		read += n
		if err != nil {
			return
		}
	}
}

// conn is an accepted connection; closing it frees its place.
type conn struct {
	net.Conn
	l     *Listener
	key   netip.Prefix
	keyed bool
	once  sync.Once
}

// Close closes the connection and frees its place, once.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.total.Add(-1)
		if c.keyed {
			c.l.addrs.Release(c.key)
		}
	})
	return err
}

// Unwrap returns the accepted connection, so that the websocket gateway
// may take its socket: it closes that connection and keeps this one, whose
// Close then frees the place.
func (c *conn) Unwrap() net.Conn { return c.Conn }

// remoteKey returns the Key of c's client, false when c is not over IP.
func remoteKey(c net.Conn) (netip.Prefix, bool) {
	tcp, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	return Key(tcp.AddrPort().Addr()), true
}

// Key is what a client address counts as: an IPv4 address (also when
// mapped into IPv6) as itself, an IPv6 address as its /64.
func Key(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.WithZone("").Prefix(64)
	return p
}

// ParseKey is Key of a textual address; false when s is not an IP address.
func ParseKey(s string) (netip.Prefix, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	return Key(a), true
}

// Counter counts what each address holds, up to a cap. It is safe for
// concurrent use.
type Counter struct {
	max int
	mu  sync.Mutex
	n   map[netip.Prefix]int
}

// NewCounter returns a counter allowing max per address (0: no cap, and
// nothing is counted).
func NewCounter(max int) *Counter {
	return &Counter{max: max, n: make(map[netip.Prefix]int)}
}

// Acquire takes one place for key and reports whether it was free.
func (c *Counter) Acquire(key netip.Prefix) bool {
	if c.max <= 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] >= c.max {
		return false
	}
	c.n[key]++
	return true
}

// Release gives back a place Acquire took.
func (c *Counter) Release(key netip.Prefix) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] <= 1 {
		delete(c.n, key) // the map holds only addresses with places taken
		return
	}
	c.n[key]--
}

// Held returns the places key holds.
func (c *Counter) Held(key netip.Prefix) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

package connlimit_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"tvsm/internal/platform/connlimit"
)

// refusal is the answer the tests' listeners give, naming the cap.
func refusal(r connlimit.Reason) []byte {
	body := "refused: " + r.String()
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// server serves HTTP on a capped loopback listener: GET / answers "ok",
// GET /hijack takes the connection over and holds it until the client
// closes it.
func server(t *testing.T, opts connlimit.Options) (*connlimit.Listener, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := connlimit.Wrap(inner, opts)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /hijack", func(w http.ResponseWriter, r *http.Request) {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\n\r\n")
		_ = rw.Flush()
		go func() {
			defer c.Close()
			_, _ = io.Copy(io.Discard, c)
		}()
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l, inner.Addr().String()
}

// client is one keep-alive connection from a chosen loopback address.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, from, addr string) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

// get sends GET path and returns the status and body.
func (c *client) get(path string) (int, string) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, ""
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitOpen waits until l counts n open connections (a closed connection is
// released when the server notices the close).
func waitOpen(t *testing.T, l *connlimit.Listener, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for l.Open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", l.Open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPerAddressCap(t *testing.T) {
	l, addr := server(t, connlimit.Options{PerAddress: 2, Refusal: refusal})
	a1, a2 := dial(t, "127.0.0.1", addr), dial(t, "127.0.0.1", addr)
	for _, c := range []*client{a1, a2} {
		if status, body := c.get("/"); status != http.StatusOK || body != "ok" {
			t.Fatalf("within the cap: %d %q", status, body)
		}
	}
	// A third connection from the address is answered and closed.
	if status, body := dial(t, "127.0.0.1", addr).get("/"); status != http.StatusServiceUnavailable || body != "refused: address" {
		t.Fatalf("third from 127.0.0.1: %d %q", status, body)
	}
	// Another address is not affected.
	if status, _ := dial(t, "127.0.0.2", addr).get("/"); status != http.StatusOK {
		t.Fatalf("from 127.0.0.2: %d", status)
	}
	if got := l.Refused(connlimit.PerAddress); got != 1 {
		t.Fatalf("refused by address: %d, want 1", got)
	}
	// Once one of the two closes, the address may connect again.
	a1.c.Close()
	waitOpen(t, l, 2)
	if status, _ := dial(t, "127.0.0.1", addr).get("/"); status != http.StatusOK {
		t.Fatalf("after a close: %d", status)
	}
	if status, _ := a2.get("/"); status != http.StatusOK {
		t.Fatalf("the held connection: %d", status)
	}
}

func TestTotalCap(t *testing.T) {
	l, addr := server(t, connlimit.Options{Max: 3, PerAddress: 10, Refusal: refusal})
	for i := range 3 {
		if status, _ := dial(t, fmt.Sprintf("127.0.0.%d", 1+i), addr).get("/"); status != http.StatusOK {
			t.Fatalf("connection %d: %d", i, status)
		}
	}
	if status, body := dial(t, "127.0.0.9", addr).get("/"); status != http.StatusServiceUnavailable || body != "refused: total" {
		t.Fatalf("fourth: %d %q", status, body)
	}
	if l.Refused(connlimit.Total) != 1 || l.Refused(connlimit.PerAddress) != 0 || l.Open() != 3 {
		t.Fatalf("refused %d total, %d by address; %d open", l.Refused(connlimit.Total), l.Refused(connlimit.PerAddress), l.Open())
	}
}

// A hijacked connection (a websocket) keeps its place until it is closed.
func TestHijackedConnectionsCount(t *testing.T) {
	l, addr := server(t, connlimit.Options{PerAddress: 1, Refusal: refusal})
	held := dial(t, "127.0.0.1", addr)
	if status, _ := held.get("/hijack"); status != http.StatusSwitchingProtocols {
		t.Fatalf("hijack: %d", status)
	}
	if status, _ := dial(t, "127.0.0.1", addr).get("/"); status != http.StatusServiceUnavailable {
		t.Fatalf("beside a hijacked connection: %d", status)
	}
	held.c.Close()
	waitOpen(t, l, 0)
	if status, _ := dial(t, "127.0.0.1", addr).get("/"); status != http.StatusOK {
		t.Fatalf("after the hijacked connection closed: %d", status)
	}
}

// Many connections at once from one address: never more than the cap are
// served, every other is refused, and all places are given back.
func TestConcurrentConnections(t *testing.T) {
	l, addr := server(t, connlimit.Options{PerAddress: 5, Refusal: refusal})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	release := make(chan struct{})
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, "127.0.0.1", addr)
			status, _ := c.get("/")
			mu.Lock()
			statuses[status]++
			mu.Unlock()
			<-release // hold the connection until every client has its answer
			c.c.Close()
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := statuses[http.StatusOK] + statuses[http.StatusServiceUnavailable]
		mu.Unlock()
		if n == 40 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if statuses[http.StatusOK] != 5 || statuses[http.StatusServiceUnavailable] != 35 {
		t.Fatalf("answers %v, want 5 × 200 and 35 × 503", statuses)
	}
	waitOpen(t, l, 0)
}

func TestKey(t *testing.T) {
	for _, c := range []struct{ addr, key string }{
		{"192.0.2.7", "192.0.2.7/32"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::ffff", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
	} {
		if got := connlimit.Key(netip.MustParseAddr(c.addr)); got.String() != c.key {
			t.Errorf("Key(%s) = %s, want %s", c.addr, got, c.key)
		}
	}
	if _, ok := connlimit.ParseKey("not an address"); ok {
		t.Error("ParseKey accepted a name")
	}
}

func TestCounter(t *testing.T) {
	c := connlimit.NewCounter(2)
	a, b := connlimit.Key(netip.MustParseAddr("192.0.2.1")), connlimit.Key(netip.MustParseAddr("192.0.2.2"))
	if !c.Acquire(a) || !c.Acquire(a) || c.Acquire(a) || !c.Acquire(b) {
		t.Fatal("cap of 2 per address not held")
	}
	c.Release(a)
	if !c.Acquire(a) || c.Held(a) != 2 {
		t.Fatalf("after a release: held %d", c.Held(a))
	}
	unlimited := connlimit.NewCounter(0)
	for range 1000 {
		if !unlimited.Acquire(a) {
			t.Fatal("a counter without cap refused")
		}
	}
	if !strings.Contains(connlimit.PerAddress.String(), "address") {
		t.Fatal(connlimit.PerAddress.String())
	}
}

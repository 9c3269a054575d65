//go:build linux

package wsgateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/connlimit"
)

// Given devices connected over TCP, when they are idle, then no goroutine
// waits for any of them: the hub's pollers read their sockets.
func TestAnIdlePolledConnectionHoldsNoGoroutine(t *testing.T) {
	e := newEnv(t, Options{})
	e.dial(t, 1, nil) // the pollers start with the first connection
	before := runtime.NumGoroutine()
	const n = 100
	for i := range n {
		e.dial(t, int64(100+i), nil)
	}
	// The dialling side's goroutines are gorilla's: none per connection
	// while nothing is read. The HTTP server's goroutine of each upgrade
	// ends once Upgrade returns.
	var after int
	waitFor(t, 5*time.Second, func() bool { after = runtime.NumGoroutine(); return after-before < n/10 }, "the upgrades' goroutines ended")
	if !rawPath(t, e, 100) {
		t.Fatal("the connection is not polled")
	}
}

// Given devices connecting and leaving in waves while messages go to them
// and their acknowledgements come back, when a socket's descriptor number
// is reused by a later connection, then every acknowledgement is still
// handed over as its own device's.
func TestReusedDescriptorsKeepTheirDevices(t *testing.T) {
	var mu sync.Mutex
	devicesOf := map[int][]int64{} // descriptor number → devices that had it
	e := newEnv(t, Options{QueueSize: 64, CloseGrace: 50 * time.Millisecond, OnOpen: func(c *Conn) {
		mu.Lock()
		devicesOf[c.sock.fd] = append(devicesOf[c.sock.fd], c.DeviceID())
		mu.Unlock()
	}})
	const waves, perWave = 8, 24
	var wg sync.WaitGroup
	errs := make(chan error, waves*perWave)
	for w := range waves {
		for i := range perWave {
			wg.Add(1)
			go func(id int64) {
				defer wg.Done()
				d := &websocket.Dialer{HandshakeTimeout: 5 * time.Second}
				ws, resp, err := d.Dial(e.url+strconv.FormatInt(id, 10), nil)
				if err != nil {
					errs <- fmt.Errorf("dial %d: %w", id, err)
					return
				}
				_ = resp.Body.Close()
				defer ws.Close()
				for k := range 3 {
					ack := fmt.Sprintf(`{"type":"ack","id":"%d.%d"}`, id, k)
					if err := ws.WriteMessage(websocket.TextMessage, []byte(ack)); err != nil {
						errs <- fmt.Errorf("device %d: %w", id, err)
						return
					}
				}
			}(int64(w*perWave + i + 1))
		}
		// The next wave starts once half of this one has ended on the
		// server, so that its sockets get the freed numbers (Linux hands
		// out the lowest free descriptor) while the rest of this wave
		// still ends.
		for closed := 0; closed < perWave/2; closed++ {
			select {
			case <-e.closes:
			case <-time.After(10 * time.Second):
				t.Fatalf("wave %d: %d of its connections ended", w, closed)
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for got := 0; got < waves*perWave*3; got++ {
		select {
		case m := <-e.msgs:
			if dev, _, _ := strings.Cut(m.msg.ID, "."); dev != strconv.FormatInt(m.deviceID, 10) {
				t.Fatalf("ack %q handed over as device %d's", m.msg.ID, m.deviceID)
			}
		case <-timeout:
			t.Fatalf("%d of %d acknowledgements", got, waves*perWave*3)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	reused := 0
	for _, devices := range devicesOf {
		if len(devices) > 1 {
			reused++
		}
	}
	if reused == 0 {
		t.Fatalf("no descriptor number was reused among %d connections: the test shows nothing", waves*perWave)
	}
	t.Logf("%d descriptor numbers served more than one device", reused)
}

// Given a device that reads nothing while a message bigger than the
// socket's buffers waits to be written to it, when it pings, and when the
// other devices (some on the same poller) send acknowledgements, then the
// pong waits for the write without holding its poller up: every other
// acknowledgement is read, and the device gets the message, then the pong.
func TestAWaitingWriteHoldsNoPollerUp(t *testing.T) {
	e := newEnv(t, Options{QueueSize: 64})
	stuck := e.dial(t, 1, nil)
	others := make([]*websocket.Conn, runtime.GOMAXPROCS(0)+1)
	for i := range others {
		others[i] = e.dial(t, int64(10+i), nil)
	}
	big := `{"text":"` + strings.Repeat("x", 16<<20) + `"}`
	if !e.hub.Send(1, command(t, "big", big)) {
		t.Fatal("send refused")
	}
	c, _ := e.hub.Lookup(1)
	waitFor(t, 5*time.Second, func() bool { return c.writeStarted.Load() != 0 }, "a writer waiting on the full socket")
	pong := make(chan string, 1)
	stuck.SetPongHandler(func(data string) error { pong <- data; return nil })
	if err := stuck.WriteControl(websocket.PingMessage, []byte("p1"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for i, ws := range others {
		if err := ws.WriteMessage(websocket.TextMessage, ack(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < len(others) {
		select {
		case m := <-e.msgs:
			seen[m.msg.ID] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d acknowledgements read while a write waits", len(seen), len(others))
		}
	}
	_ = stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
	if env := readEnvelope(t, stuck); env.ID != "big" {
		t.Fatalf("first message %q", env.ID)
	}
	go func() { _, _, _ = stuck.ReadMessage() }() // the pong handler runs in a read
	select {
	case data := <-pong:
		if data != "p1" {
			t.Fatalf("pong %q", data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no pong after the message")
	}
}

// Given the HTTP server's listener counting its connections (connlimit),
// when a device's socket is taken from the runtime, then its connection
// still counts until the device is gone.
func TestAPolledConnectionKeepsItsListenerPlace(t *testing.T) {
	e := &testEnv{msgs: make(chan received, 16), closes: make(chan ended, 16)}
	e.hub = NewHub(Options{CloseGrace: 50 * time.Millisecond,
		OnClose: func(c *Conn, r CloseReason) { e.closes <- ended{c.DeviceID(), r, c.CloseCode()} }})
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = e.hub.Upgrade(w, r, Identity{Device: 7, Provider: 1})
	}))
	ln := connlimit.Wrap(e.srv.Listener, connlimit.Options{Max: 10})
	e.srv.Listener = ln
	e.srv.Start()
	t.Cleanup(e.stop)
	e.url = "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws?device="
	ws := e.dial(t, 7, nil)
	if !rawPath(t, e, 7) {
		t.Fatal("the connection is not polled")
	}
	if n := ln.Open(); n != 1 {
		t.Fatalf("%d connections counted while the device is connected, want 1", n)
	}
	_ = ws.Close()
	e.waitClose(t, 7)
	waitFor(t, 5*time.Second, func() bool { return ln.Open() == 0 }, "the place freed")
}

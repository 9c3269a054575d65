package wsgateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// received is a message delivered to OnMessage.
type received struct {
	deviceID int64
	msg      DeviceMessage
}

// ended is a connection end delivered to OnClose.
type ended struct {
	deviceID int64
	reason   CloseReason
	code     int // Conn.CloseCode
}

// testEnv is a hub behind a real HTTP server; devices connect to
// /ws?device=<id>.
type testEnv struct {
	hub    *Hub
	srv    *httptest.Server
	url    string
	msgs   chan received
	closes chan ended
}

// newEnv starts a hub with opts (callbacks are set by the env) and registers
// its teardown with t.
func newEnv(t *testing.T, opts Options) *testEnv {
	t.Helper()
	e := startEnv(opts)
	t.Cleanup(e.stop)
	return e
}

// startEnv starts a hub and server without registering cleanup.
func startEnv(opts Options) *testEnv {
	e := &testEnv{msgs: make(chan received, 4096), closes: make(chan ended, 4096)}
	opts.OnMessage = func(c *Conn, m DeviceMessage) { e.msgs <- received{c.DeviceID(), m} }
	opts.OnClose = func(c *Conn, r CloseReason) { e.closes <- ended{c.DeviceID(), r, c.CloseCode()} }
	e.hub = NewHub(opts)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.URL.Query().Get("device"), 10, 64)
		if err != nil {
			http.Error(w, "device", http.StatusBadRequest)
			return
		}
		_ = e.hub.Upgrade(w, r, Identity{Device: id, Account: id * 10, Provider: 1})
	}))
	e.url = "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws?device="
	return e
}

// stop shuts the hub and the server down.
func (e *testEnv) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.hub.Shutdown(ctx)
	e.srv.Close()
}

// dial connects device id and waits until the hub has registered it.
func (e *testEnv) dial(t *testing.T, id int64, d *websocket.Dialer) *websocket.Conn {
	t.Helper()
	if d == nil {
		d = &websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	}
	ws, resp, err := d.Dial(e.url+strconv.FormatInt(id, 10), nil)
	if err != nil {
		t.Fatalf("dial device %d: %v", id, err)
	}
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = ws.Close() })
	waitFor(t, 5*time.Second, func() bool { return e.hub.Connected(id) }, "device registered")
	return ws
}

// waitClose waits for the OnClose of device id and returns its reason.
func (e *testEnv) waitClose(t *testing.T, id int64) CloseReason {
	t.Helper()
	return e.waitEnded(t, id).reason
}

// waitEnded waits for the OnClose of device id.
func (e *testEnv) waitEnded(t *testing.T, id int64) ended {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case c := <-e.closes:
			if c.deviceID == id {
				return c
			}
		case <-timeout:
			t.Fatalf("no OnClose for device %d", id)
		}
	}
}

// waitFor polls cond until it holds or d elapses.
func waitFor(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// command encodes a command message for tests.
func command(t testing.TB, id string, body string) []byte {
	t.Helper()
	msg, err := EncodeCommand(id, json.RawMessage(body))
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// readEnvelope reads one command message from the device side.
func readEnvelope(t *testing.T, ws *websocket.Conn) commandEnvelope {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("device read: %v", err)
	}
	var env commandEnvelope
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return env
}

// readCloseCode reads until the connection ends and returns the close code
// received, or -1 when it ended without a close frame.
func readCloseCode(t *testing.T, ws *websocket.Conn) int {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			if ce, ok := err.(*websocket.CloseError); ok {
				return ce.Code
			}
			return -1
		}
	}
}

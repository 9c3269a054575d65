package wsgateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/supervise"
	"tvsm/internal/testkit/testutil"
)

// A panic in a hook (the dispatcher's code, run on the connection's
// goroutines) closes that connection with 1011 and is logged with its
// stack and counted; the hub and the other connections go on, and
// shutdown still waits for every connection.
func TestHookPanicClosesOnlyItsConnection(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	closes := make(chan ended, 16)
	hub := NewHub(Options{
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		OnOpen: func(c *Conn) {
			if c.DeviceID() == 4 {
				panic("open hook bug")
			}
		},
		OnMessage: func(c *Conn, m DeviceMessage) {
			if m.ID == "boom" {
				panic("message hook bug")
			}
		},
		OnClose: func(c *Conn, r CloseReason) {
			closes <- ended{c.DeviceID(), r, c.CloseCode()}
			if c.DeviceID() == 3 {
				panic("close hook bug")
			}
		},
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.URL.Query().Get("device"), 10, 64)
		_ = hub.Upgrade(w, r, Identity{Device: id})
	}))
	defer srv.Close()
	dial := func(id int64) *websocket.Conn {
		t.Helper()
		ws, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/?device="+strconv.FormatInt(id, 10), nil)
		if err != nil {
			t.Fatalf("dial %d: %v", id, err)
		}
		_ = resp.Body.Close()
		t.Cleanup(func() { _ = ws.Close() })
		return ws
	}
	before := supervise.Counts()[panicComponent]

	bad, good, closing := dial(1), dial(2), dial(3)
	waitFor(t, 5*time.Second, func() bool { return hub.Count() == 3 }, "three connections")
	if err := bad.WriteMessage(websocket.TextMessage, []byte(`{"type":"ack","id":"boom"}`)); err != nil {
		t.Fatal(err)
	}
	if code := readCloseCode(t, bad); code != websocket.CloseInternalServerErr {
		t.Fatalf("device 1 closed with %d, want 1011", code)
	}
	if e := <-closes; e.deviceID != 1 || e.reason != ReasonInternalError {
		t.Fatalf("OnClose %+v, want device 1 with internal_error", e)
	}
	// The others are untouched: a message still reaches device 2.
	c2, ok := hub.Lookup(2)
	if !ok || !c2.Send(command(t, "x", `{"command":"reboot"}`)) {
		t.Fatal("device 2 gone")
	}
	if env := readEnvelope(t, good); env.ID != "x" {
		t.Fatalf("device 2 got %+v", env)
	}
	// A panic of the open hook closes the new connection at once.
	if code := readCloseCode(t, dial(4)); code != websocket.CloseInternalServerErr {
		t.Fatalf("device 4 closed with %d, want 1011", code)
	}
	// A panic of the close hook does not keep shutdown waiting.
	_ = closing.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	waitFor(t, 5*time.Second, func() bool { return !hub.Connected(3) }, "device 3 gone")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hub.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown after hook panics: %v", err)
	}
	if got := supervise.Counts()[panicComponent] - before; got != 3 {
		t.Errorf("%d panics counted, want 3", got)
	}
	for _, want := range []string{"message hook bug", "open hook bug", "close hook bug", "goroutine"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

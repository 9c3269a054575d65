package wsgateway

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/connlimit"
	"tvsm/internal/platform/wsframe"
)

// The tests of reading, run again with a reader goroutine per connection:
// the hub reads that way where it has no poller (TLS, systems without
// epoll).
func TestGoroutineReaders(t *testing.T) {
	goroutineReaders = true
	defer func() { goroutineReaders = false }()
	for _, test := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"PingPong", TestPingPong},
		{"MessagesKeepAConnectionAlive", TestMessagesKeepAConnectionAlive},
		{"ReadLimitClosesConnection", TestReadLimitClosesConnection},
		{"BadMessagesAreCountedThenPolicyClose", TestBadMessagesAreCountedThenPolicyClose},
		{"ClientCloseIsReported", TestClientCloseIsReported},
		{"CloseCodeOfClientClose", TestCloseCodeOfClientClose},
		{"CloseCodeWithoutFrame", TestCloseCodeWithoutFrame},
		{"AckAndConfirmReachOnMessage", TestAckAndConfirmReachOnMessage},
		{"HookPanicClosesOnlyItsConnection", TestHookPanicClosesOnlyItsConnection},
		{"ShutdownClosesAllWithGoingAway", TestShutdownClosesAllWithGoingAway},
		{"NoGoroutineLeak", TestNoGoroutineLeak},
		{"DevicePingIsAnswered", TestDevicePingIsAnswered},
		{"FragmentedMessageIsDelivered", TestFragmentedMessageIsDelivered},
		{"ProtocolErrorClosesWith1002", TestProtocolErrorClosesWith1002},
		{"LongMessageOverManyReads", TestLongMessageOverManyReads},
	} {
		t.Run(test.name, test.run)
	}
}

// Given 200 connected devices, on a plain listener or behind the
// connection caps' listener (as tvsm serve has), when they are idle, then
// no goroutine reads any of them (the hub's pollers do), and each still
// gets its messages and has its acknowledgements read.
func TestConnectionsAreReadByPollers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pollers use epoll, Linux only")
	}
	t.Run("plain", func(t *testing.T) { testReadByPollers(t, nil) })
	t.Run("connection caps", func(t *testing.T) {
		testReadByPollers(t, func(l net.Listener) net.Listener { return connlimit.Wrap(l, connlimit.Options{Max: 1000}) })
	})
}

func testReadByPollers(t *testing.T, wrap func(net.Listener) net.Listener) {
	e := startEnvOn(Options{}, wrap)
	t.Cleanup(e.stop)
	const n = 200
	g0 := runtime.NumGoroutine()
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		conns[i] = e.dial(t, int64(i+1), nil)
	}
	waitFor(t, 5*time.Second, func() bool { return runtime.NumGoroutine()-g0 < n/4 }, "handler goroutines to end")
	if grown := runtime.NumGoroutine() - g0; grown >= n/4 {
		t.Fatalf("%d goroutines more for %d idle connections", grown, n)
	}
	for i, ws := range conns {
		id := int64(i + 1)
		if !e.hub.Send(id, command(t, "1.0."+strings.Repeat("9", i%3+1), `{}`)) {
			t.Fatalf("send to %d refused", id)
		}
		env := readEnvelope(t, ws)
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"ack","id":"`+env.ID+`"}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-e.msgs:
			if got.deviceID != id || got.msg.ID != env.ID || got.msg.Type != MessageAck {
				t.Fatalf("device %d: got %+v", id, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("device %d: ack not read", id)
		}
	}
}

// Given a device that pings, when the ping arrives, then the hub answers
// with a pong carrying its payload.
func TestDevicePingIsAnswered(t *testing.T) {
	e := newEnv(t, Options{})
	ws := e.dial(t, 7, nil)
	pongs := make(chan string, 1)
	ws.SetPongHandler(func(data string) error { pongs <- data; return nil })
	errc := readLoop(ws)
	if err := ws.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-pongs:
		if got != "are you there" {
			t.Fatalf("pong %q", got)
		}
	case err := <-errc:
		t.Fatalf("connection ended: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no pong")
	}
}

// Given a device message in three fragments with a ping between them, when
// the fragments arrive in separate writes, then OnMessage gets the whole
// message once.
func TestFragmentedMessageIsDelivered(t *testing.T) {
	e := newEnv(t, Options{})
	ws := e.dial(t, 8, nil)
	raw := ws.NetConn()
	frames := [][]byte{
		unfinished(wsframe.AppendFrame(nil, wsframe.OpText, []byte(`{"type":"ack",`), true)),
		unfinished(wsframe.AppendFrame(nil, wsframe.OpContinuation, []byte(`"id":"1.`), true)),
		wsframe.AppendFrame(nil, wsframe.OpPing, nil, true),
		wsframe.AppendFrame(nil, wsframe.OpContinuation, []byte(`0.8"}`), true),
	}
	for _, f := range frames {
		if _, err := raw.Write(f); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case got := <-e.msgs:
		if got.deviceID != 8 || got.msg != (DeviceMessage{Type: MessageAck, ID: "1.0.8"}) {
			t.Fatalf("got %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("fragmented message not delivered")
	}
	if s := e.hub.Stats(); s.BadMessages != 0 || !e.hub.Connected(8) {
		t.Fatalf("stats %+v, connected %t", s, e.hub.Connected(8))
	}
}

// unfinished clears a frame's FIN bit.
func unfinished(frame []byte) []byte {
	frame[0] &^= 0x80
	return frame
}

// Given a device that sends a frame no client may send (unmasked), when it
// arrives, then the hub answers with close 1002 naming the fault, and the
// connection ends as a read error.
func TestProtocolErrorClosesWith1002(t *testing.T) {
	e := newEnv(t, Options{})
	ws := e.dial(t, 9, nil)
	if _, err := ws.NetConn().Write(wsframe.AppendFrame(nil, wsframe.OpText, []byte(`{"type":"ack","id":"1"}`), false)); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := ws.ReadMessage()
	ce, ok := err.(*websocket.CloseError)
	if !ok || ce.Code != websocket.CloseProtocolError || !strings.Contains(strings.ToLower(ce.Text), "mask") {
		t.Fatalf("read %v, want close 1002 about the mask", err)
	}
	if r := e.waitClose(t, 9); r != ReasonReadError {
		t.Fatalf("reason %v, want read_error", r)
	}
}

// Given a device that half-writes a frame and goes silent, when PongWait
// passes, then the sweep drops it as timed out, and what the poller kept of
// the half frame goes with it.
func TestHalfFrameThenSilenceTimesOut(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pollers use epoll, Linux only")
	}
	const pongWait = 300 * time.Millisecond
	e := newEnv(t, Options{PongWait: pongWait, PingPeriod: time.Hour, CloseGrace: 50 * time.Millisecond})
	ws := e.dial(t, 10, nil)
	f := wsframe.AppendFrame(nil, wsframe.OpText, []byte(`{"type":"ack","id":"1.0.10"}`), true)
	start := time.Now()
	if _, err := ws.NetConn().Write(f[:9]); err != nil {
		t.Fatal(err)
	}
	if r := e.waitClose(t, 10); r != ReasonTimeout {
		t.Fatalf("reason %v, want timeout", r)
	}
	if took := time.Since(start); took < pongWait {
		t.Fatalf("dropped after %v, before PongWait", took)
	}
}

// Given a device message of 40 KB, more than a poller reads at once, when
// it arrives, then it is read whole over several reads and delivered.
func TestLongMessageOverManyReads(t *testing.T) {
	e := newEnv(t, Options{ReadLimit: 64 << 10})
	ws := e.dial(t, 11, nil)
	msg := `{"type":"ack","id":"1.0.11","pad":"` + strings.Repeat("x", 40<<10) + `"}`
	if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-e.msgs:
		if got.deviceID != 11 || got.msg != (DeviceMessage{Type: MessageAck, ID: "1.0.11"}) {
			t.Fatalf("got %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("long message not delivered")
	}
}

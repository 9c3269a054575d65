package wsgateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/testkit/testutil"
)

func TestSlowConsumerIsClosedAndSendNeverBlocks(t *testing.T) {
	e := newEnv(t, Options{QueueSize: 4, WriteWait: 300 * time.Millisecond, CloseGrace: 100 * time.Millisecond})
	d := testutil.SmallBufferDialer()
	e.dial(t, 5, d) // never read from
	big := command(t, "big", `{"text":"`+strings.Repeat("x", 64<<10)+`"}`)
	var slowest time.Duration
	closed := false
	for i := 0; i < 5000 && !closed; i++ {
		start := time.Now()
		closed = !e.hub.Send(5, big)
		slowest = max(slowest, time.Since(start))
	}
	if !closed {
		t.Fatal("stuck consumer was never closed")
	}
	if slowest > 50*time.Millisecond {
		t.Fatalf("Send blocked for %v", slowest)
	}
	if e.hub.Connected(5) {
		t.Fatal("slow consumer still registered")
	}
	if r := e.waitClose(t, 5); r != ReasonSlowConsumer {
		t.Fatalf("reason %v, want slow_consumer", r)
	}
	if s := e.hub.Stats(); s.SlowConsumers != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// Given a device that stops reading, when one message too big for the
// socket's buffers is sent to it (its queue far from full, so only the
// write is stuck), then the hub's sweep ends that write within 5/4 of
// WriteWait: the connection closes with write_error and leaves the hub.
func TestStuckWriteIsEndedByTheSweep(t *testing.T) {
	const writeWait = 300 * time.Millisecond
	e := newEnv(t, Options{QueueSize: 64, WriteWait: writeWait, CloseGrace: 100 * time.Millisecond})
	d := testutil.SmallBufferDialer()
	e.dial(t, 7, d) // never read from
	huge := command(t, "huge", `{"text":"`+strings.Repeat("x", 32<<20)+`"}`)
	sent := time.Now()
	if !e.hub.Send(7, huge) {
		t.Fatal("the connection refused the message")
	}
	if r := e.waitClose(t, 7); r != ReasonWriteError {
		t.Fatalf("reason %v, want write_error", r)
	}
	// The sweep runs every WriteWait/4; the close frame and the OnClose
	// come after it. Ten WriteWaits leave room for a busy machine while
	// still telling a bounded write from the test's own timeout.
	if took := time.Since(sent); took < writeWait || took > 10*writeWait {
		t.Errorf("the stuck write ended after %v; WriteWait is %v", took, writeWait)
	}
	if e.hub.Connected(7) {
		t.Error("the connection is still registered")
	}
}

// readLoop drains ws in the background (so control frames are handled) and
// returns a channel receiving the first read error.
func readLoop(ws *websocket.Conn) <-chan error {
	errc := make(chan error, 1)
	go func() {
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				errc <- err
				return
			}
		}
	}()
	return errc
}

func TestPingPong(t *testing.T) {
	const pongWait = 200 * time.Millisecond
	opts := Options{PongWait: pongWait, PingPeriod: 80 * time.Millisecond, CloseGrace: 100 * time.Millisecond}

	t.Run("answering client stays connected", func(t *testing.T) {
		e := newEnv(t, opts)
		ws := e.dial(t, 1, nil)
		errc := readLoop(ws)
		time.Sleep(3 * pongWait)
		if !e.hub.Connected(1) {
			t.Fatalf("idle but answering client dropped: %v", <-errc)
		}
		select {
		case r := <-e.closes:
			t.Fatalf("unexpected close %+v", r)
		default:
		}
	})

	t.Run("silent client is dropped", func(t *testing.T) {
		e := newEnv(t, opts)
		start := time.Now()
		ws := e.dial(t, 2, nil)
		ws.SetPingHandler(func(string) error { return nil })
		readLoop(ws)
		if r := e.waitClose(t, 2); r != ReasonTimeout {
			t.Fatalf("reason %v, want timeout", r)
		}
		if took := time.Since(start); took < pongWait {
			t.Fatalf("dropped after %v, before pongWait", took)
		}
		if s := e.hub.Stats(); s.Timeouts != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// A device that answers no ping but sends messages stays connected while
// it sends; once it stops, it is dropped, not before 9/10 of PongWait
// (messages move the read deadline in steps of a tenth of it).
func TestMessagesKeepAConnectionAlive(t *testing.T) {
	const pongWait = 2 * time.Second
	e := newEnv(t, Options{PongWait: pongWait, PingPeriod: time.Second, CloseGrace: 100 * time.Millisecond})
	ws := e.dial(t, 4, nil)
	ws.SetPingHandler(func(string) error { return nil })
	readLoop(ws)
	var last time.Time
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		last = time.Now()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"ack","id":"1.0.4"}`)); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	if !e.hub.Connected(4) {
		t.Fatal("a device sending messages every 100 ms was dropped")
	}
	if r := e.waitClose(t, 4); r != ReasonTimeout {
		t.Fatalf("reason %v, want timeout", r)
	}
	if silent := time.Since(last); silent < pongWait*9/10 {
		t.Fatalf("dropped %v after its last message, before 9/10 of PongWait", silent)
	}
}

func TestReadLimitClosesConnection(t *testing.T) {
	e := newEnv(t, Options{ReadLimit: 4 << 10})
	// One write syscall for the whole frame: the server closes as soon as it
	// has read the frame header, and a second write would meet a reset.
	ws := e.dial(t, 3, &websocket.Dialer{HandshakeTimeout: 5 * time.Second, WriteBufferSize: 16 << 10})
	big := `{"type":"ack","id":"` + strings.Repeat("x", 5<<10) + `"}`
	if err := ws.WriteMessage(websocket.TextMessage, []byte(big)); err != nil {
		t.Fatal(err)
	}
	if code := readCloseCode(t, ws); code != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d, want %d", code, websocket.CloseMessageTooBig)
	}
	if r := e.waitClose(t, 3); r != ReasonMessageTooBig {
		t.Fatalf("reason %v, want message_too_big", r)
	}
}

func TestBadMessagesAreCountedThenPolicyClose(t *testing.T) {
	e := newEnv(t, Options{MaxBadMessages: 3})
	ws := e.dial(t, 4, nil)
	send := func(s string) {
		t.Helper()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	send(`garbage`)
	send(`{"type":"nope","id":"x"}`)
	send(`{"type":"ack","id":"ok"}`)
	select {
	case got := <-e.msgs:
		if got.msg.ID != "ok" {
			t.Fatalf("got %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("valid message after bad ones not delivered")
	}
	if s := e.hub.Stats(); s.BadMessages != 2 || !e.hub.Connected(4) {
		t.Fatalf("stats %+v connected %v", s, e.hub.Connected(4))
	}
	send(`{"type":"ack"}`)
	if code := readCloseCode(t, ws); code != websocket.ClosePolicyViolation {
		t.Fatalf("close code %d, want %d", code, websocket.ClosePolicyViolation)
	}
	if r := e.waitClose(t, 4); r != ReasonBadMessages {
		t.Fatalf("reason %v, want bad_messages", r)
	}
}

func TestClientCloseIsReported(t *testing.T) {
	e := newEnv(t, Options{})
	ws := e.dial(t, 6, nil)
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")
	if err := ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if code := readCloseCode(t, ws); code != websocket.CloseNormalClosure {
		t.Fatalf("echoed close code %d", code)
	}
	if r := e.waitClose(t, 6); r != ReasonClientClosed {
		t.Fatalf("reason %v, want client_closed", r)
	}
	if e.hub.Connected(6) {
		t.Fatal("still registered")
	}
}

// Given a device that stops reading and a write to it stuck on full
// socket buffers, when the hub shuts down (its sweep stops then), the
// close frame waits at most WriteWait for that write: the socket is closed
// under it, and Shutdown returns.
func TestShutdownEndsAStuckWrite(t *testing.T) {
	const writeWait = 300 * time.Millisecond
	e := newEnv(t, Options{QueueSize: 64, WriteWait: writeWait, CloseGrace: 100 * time.Millisecond})
	e.dial(t, 8, testutil.SmallBufferDialer()) // never read from
	huge := command(t, "huge", `{"text":"`+strings.Repeat("x", 32<<20)+`"}`)
	if !e.hub.Send(8, huge) {
		t.Fatal("the connection refused the message")
	}
	c, _ := e.hub.Lookup(8)
	waitFor(t, 5*time.Second, func() bool { return c.writeStarted.Load() != 0 }, "the write under way")
	ctx, cancel := context.WithTimeout(context.Background(), 20*writeWait)
	defer cancel()
	start := time.Now()
	if err := e.hub.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(start))
	}
	if r := e.waitClose(t, 8); r != ReasonShutdown {
		t.Fatalf("reason %v, want shutdown", r)
	}
}

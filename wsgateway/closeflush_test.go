package wsgateway

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestCloseAfterFlushWritesQueuedMessagesThenCloses(t *testing.T) {
	e := newEnv(t, Options{CloseGrace: 100 * time.Millisecond})
	ws := e.dial(t, 7, nil)
	for _, id := range []string{"a", "b"} {
		if !e.hub.Send(7, command(t, id, `{"command":"update"}`)) {
			t.Fatalf("send %s refused", id)
		}
	}
	if !e.hub.CloseAfterFlush(7, ReasonRevoked) {
		t.Fatal("CloseAfterFlush refused a connected device")
	}
	e.hub.Send(7, command(t, "after", `{}`)) // queued behind the marker: never written
	for _, want := range []string{"a", "b"} {
		if got := readEnvelope(t, ws).ID; got != want {
			t.Fatalf("read %q, want %q", got, want)
		}
	}
	if code := readCloseCode(t, ws); code != CloseRevoked {
		t.Fatalf("close code %d, want %d", code, CloseRevoked)
	}
	end := e.waitEnded(t, 7)
	if end.reason != ReasonRevoked || end.code != CloseRevoked {
		t.Fatalf("ended %+v", end)
	}
	if e.hub.CloseAfterFlush(7, ReasonRevoked) {
		t.Fatal("CloseAfterFlush on a gone device reported true")
	}
}

func TestCloseCodeOfClientClose(t *testing.T) {
	e := newEnv(t, Options{CloseGrace: 100 * time.Millisecond})
	ws := e.dial(t, 8, nil)
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")
	if err := ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if end := e.waitEnded(t, 8); end.reason != ReasonClientClosed || end.code != websocket.CloseNormalClosure {
		t.Fatalf("ended %+v", end)
	}
}

func TestCloseCodeWithoutFrame(t *testing.T) {
	e := newEnv(t, Options{CloseGrace: 100 * time.Millisecond})
	ws := e.dial(t, 9, nil)
	_ = ws.NetConn().Close()
	if end := e.waitEnded(t, 9); end.code != websocket.CloseAbnormalClosure || end.reason != ReasonReadError {
		t.Fatalf("ended %+v, want read_error with code 1006", end)
	}
}

func TestConnSeqIsUnique(t *testing.T) {
	e := newEnv(t, Options{})
	e.dial(t, 1, nil)
	first, _ := e.hub.Lookup(1)
	e.dial(t, 1, nil) // replaces the first
	waitFor(t, 5*time.Second, func() bool { c, ok := e.hub.Lookup(1); return ok && c != first }, "replacement")
	second, _ := e.hub.Lookup(1)
	if first.Seq() == 0 || second.Seq() <= first.Seq() {
		t.Fatalf("seqs %d then %d", first.Seq(), second.Seq())
	}
	if first.CloseCode() != CloseReplaced && e.waitEnded(t, 1).code != CloseReplaced {
		t.Fatal("replaced connection did not end with 4001")
	}
}

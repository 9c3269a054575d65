package wsgateway

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/wsframe"
)

// newTLSEnv is newEnv behind a TLS server: the hub's connections are then
// not TCP sockets it may read with read(2), and take the reader's other
// path (net.Conn.Read).
func newTLSEnv(t *testing.T, opts Options) (*testEnv, *websocket.Dialer) {
	t.Helper()
	e := startEnv(opts)
	e.srv.Close()
	e.srv = httptest.NewTLSServer(e.srv.Config.Handler)
	e.url = "wss" + strings.TrimPrefix(e.srv.URL, "https") + "/ws?device="
	t.Cleanup(e.stop)
	tlsConf := e.srv.Client().Transport.(*http.Transport).TLSClientConfig
	return e, &websocket.Dialer{HandshakeTimeout: 5 * time.Second, TLSClientConfig: tlsConf.Clone()}
}

// transports runs f on both of the reader's paths: a TCP socket read with
// read(2) by a poller, and a TLS connection read through its Read.
func transports(t *testing.T, opts Options, f func(t *testing.T, e *testEnv, d *websocket.Dialer)) {
	t.Run("tcp", func(t *testing.T) { f(t, newEnv(t, opts), nil) })
	t.Run("tls", func(t *testing.T) {
		e, d := newTLSEnv(t, opts)
		f(t, e, d)
	})
}

// rawPath reports whether a poller reads device id's socket with read(2).
func rawPath(t *testing.T, e *testEnv, id int64) bool {
	t.Helper()
	c, ok := e.hub.Lookup(id)
	if !ok {
		t.Fatalf("device %d not connected", id)
	}
	return c.polled
}

// wantMessages waits for the device messages OnMessage gets, in order.
func wantMessages(t *testing.T, e *testEnv, ids ...string) {
	t.Helper()
	for _, want := range ids {
		select {
		case m := <-e.msgs:
			if m.msg.ID != want || m.msg.Type != MessageAck {
				t.Fatalf("got %+v, want the ack of %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no message %q", want)
		}
	}
}

func ack(id string) []byte { return []byte(`{"type":"ack","id":"` + id + `"}`) }

func TestBothTransportsCarryMessagesPingsAndCloses(t *testing.T) {
	transports(t, Options{CloseGrace: 100 * time.Millisecond}, func(t *testing.T, e *testEnv, d *websocket.Dialer) {
		ws := e.dial(t, 1, d)
		if got, want := rawPath(t, e, 1), d == nil; got != want {
			t.Fatalf("read with read(2): %t, want %t", got, want)
		}
		// Server to device: queued messages arrive whole and in order.
		for i := range 50 {
			if !e.hub.Send(1, command(t, strconv.Itoa(i), `{"command":"user_message"}`)) {
				t.Fatalf("send %d refused", i)
			}
		}
		for i := range 50 {
			if got := readEnvelope(t, ws).ID; got != strconv.Itoa(i) {
				t.Fatalf("message %d: id %q", i, got)
			}
		}
		// Device to server: a ping is answered with its payload.
		pong := make(chan string, 1)
		ws.SetPongHandler(func(s string) error { pong <- s; return nil })
		if err := ws.WriteControl(websocket.PingMessage, []byte("hello"), time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, ack("a")); err != nil {
			t.Fatal(err)
		}
		go func() { _, _, _ = ws.ReadMessage() }() // runs the pong handler
		select {
		case s := <-pong:
			if s != "hello" {
				t.Fatalf("pong %q", s)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no pong")
		}
		wantMessages(t, e, "a")
		// The device's close frame is answered and reported.
		if err := ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4100, "bye"), time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if end := e.waitEnded(t, 1); end.reason != ReasonClientClosed || end.code != 4100 {
			t.Fatalf("ended %+v, want client_closed with the device's 4100", end)
		}
	})
}

// Bytes come as the network brings them: a frame over several reads, and
// several frames in one.
func TestFramesSplitOverReadsAndJoinedInOne(t *testing.T) {
	transports(t, Options{}, func(t *testing.T, e *testEnv, d *websocket.Dialer) {
		ws := e.dial(t, 2, d)
		nc := ws.NetConn()
		slow := wsframe.AppendFrame(nil, wsframe.OpText, ack("slow"), true)
		for i := range slow {
			if _, err := nc.Write(slow[i : i+1]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		wantMessages(t, e, "slow")
		var burst []byte
		for _, id := range []string{"b1", "b2", "b3"} {
			burst = wsframe.AppendFrame(burst, wsframe.OpText, ack(id), true)
		}
		// A fragmented message: its parts are joined.
		burst = append(burst, 0x01, 0x80|10) // text, not final, masked, 10 bytes
		burst = append(burst, 0, 0, 0, 0)
		burst = append(burst, ack("frag")[:10]...)
		rest := ack("frag")[10:]
		burst = append(burst, 0x80, 0x80|byte(len(rest)), 0, 0, 0, 0) // final continuation
		burst = append(burst, rest...)
		if _, err := nc.Write(burst); err != nil {
			t.Fatal(err)
		}
		wantMessages(t, e, "b1", "b2", "b3", "frag")
		if !e.hub.Connected(2) {
			t.Fatal("dropped after good frames")
		}
	})
}

// A client's frame must be masked (RFC 6455 section 5.1): an unmasked one
// is answered with 1002 and ends the connection as a read error.
func TestUnmaskedFrameIsAProtocolError(t *testing.T) {
	transports(t, Options{CloseGrace: 100 * time.Millisecond}, func(t *testing.T, e *testEnv, d *websocket.Dialer) {
		ws := e.dial(t, 3, d)
		if _, err := ws.NetConn().Write(wsframe.AppendFrame(nil, wsframe.OpText, ack("x"), false)); err != nil {
			t.Fatal(err)
		}
		if code := readCloseCode(t, ws); code != websocket.CloseProtocolError {
			t.Fatalf("close code %d, want 1002", code)
		}
		if end := e.waitEnded(t, 3); end.reason != ReasonReadError {
			t.Fatalf("ended %+v, want read_error", end)
		}
		select {
		case m := <-e.msgs:
			t.Fatalf("the unmasked frame reached OnMessage: %+v", m)
		default:
		}
	})
}

// A device message over ReadLimit on the TLS path too (the TCP path is
// TestReadLimitClosesConnection).
func TestReadLimitOverTLS(t *testing.T) {
	e, d := newTLSEnv(t, Options{ReadLimit: 1 << 10})
	d.WriteBufferSize = 16 << 10
	ws := e.dial(t, 4, d)
	if err := ws.WriteMessage(websocket.TextMessage, ack(strings.Repeat("y", 2<<10))); err != nil {
		t.Fatal(err)
	}
	if code := readCloseCode(t, ws); code != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d, want 1009", code)
	}
	if r := e.waitClose(t, 4); r != ReasonMessageTooBig {
		t.Fatalf("reason %v", r)
	}
}

// discardConn is a socket that takes every write and has nothing to read.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)      { return len(b), nil }
func (discardConn) SetReadDeadline(time.Time) error  { return nil }
func (discardConn) LocalAddr() net.Addr              { return &net.UnixAddr{Net: "unix"} }
func (discardConn) Close() error                     { return nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzFrameReader: whatever bytes a device sends, the reader neither
// panics nor hands OnMessage anything but a valid device message, and
// reading ends at the first frame it refuses.
func FuzzFrameReader(f *testing.F) {
	f.Add(wsframe.AppendFrame(nil, wsframe.OpText, ack("1.0.2"), true))
	f.Add(append(wsframe.AppendFrame(nil, wsframe.OpPing, []byte("p"), true), wsframe.AppendFrame(nil, wsframe.OpText, []byte(`{"id":"7","type":"confirm"}`), true)...))
	f.Add(wsframe.AppendFrame(nil, wsframe.OpBinary, []byte("bin"), true))
	f.Add(wsframe.AppendFrame(nil, wsframe.OpClose, []byte{0x03, 0xe8, 'o', 'k'}, true))
	f.Add([]byte{0x81, 0xfe, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		var got []DeviceMessage
		h := NewHub(Options{ReadLimit: 512, MaxBadMessages: -1, OnMessage: func(_ *Conn, m DeviceMessage) { got = append(got, m) }})
		c := newConn(h, discardConn{}, Identity{Device: 1})
		r := &frameReader{c: c, dec: wsframe.Decoder{Masked: true, Limit: 512}}
		r.dec.Feed(stream)
		err := r.decode()
		for _, m := range got {
			if (m.Type != MessageAck && m.Type != MessageConfirm) || m.ID == "" || len(m.ID) > maxIDLen {
				t.Fatalf("OnMessage got %+v", m)
			}
		}
		var fe *wsframe.Error
		if err != nil && err != errPeerClosed && !errors.As(err, &fe) {
			t.Fatalf("reading ended with %v (%T)", err, err)
		}
	})
}

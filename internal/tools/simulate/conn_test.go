package simulate

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/wsframe"
)

// echoHandler records the messages of a session and answers each with
// "got:" and the message.
type echoHandler struct {
	mu  sync.Mutex
	got []string
}

func (h *echoHandler) message(data []byte, out replies) error {
	h.mu.Lock()
	h.got = append(h.got, string(data))
	h.mu.Unlock()
	return out.send(append([]byte("got:"), data...))
}

// readers are the readers that run here.
func readers() []string {
	if epollSupported {
		return []string{ReaderEpoll, ReaderGoroutine}
	}
	return []string{ReaderGoroutine}
}

// newTestSim makes a one-device simulation of url with reader, its
// poller started for the epoll reader; stop stops the poller.
func newTestSim(t *testing.T, reader, url string) (sim *Sim, stop func()) {
	t.Helper()
	sim, err := New(Options{URL: url, Devices: 1, CentrifugoChannel: "test", Reader: reader})
	if err != nil {
		t.Fatal(err)
	}
	if reader != ReaderEpoll {
		return sim, func() {}
	}
	if sim.poller, err = newPoller(); err != nil {
		t.Fatal(err)
	}
	return sim, sim.poller.stop
}

// runSession runs s on a simulation with reader, as a device does.
func runSession(t *testing.T, reader, url string, s session) error {
	t.Helper()
	sim, stop := newTestSim(t, reader, url)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.url = "ws" + strings.TrimPrefix(url, "http") + "/ws"
	_, err := sim.run(ctx, s)
	return err
}

// Given a websocket server (gorilla's, which refuses unmasked client
// frames) that writes a ping, a message, a message in fragments (its write
// buffer is smaller than the message), then closes with code 4003 once it
// has read the replies, when a device's session reads it, then the handler
// gets both messages whole, the server gets the replies and a pong, and
// the session ends with the close code, with either reader.
func TestSessionReadsMessagesPingsAndClose(t *testing.T) {
	for _, reader := range readers() {
		t.Run(reader, func(t *testing.T) {
			long := strings.Repeat("0123456789", 30)
			serverSaw := make(chan []string, 1)
			up := websocket.Upgrader{WriteBufferSize: 64}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ws, err := up.Upgrade(w, r, nil)
				if err != nil {
					return
				}
				defer ws.Close()
				var saw []string
				pong := make(chan string, 1)
				ws.SetPongHandler(func(data string) error { pong <- "pong:" + data; return nil })
				_ = ws.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(5*time.Second))
				_ = ws.WriteMessage(websocket.TextMessage, []byte("first"))
				_ = ws.WriteMessage(websocket.TextMessage, []byte(long))
				for len(saw) < 2 {
					_, data, err := ws.ReadMessage() // pongs are handled inside
					if err != nil {
						saw = append(saw, "error: "+err.Error())
						break
					}
					saw = append(saw, string(data))
				}
				// The pong, written before the replies, was read with them.
				select {
				case p := <-pong:
					saw = append(saw, p)
				default:
					saw = append(saw, "no pong")
				}
				_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4003, "signed out"), time.Now().Add(5*time.Second))
				serverSaw <- saw
				_, _, _ = ws.ReadMessage() // the echoed close
			}))
			defer srv.Close()
			h := &echoHandler{}
			err := runSession(t, reader, srv.URL, session{h: h})
			if closeCode(err) != 4003 {
				t.Fatalf("session ended with %v, want close 4003", err)
			}
			if want := []string{"first", long}; strings.Join(h.got, "|") != strings.Join(want, "|") {
				t.Fatalf("handler got %q", h.got)
			}
			if saw, want := <-serverSaw, []string{"got:first", "got:" + long, "pong:are you there"}; strings.Join(saw, "|") != strings.Join(want, "|") {
				t.Fatalf("server saw %q, want %q", saw, want)
			}
		})
	}
}

// Given a server that writes its first message in the same write as its
// handshake answer, when a device's session opens, then the message is
// not lost in the handshake's buffer: the handler gets it and the server
// reads the reply, with either reader.
func TestSessionKeepsAMessageSentWithTheHandshake(t *testing.T) {
	for _, reader := range readers() {
		t.Run(reader, func(t *testing.T) {
			reply := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, rw, err := acceptWebsocket(w, r, serverFrame(wsframe.OpText, []byte("hello")))
				if err != nil {
					return
				}
				defer conn.Close()
				msg, err := readClientFrame(rw.Reader)
				if err != nil {
					msg = "error: " + err.Error()
				}
				reply <- msg
				_, _ = conn.Write(serverFrame(wsframe.OpClose, []byte{0x03, 0xe8})) // 1000
			}))
			defer srv.Close()
			h := &echoHandler{}
			err := runSession(t, reader, srv.URL, session{h: h})
			if closeCode(err) != 1000 {
				t.Fatalf("session ended with %v, want close 1000", err)
			}
			if strings.Join(h.got, "|") != "hello" {
				t.Fatalf("handler got %q", h.got)
			}
			if got := <-reply; got != "got:hello" {
				t.Fatalf("server read %q", got)
			}
		})
	}
}

// serverFrame is a final frame as a server writes it: unmasked.
func serverFrame(op byte, payload []byte) []byte {
	return wsframe.AppendFrame(nil, op, payload, false)
}

// acceptWebsocket answers r's websocket handshake by hand on its hijacked
// connection, then writes first (frames the tests send with the answer).
func acceptWebsocket(w http.ResponseWriter, r *http.Request, first []byte) (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	answer := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n"
	if _, err := conn.Write(append([]byte(answer), first...)); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, rw, nil
}

// readClientFrame reads one short masked text frame, as a client writes it.
func readClientFrame(r *bufio.Reader) (string, error) {
	var head [6]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return "", err
	}
	if head[0] != 0x81 || head[1]&0x80 == 0 || head[1]&0x7f > 125 {
		return "", fmt.Errorf("frame head %x: not a short masked text frame", head[:2])
	}
	body := make([]byte, head[1]&0x7f)
	if _, err := io.ReadFull(r, body); err != nil {
		return "", err
	}
	for i := range body {
		body[i] ^= head[2+i&3]
	}
	return string(body), nil
}

// Given a session whose server answers nothing, when its handshake time
// passes, or its context ends, then the session ends, with either reader.
func TestSessionEndsOnDeadlineAndContext(t *testing.T) {
	for _, reader := range readers() {
		t.Run(reader, func(t *testing.T) {
			up := websocket.Upgrader{}
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ws, err := up.Upgrade(w, r, nil)
				if err != nil {
					return
				}
				defer ws.Close()
				<-release
			}))
			defer srv.Close()
			defer close(release)
			if err := runSession(t, reader, srv.URL, session{h: &echoHandler{}, handshakeTimeout: 50 * time.Millisecond}); err == nil {
				t.Fatal("a session past its handshake time ended without an error")
			}
			sim, stop := newTestSim(t, reader, srv.URL)
			defer stop()
			ctx, cancel := context.WithCancel(context.Background())
			ended := make(chan error, 1)
			connected := make(chan struct{})
			go func() {
				_, err := sim.run(ctx, session{url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws", h: &echoHandler{},
					connected: func() { close(connected) }})
				ended <- err
			}()
			<-connected
			cancel()
			if err := <-ended; err == nil {
				t.Fatal("a session whose context ended returned no error")
			}
		})
	}
}

var _ net.Conn = (*handshakeConn)(nil)

// Given a server that writes a message and hangs up at once, without a
// close frame (the message and the end of the stream can arrive
// together), when a device's session reads it, then the handler gets the
// message and the session ends, with either reader: the epoll reader's
// sockets are edge-triggered, so the end must be read in the same wakeup
// as the message when both are in.
func TestSessionEndsWhenTheServerHangsUpAfterAMessage(t *testing.T) {
	for _, reader := range readers() {
		t.Run(reader, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, _, err := acceptWebsocket(w, r, nil)
				if err != nil {
					return
				}
				defer conn.Close()
				time.Sleep(50 * time.Millisecond) // the session is being served by then
				_, _ = conn.Write(serverFrame(wsframe.OpText, []byte("last words")))
				_ = conn.(*net.TCPConn).CloseWrite()
				_, _ = io.Copy(io.Discard, conn) // the reply, then the device's end
			}))
			defer srv.Close()
			h := &echoHandler{}
			sim, stop := newTestSim(t, reader, srv.URL)
			defer stop()
			// No deadline of the session's own: shut down from outside, a
			// session also ends with the end of the stream.
			err := runUntilEnd(t, sim, srv.URL, h, "the session did not end when the server hung up")
			// gorilla names a stream that ends without a close frame 1006.
			if code := closeCode(err); err == nil || code != 0 && code != websocket.CloseAbnormalClosure {
				t.Fatalf("session ended with %v, want the end of the stream", err)
			}
			if strings.Join(h.got, "|") != "last words" {
				t.Fatalf("handler got %q", h.got)
			}
		})
	}
}

// Given a server that sends a frame a server must not send (masked, of an
// unknown opcode, or, to the epoll reader, a message over maxMessage) after
// a message, and then waits, when a device's session reads it, then the
// handler gets the message only and the session ends at once with an
// error, not a close code, with either reader. (gorilla's reader has no
// limit of its own.)
func TestSessionEndsOnAFrameAServerMustNotSend(t *testing.T) {
	masked := serverFrame(wsframe.OpText, []byte("hi"))
	masked = append([]byte{masked[0], masked[1] | 0x80, 1, 2, 3, 4}, masked[2:]...)
	overLimit := binary.BigEndian.AppendUint64([]byte{0x80 | wsframe.OpText, 127}, maxMessage+1)
	for _, reader := range readers() {
		for name, frame := range map[string][]byte{
			"masked":         masked,
			"unknown opcode": serverFrame(0x3, nil),
			"over the limit": overLimit,
		} {
			if name == "over the limit" && reader != ReaderEpoll {
				continue
			}
			t.Run(reader+"/"+name, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					conn, rw, err := acceptWebsocket(w, r, serverFrame(wsframe.OpText, []byte("hello")))
					if err != nil {
						return
					}
					defer conn.Close()
					_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
					// Once the reply is in, the session is being served.
					if _, err := readClientFrame(rw.Reader); err != nil {
						return
					}
					_, _ = conn.Write(frame)
					_, _ = io.Copy(io.Discard, rw) // until the device hangs up
				}))
				defer srv.Close()
				h := &echoHandler{}
				sim, stop := newTestSim(t, reader, srv.URL)
				defer stop()
				err := runUntilEnd(t, sim, srv.URL, h, "the session took the frame and went on")
				if err == nil || closeCode(err) != 0 {
					t.Fatalf("session ended with %v, want an error of the frame", err)
				}
				if strings.Join(h.got, "|") != "hello" {
					t.Fatalf("handler got %q", h.got)
				}
			})
		}
	}
}

// Given the payload of a server's close frame as the epoll reader gets it,
// with a code and a reason or empty, when it ends the session, then
// closeCode reads its code: the one given, or 1005 for none.
func TestCloseFrameErrorCarriesTheCode(t *testing.T) {
	err := closeFrameError(append(binary.BigEndian.AppendUint16(nil, 4003), "bye"...))
	var ce *closeError
	if !errors.As(err, &ce) || ce.code != 4003 || ce.reason != "bye" || closeCode(err) != 4003 {
		t.Fatalf("close frame read as %v", err)
	}
	if err := closeFrameError(nil); closeCode(err) != 1005 {
		t.Fatalf("empty close frame read as %v", err)
	}
}

// runUntilEnd runs a session of sim against the server at base until it
// ends by itself, and returns how; after 10 s it is stopped from outside
// and the test fails with stuck.
func runUntilEnd(t *testing.T, sim *Sim, base string, h handler, stuck string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		_, err := sim.run(ctx, session{url: "ws" + strings.TrimPrefix(base, "http") + "/ws", h: h})
		ended <- err
	}()
	select {
	case err := <-ended:
		return err
	case <-time.After(10 * time.Second):
		cancel()
		<-ended
		t.Fatal(stuck)
		return nil
	}
}

package simulate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"tvsm/internal/platform/wsframe"
)

// FuzzParseCommand: the simulator's hand parse of a command message agrees
// with encoding/json wherever it takes the message.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		`{"type":"command","id":"12.0.7","command":{"command":"user_message","type":"confirm","text":"hi"}}`,
		`{"type":"command","id":"12.0.7","command":{}}`,
		`{"type":"command","id":"a\"b","command":{}}`,
		`{"type":"command","id":"x","command":{},"id":"y"}`,
		`{"id":"3.0.1","type":"command","command":{"command":"reboot"}}`,
		`{"type":"other","id":"1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, command, ok := parseCommand(data)
		var m serverMessage
		jsonOK := json.Unmarshal(data, &m) == nil && m.Type == "command"
		if !ok {
			if jsonOK {
				t.Fatalf("parseCommand refused %q, which encoding/json reads as a command", data)
			}
			return
		}
		if !jsonOK {
			return // a form only the hand parse takes: not one the server writes
		}
		if string(id) != m.ID {
			t.Fatalf("parseCommand(%q): id %q, encoding/json %q", data, id, m.ID)
		}
		if wantsConfirm(command) != wantsConfirm(m.Command) {
			t.Fatalf("parseCommand(%q): confirm %v, encoding/json's command %v", data, wantsConfirm(command), wantsConfirm(m.Command))
		}
	})
}

// Given devices connected and idle through the epoll reader, when each
// receives its first command (in a broadcast every message is a
// connection's first), then the simulator acknowledges them all without
// allocating per message: an allocation per message brings the garbage
// collector, and its scan of every device's stack, into the measured
// window of a broadcast.
func TestEpollDeviceAcknowledgesWithoutAllocating(t *testing.T) {
	if !epollSupported {
		t.Skip("the epoll reader runs on Linux only")
	}
	const devices = 200
	conns := make(chan net.Conn, devices)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := acceptWebsocket(w, r, nil); err == nil {
			conns <- conn
		}
	}))
	defer srv.Close()
	sim, err := New(Options{URL: srv.URL, Devices: devices, Provider: 1, StopAfterCommands: 1, Reader: ReaderEpoll})
	if err != nil {
		t.Fatal(err)
	}
	if sim.poller, err = newPoller(); err != nil {
		t.Fatal(err)
	}
	defer sim.poller.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sessions sync.WaitGroup
	defer sessions.Wait()
	defer cancel()
	for range devices {
		sessions.Go(func() {
			_, _ = sim.run(ctx, session{url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws", h: newDeviceHandler(sim)})
		})
	}
	server := make([]net.Conn, devices)
	for i := range server {
		server[i] = <-conns
		defer server[i].Close()
	}
	frames := make([][]byte, devices)
	for i := range frames {
		frames[i] = serverFrame(wsframe.OpText, fmt.Appendf(nil,
			`{"type":"command","id":"7.%d.42","command":{"command":"user_message","type":"notify","text":"hello"}}`, i))
	}
	// Each acknowledgement is read whole into a buffer made beforehand, and
	// checked after the count.
	acks := make([][]byte, devices)
	for i := range acks {
		want := len(fmt.Sprintf(`{"type":"ack","id":"7.%d.42"}`, i))
		acks[i] = make([]byte, 6+want) // a short masked frame: 2 bytes, a mask of 4
	}
	// Wait until the poller holds every socket: a frame sent earlier would
	// be read by the handshake, before the poller's buffers exist.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		sim.poller.mu.Lock()
		n := len(sim.poller.conns)
		sim.poller.mu.Unlock()
		if n == devices {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the poller holds %d of %d sockets", n, devices)
		}
	}
	for _, c := range server {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i, c := range server {
		if _, err := c.Write(frames[i]); err != nil {
			t.Fatal(err)
		}
	}
	var readErr error
	for i, c := range server {
		if _, err := io.ReadFull(c, acks[i]); err != nil && readErr == nil {
			readErr = err
		}
	}
	runtime.ReadMemStats(&after)
	if readErr != nil {
		t.Fatalf("acknowledgements not read: %v", readErr)
	}
	for i, ack := range acks {
		msg, err := readClientFrame(bufio.NewReader(bytes.NewReader(ack)))
		if want := fmt.Sprintf(`{"type":"ack","id":"7.%d.42"}`, i); msg != want || err != nil {
			t.Fatalf("device %d acknowledged %q (%v), want %q", i, msg, err, want)
		}
	}
	// A few allocations of the runtime's own (a pool refilled after a
	// collection, a timer) are tolerated; one per message is not. Under
	// the race detector sync.Pool drops one in four of the values put back,
	// so encoding/json makes its validity scanner (two allocations) again
	// for about one message in four: then up to one a message is tolerated.
	allowed := uint64(devices / 10)
	if raceDetector {
		allowed += devices
	}
	if allocs := after.Mallocs - before.Mallocs; allocs > allowed {
		t.Fatalf("%d allocations for %d first commands (%.2f a message)", allocs, devices, float64(allocs)/devices)
	}
}

// recordedReplies keeps what a handler sends.
type recordedReplies struct{ sent []string }

func (r *recordedReplies) send(msg []byte) error { r.sent = append(r.sent, string(msg)); return nil }
func (r *recordedReplies) settled()              {}

// A device acknowledges every command and confirms one that asks for it;
// with NoReceipts it sends neither, and still counts the command.
func TestReceiptsAndNoReceipts(t *testing.T) {
	confirm := []byte(`{"type":"command","id":"12.0.7","command":{"command":"user_message","type":"confirm","text":"hi"}}`)
	for _, noReceipts := range []bool{false, true} {
		sim, err := New(Options{URL: "http://127.0.0.1:1", Devices: 1, Provider: 1, NoReceipts: noReceipts})
		if err != nil {
			t.Fatal(err)
		}
		out := &recordedReplies{}
		if err := newDeviceHandler(sim).message(confirm, out); err != nil {
			t.Fatal(err)
		}
		want := []string{`{"type":"ack","id":"12.0.7"}`, `{"type":"confirm","id":"12.0.7"}`}
		if noReceipts {
			want = nil
		}
		if strings.Join(out.sent, "|") != strings.Join(want, "|") {
			t.Errorf("NoReceipts %t: sent %q, want %q", noReceipts, out.sent, want)
		}
		if got := sim.c.Commands.Load(); got != 1 {
			t.Errorf("NoReceipts %t: %d commands counted, want 1", noReceipts, got)
		}
	}
}

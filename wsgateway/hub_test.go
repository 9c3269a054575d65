package wsgateway

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestSendReachesDevice(t *testing.T) {
	e := newEnv(t, Options{})
	ws := e.dial(t, 42, nil)
	if !e.hub.Send(42, command(t, "del-1", `{"kind":"reboot"}`)) {
		t.Fatal("Send returned false for a connected device")
	}
	env := readEnvelope(t, ws)
	if env.Type != "command" || env.ID != "del-1" || string(env.Command) != `{"kind":"reboot"}` {
		t.Fatalf("got %+v", env)
	}
	if e.hub.Send(43, command(t, "del-2", `{}`)) {
		t.Fatal("Send returned true for an unknown device")
	}
	waitFor(t, time.Second, func() bool { return e.hub.Stats().MessagesSent == 1 }, "sent counter")
	if s := e.hub.Stats(); s.SendMisses != 1 || s.Connections != 1 || s.Accepted != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestAckAndConfirmReachOnMessage(t *testing.T) {
	e := newEnv(t, Options{})
	ws := e.dial(t, 7, nil)
	for _, m := range []string{`{"type":"ack","id":"a1"}`, `{"type":"confirm","id":"a1"}`} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	want := []DeviceMessage{{MessageAck, "a1"}, {MessageConfirm, "a1"}}
	for _, w := range want {
		select {
		case got := <-e.msgs:
			if got.deviceID != 7 || got.msg != w {
				t.Fatalf("got %+v, want device 7 %+v", got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no OnMessage for %+v", w)
		}
	}
}

func TestManyDevicesReceiveOwnMessages(t *testing.T) {
	const devices, perDevice = 200, 3
	e := newEnv(t, Options{})
	conns := make([]*websocket.Conn, devices)
	for i := range conns {
		conns[i] = e.dial(t, int64(i+1), nil)
	}
	if n := e.hub.Count(); n != devices {
		t.Fatalf("Count = %d, want %d", n, devices)
	}
	for k := range perDevice {
		for i := range devices {
			id := int64(i + 1)
			if !e.hub.Send(id, command(t, fmt.Sprintf("%d-%d", id, k), `{}`)) {
				t.Fatalf("Send to %d failed", id)
			}
		}
	}
	end := command(t, "end", `{}`)
	e.hub.Range(func(c *Conn) bool { return e.hub.Send(c.DeviceID(), end) })

	var wg sync.WaitGroup
	errs := make(chan error, devices)
	for i, ws := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			for k := 0; ; k++ {
				var env commandEnvelope
				if err := ws.ReadJSON(&env); err != nil {
					errs <- fmt.Errorf("device %d: %v", i+1, err)
					return
				}
				if env.ID == "end" {
					if k != perDevice {
						errs <- fmt.Errorf("device %d: %d messages before end", i+1, k)
					}
					return
				}
				if want := fmt.Sprintf("%d-%d", i+1, k); env.ID != want {
					errs <- fmt.Errorf("device %d: got %s, want %s", i+1, env.ID, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestRangeStopsEarly(t *testing.T) {
	e := newEnv(t, Options{})
	for i := range 5 {
		e.dial(t, int64(i+100), nil)
	}
	seen := map[int64]bool{}
	e.hub.Range(func(c *Conn) bool {
		seen[c.DeviceID()] = c.Identity().Account == c.DeviceID()*10 && !c.ConnectedAt().IsZero()
		return true
	})
	if len(seen) != 5 {
		t.Fatalf("Range visited %v", seen)
	}
	for id, identityKept := range seen {
		if !identityKept {
			t.Errorf("device %d: identity or connection time lost", id)
		}
	}
	n := 0
	e.hub.Range(func(*Conn) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("Range did not stop: %d calls", n)
	}
}

func TestReconnectReplacesOldConnection(t *testing.T) {
	e := newEnv(t, Options{})
	old := e.dial(t, 9, nil)
	newer := e.dial(t, 9, nil)
	if code := readCloseCode(t, old); code != CloseReplaced {
		t.Fatalf("old connection close code %d, want %d", code, CloseReplaced)
	}
	if r := e.waitClose(t, 9); r != ReasonReplaced {
		t.Fatalf("reason %v, want replaced", r)
	}
	if !e.hub.Connected(9) || e.hub.Count() != 1 {
		t.Fatalf("Connected=%v Count=%d", e.hub.Connected(9), e.hub.Count())
	}
	if !e.hub.Send(9, command(t, "after", `{}`)) {
		t.Fatal("Send after reconnect failed")
	}
	if env := readEnvelope(t, newer); env.ID != "after" {
		t.Fatalf("newer got %+v", env)
	}
	if s := e.hub.Stats(); s.Replaced != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestShutdownClosesAllWithGoingAway(t *testing.T) {
	const devices = 20
	e := newEnv(t, Options{})
	codes := make(chan int, devices)
	for i := range devices {
		ws := e.dial(t, int64(i+1), nil)
		go func() { codes <- readCloseCode(t, ws) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.hub.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	t.Logf("Shutdown of %d connections took %v", devices, time.Since(start))
	for range devices {
		select {
		case code := <-codes:
			if code != websocket.CloseGoingAway {
				t.Fatalf("close code %d, want %d", code, websocket.CloseGoingAway)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("client did not see the close")
		}
	}
	if n := e.hub.Count(); n != 0 {
		t.Fatalf("Count after shutdown = %d", n)
	}
	for range devices {
		select {
		case c := <-e.closes:
			if c.reason != ReasonShutdown {
				t.Fatalf("device %d closed with %v, want shutdown", c.deviceID, c.reason)
			}
		default:
			t.Fatal("Shutdown returned before every OnClose")
		}
	}
	_, resp, err := websocket.DefaultDialer.Dial(e.url+strconv.Itoa(1), nil)
	if err == nil {
		t.Fatal("dial after shutdown succeeded")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after shutdown: %v %v", resp, err)
	}
}

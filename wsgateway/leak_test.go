package wsgateway

import (
	"runtime"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		e := startEnv(Options{PongWait: time.Second, CloseGrace: 200 * time.Millisecond})
		defer e.stop()
		var conns []*websocket.Conn
		for i := range 50 {
			conns = append(conns, e.dial(t, int64(i), nil))
		}
		defer func() {
			for _, ws := range conns {
				_ = ws.Close()
			}
		}()
		for i := range 50 {
			e.hub.Send(int64(i), command(t, "x", `{}`))
		}
		// A few devices leave on their own, one reconnects.
		for _, ws := range conns[:10] {
			_ = ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		}
		conns = append(conns, e.dial(t, 20, nil))
	}()
	var after int
	deadline := time.Now().Add(5 * time.Second)
	for {
		after = runtime.NumGoroutine()
		if after <= before || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before, %d after\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

package dispatch_test

import (
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/domain"
	"tvsm/wsgateway"
)

// waiter is closed by the reader whose message brings the count to target.
type waiter struct {
	target int64
	ch     chan struct{}
}

// BenchmarkDeliverUserMessage measures the delivery of one provider-wide
// user_message to N devices connected over loopback websockets to one node
// (default 2000, TVSM_DISPATCH_BENCH_DEVICES to change): from the append of
// CommandsIssued to the last device having read its message, through the
// subscription, the claim append (one fsync) and the sockets. Clients run
// in the same process, so their reading is included. Run with
//
//	go test -run '^$' -bench DeliverUserMessage ./wsgateway/dispatch/
//
// ns/delivery is the time per send divided by N; ms/send is the time until
// every device has the message.
func BenchmarkDeliverUserMessage(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("TVSM_DISPATCH_BENCH_DEVICES")); err == nil && v > 0 {
		n = v
	}
	e := newEmbeddedEnv(b)
	nd := e.startNode(b, "bench", b.TempDir(), wsgateway.Options{})
	var received atomic.Int64
	var current atomic.Pointer[waiter]
	current.Store(&waiter{target: -1})
	dialer := &websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 512, WriteBufferSize: 256}
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		go func() {
			ws, _, err := dialer.Dial(nd.url+"?device="+strconv.Itoa(i)+"&account="+strconv.Itoa(i)+"&provider=1", nil)
			if err != nil {
				errs <- err
				return
			}
			defer ws.Close()
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					return
				}
				if c := received.Add(1); c == current.Load().target {
					close(current.Load().ch)
				}
			}
		}()
	}
	waitFor(b, func() bool { return nd.d.Hub().Count() == n || len(errs) > 0 }, "devices connected")
	if len(errs) > 0 {
		b.Fatal(<-errs)
	}
	text := message("Scheduled maintenance tonight from 02:00 to 03:00 UTC.")
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		w := &waiter{target: int64(i+1) * int64(n), ch: make(chan struct{})}
		current.Store(w)
		e.publishAsync(b, e.prepare(b, domain.RecipientProviders, []int64{1}, text))
		select {
		case <-w.ch:
		case <-time.After(time.Minute):
			b.Fatalf("send %d: %d of %d deliveries after a minute", i, received.Load()-int64(i)*int64(n), n)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*n), "ns/delivery")
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/send")
	b.ReportMetric(float64(b.N*n)/elapsed.Seconds(), "deliveries/s")
}

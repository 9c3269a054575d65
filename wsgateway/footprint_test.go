package wsgateway

import (
	"bytes"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawDial opens a websocket to addr for device id with a hand-written
// handshake, so the client side holds nothing but a socket and the figures
// measure the server side.
func rawDial(addr string, id int) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	req := "GET /ws?device=" + strconv.Itoa(id) + " HTTP/1.1\r\nHost: " + addr +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13" +
		"\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, err
	}
	var resp []byte
	buf := make([]byte, 256)
	for !bytes.Contains(resp, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		if err != nil {
			c.Close()
			return nil, err
		}
		resp = append(resp, buf[:n]...)
	}
	if !bytes.HasPrefix(resp, []byte("HTTP/1.1 101")) {
		c.Close()
		return nil, net.UnknownNetworkError(string(resp))
	}
	return c, nil
}

// BenchmarkIdleConnFootprint measures server memory and goroutines per idle
// device connection, after centrifuge's benchWsConnFootprint. The number of
// connections is TVSM_WS_FOOTPRINT_CONNS (default 2000; each takes two file
// descriptors). The setup runs once (b.Loop). Run with
//
//	go test -run=^$ -bench=IdleConnFootprint ./wsgateway/
//
// heap-B/conn and stack-B/conn are HeapInuse and StackInuse deltas; the raw
// client sockets (a few hundred bytes each) are included, kernel socket
// buffers are not.
func BenchmarkIdleConnFootprint(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("TVSM_WS_FOOTPRINT_CONNS")); err == nil && v > 0 {
		n = v
	}
	e := startEnv(Options{})
	defer e.stop()
	addr := strings.TrimPrefix(e.srv.URL, "http://")

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()

	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := rawDial(addr, i+1)
		if err != nil {
			b.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.hub.Count() < n {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d registered", e.hub.Count(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let handler goroutines finish
	runtime.GC()
	runtime.ReadMemStats(&m1)
	g1 := runtime.NumGoroutine()

	for b.Loop() {
	}
	heap := float64(int64(m1.HeapInuse)-int64(m0.HeapInuse)) / float64(n)
	stack := float64(int64(m1.StackInuse)-int64(m0.StackInuse)) / float64(n)
	b.ReportMetric(heap, "heap-B/conn")
	b.ReportMetric(stack, "stack-B/conn")
	b.ReportMetric(heap+stack, "total-B/conn")
	b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/conn")
	b.ReportMetric(float64(n), "conns")
}

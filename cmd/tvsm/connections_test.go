package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fromAddr is an HTTP client whose connections come from a loopback
// address of the test's choosing (the node counts connections per client
// address).
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// heldConn is one keep-alive connection from a chosen loopback address.
type heldConn struct {
	c net.Conn
	r *bufio.Reader
}

func holdConn(t *testing.T, ip, addr string) *heldConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return &heldConn{c: c, r: bufio.NewReader(c)}
}

// get sends GET path on the connection and returns the response with its
// body read.
func (h *heldConn) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	if _, err := fmt.Fprintf(h.c, "GET %s HTTP/1.1\r\nHost: tvsm\r\n\r\n", path); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// refusedWith checks a refusal: status, error code and Retry-After.
func refusedWith(t *testing.T, what string, resp *http.Response, body string, status int, code string) {
	t.Helper()
	var e struct {
		Status int    `json:"statusCode"`
		Code   string `json:"error"`
		Cause  string `json:"cause"`
	}
	if resp.StatusCode != status || json.Unmarshal([]byte(body), &e) != nil || e.Status != status || e.Code != code || e.Cause == "" {
		t.Fatalf("%s: %d %s, want %d %s", what, resp.StatusCode, body, status, code)
	}
	if resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("%s: Retry-After %q, want 5", what, resp.Header.Get("Retry-After"))
	}
}

// TestServeCapsConnections runs `tvsm serve` with small caps: an address
// past its connections gets 429 and another address is served; past the
// node's connections everyone new gets 503; an address past its websockets
// gets 429 on the upgrade; places come back when connections close; the
// refusals are counted at /metrics.
func TestServeCapsConnections(t *testing.T) {
	stderr, exited, cancel := startServe(t, "--http", "127.0.0.1:0", "--data", t.TempDir(),
		"--max-connections", "7", "--max-connections-per-address", "3", "--max-websockets-per-address", "1")
	addr := waitForListening(t, stderr, exited)
	defer func() {
		cancel()
		<-exited
	}()

	// 127.0.0.1 holds three keep-alive connections; its fourth is refused.
	var held []*heldConn
	for range 3 {
		h := holdConn(t, "127.0.0.1", addr)
		if resp, body := h.get(t, "/healthz"); resp.StatusCode != http.StatusOK {
			t.Fatalf("within the cap: %d %s", resp.StatusCode, body)
		}
		held = append(held, h)
	}
	resp, body := holdConn(t, "127.0.0.1", addr).get(t, "/healthz")
	refusedWith(t, "fourth connection of 127.0.0.1", resp, body, http.StatusTooManyRequests, "too_many_requests")
	// Another address is served, up to the node's seven in all.
	for range 3 {
		h := holdConn(t, "127.0.0.2", addr)
		if resp, body := h.get(t, "/healthz"); resp.StatusCode != http.StatusOK {
			t.Fatalf("127.0.0.2 within the caps: %d %s", resp.StatusCode, body)
		}
		held = append(held, h)
	}
	h := holdConn(t, "127.0.0.3", addr)
	if resp, _ := h.get(t, "/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("seventh connection: %d", resp.StatusCode)
	}
	held = append(held, h)
	resp, body = holdConn(t, "127.0.0.4", addr).get(t, "/healthz")
	refusedWith(t, "eighth connection", resp, body, http.StatusServiceUnavailable, "unavailable")
	for _, h := range held {
		h.c.Close()
	}

	// Websockets: two devices behind 127.0.0.5 hold one websocket.
	admin := api{t: t, base: "http://" + addr, c: fromAddr("127.0.0.6"), password: "s3cret-root"}
	waitFor(t, "the places of the closed connections", func() bool {
		// Until the node has seen them close, a new connection is refused
		// with a 503 written at once; when that answer comes before the
		// client has sent its request, Go's client reports an error
		// ("unsolicited response") instead of the 503. Both mean not yet.
		resp, err := admin.c.Get(admin.base + "/healthz")
		if err != nil {
			return false
		}
		_ = readBody(resp)
		return resp.StatusCode == http.StatusOK
	})
	var provider, account struct{ ID int64 }
	admin.ok(http.MethodPost, "/api/admin/providers", map[string]any{"name": "Capped ISP"}, &provider)
	admin.ok(http.MethodPost, "/api/provider/accounts", map[string]any{
		"provider": provider.ID, "login": "home", "fullname": "Home", "pin_md5": "81dc9bdb52d04dc20036dbd8313ed055",
	}, &account)
	devices := fromAddr("127.0.0.5")
	token := func(uid string) string {
		body, _ := json.Marshal(map[string]any{"provider": provider.ID, "login": "home", "password_md5": "81dc9bdb52d04dc20036dbd8313ed055",
			"device": map[string]any{"unique_id": uid, "class": "stb"}})
		resp, err := devices.Post("http://"+addr+"/api/device/login", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Token string }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("device login: %d %v", resp.StatusCode, err)
		}
		return out.Token
	}
	dialer := websocket.Dialer{NetDialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.5")}}).DialContext,
		HandshakeTimeout: 5 * time.Second}
	connect := func(token string) (*websocket.Conn, *http.Response, error) {
		return dialer.Dial("ws://"+addr+"/api/device/ws", http.Header{"Authorization": {"Bearer " + token}})
	}
	first, second := token("box-1"), token("box-2")
	ws, _, err := connect(first)
	if err != nil {
		t.Fatalf("first websocket: %v", err)
	}
	_, resp, err = connect(second)
	if err == nil || resp == nil {
		t.Fatalf("second websocket of 127.0.0.5: %v, want refused", err)
	}
	body = readBody(resp)
	refusedWith(t, "second websocket of 127.0.0.5", resp, body, http.StatusTooManyRequests, "too_many_requests")
	ws.Close()
	waitFor(t, "a websocket place after the first closed", func() bool {
		ws, _, err := connect(second)
		if err == nil {
			ws.Close()
		}
		return err == nil
	})

	var metrics string
	admin.ok(http.MethodGet, "/metrics", nil, &metrics)
	// The total may count more: the wait above polls while places free up.
	for metric, least := range map[string]float64{
		`tvsm_http_connections_refused_total{cap="address"}`: 1,
		`tvsm_http_connections_refused_total{cap="total"}`:   1,
		"tvsm_ws_refused_total":                              1,
		"tvsm_http_connections":                              1,
		// The scrape's own connection, serving it.
		`tvsm_http_connections_by_state{state="active"}`: 1,
	} {
		if v, ok := metricValue(metrics, metric); !ok || v < least {
			t.Errorf("/metrics: %s = %v (found %v), want at least %v", metric, v, ok, least)
		}
	}
	for _, state := range []string{"new", "idle"} {
		if _, ok := metricValue(metrics, `tvsm_http_connections_by_state{state="`+state+`"}`); !ok {
			t.Errorf("/metrics lacks the %s connections", state)
		}
	}
}

// metricValue finds a sample in a Prometheus text exposition.
func metricValue(text, sample string) (float64, bool) {
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			var v float64
			_, err := fmt.Sscan(rest, &v)
			return v, err == nil
		}
	}
	return 0, false
}

func readBody(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

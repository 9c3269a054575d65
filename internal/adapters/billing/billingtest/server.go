// Package billingtest plays an operator's billing system for tests: a real
// HTTP server that verifies X-AUTH-TOKEN the way an operator does (with
// its own md5, not package billing's), records every request it gets, and
// answers the six routes of the billing interface with conforming models.
package billingtest

import (
	"crypto/md5"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Received is a request the billing got.
type Received struct {
	Method   string
	Path     string // escaped, as on the wire
	RawQuery string
	Header   http.Header
	Body     []byte
	// SignatureOK: X-AUTH-TOKEN matched md5(path + token + Content-Length).
	SignatureOK bool
}

// Server is a running fake billing. Its URL (with Base appended) is what a
// provider's billing url is set to.
type Server struct {
	*httptest.Server
	// BillingURL is URL plus the base path the server was started with.
	BillingURL string
	Token      string
	base       string
	handler    http.HandlerFunc

	mu       sync.Mutex
	received []Received
	open     map[net.Conn]bool
}

// Options adjust a Server.
type Options struct {
	// Base is a path prefix the billing lives under ("/billing"): the
	// routes are Base+"/api/...", and the signature covers the whole path.
	Base string
	// Handler replaces the standard answers; it runs after the request is
	// recorded (the body is in Received, and r.Body is empty).
	Handler http.HandlerFunc
}

// LoopbackNetworks are the networks a Server listens in. Billing clients
// refuse loopback addresses unless allowed, so tests that call a Server
// allow these.
func LoopbackNetworks() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// Start starts a fake billing with shared token token; the test's cleanup
// closes it.
func Start(t testing.TB, token string, opts Options) *Server {
	t.Helper()
	s := &Server{Token: token, base: strings.TrimRight(opts.Base, "/"), handler: opts.Handler, open: map[net.Conn]bool{}}
	if s.handler == nil {
		s.handler = s.standard
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnState = s.track
	s.Start()
	s.BillingURL = s.URL + s.base
	t.Cleanup(s.Close)
	return s
}

// Signature is the operator's computation of X-AUTH-TOKEN: md5 hex of the
// path, the token and the Content-Length header when present and > 0.
func Signature(path, token, contentLength string) string {
	data := path + token
	if contentLength != "" && contentLength != "0" {
		data += contentLength
	}
	sum := md5.Sum([]byte(data))
	return hex.EncodeToString(sum[:])
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	length := r.Header.Get("Content-Length")
	if length == "" && r.ContentLength > 0 {
		length = strconv.FormatInt(r.ContentLength, 10)
	}
	got := Received{
		Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body,
		SignatureOK: r.Header.Get("X-AUTH-TOKEN") == Signature(r.URL.EscapedPath(), s.Token, length),
	}
	s.mu.Lock()
	s.received = append(s.received, got)
	s.mu.Unlock()
	r.Body = http.NoBody
	s.handler(w, r)
}

// Requests returns every request so far, in order.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Last returns the latest request; ok is false when there was none.
func (s *Server) Last() (Received, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.received) == 0 {
		return Received{}, false
	}
	return s.received[len(s.received)-1], true
}

// OpenConns returns how many client connections are open (new, active or
// idle).
func (s *Server) OpenConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

func (s *Server) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(s.open, c)
	default:
		s.open[c] = true
	}
}

// standard answers like a conforming billing: 401 for a bad signature,
// the models of this package for the six routes, 404 for anything else.
func (s *Server) standard(w http.ResponseWriter, r *http.Request) {
	last, _ := s.Last()
	if !last.SignatureOK {
		writeJSON(w, http.StatusUnauthorized, `{"status":500,"message":"bad signature"}`)
		return
	}
	route, ok := strings.CutPrefix(r.URL.Path, s.base)
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch {
	case r.Method == http.MethodGet && route == "/api/cabinet":
		writeJSON(w, http.StatusOK, Cabinet)
	case r.Method == http.MethodGet && strings.HasPrefix(route, "/api/tariff/"):
		writeJSON(w, http.StatusOK, TariffDetail(strings.TrimPrefix(route, "/api/tariff/")))
	case r.Method == http.MethodPost && (route == "/api/switch" || route == "/api/subscribe" || route == "/api/unsubscribe"):
		writeJSON(w, http.StatusOK, Result)
	case r.Method == http.MethodPost && route == "/api/cabinet/password":
		writeJSON(w, http.StatusOK, `{"status":200,"message":null}`)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

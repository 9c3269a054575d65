package billing_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/billing/billingtest"
)

// newClient returns a client that may reach the loopback servers of the
// tests (unless opts has its own allowed networks).
func newClient(t *testing.T, opts billing.Options) *billing.Client {
	t.Helper()
	if opts.Addresses.Allowed == nil {
		opts.Addresses.Allowed = billingtest.LoopbackNetworks()
	}
	c, err := billing.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestEndpoint(t *testing.T) {
	tests := []struct{ base, path, query, want string }{
		{"http://b.example", "/api/cabinet", "", "http://b.example/api/cabinet"},
		{"http://b.example/", "/api/cabinet", "", "http://b.example/api/cabinet"},
		{"https://b.example/billing/", "/api/tariff/7", "x=1", "https://b.example/billing/api/tariff/7?x=1"},
		{"https://b.example/bill%2Fing", "/api/cabinet", "", "https://b.example/bill%2Fing/api/cabinet"},
		{"https://b.example:8443/b?own=1#frag", "/api/switch", "", "https://b.example:8443/b/api/switch"},
	}
	for _, tt := range tests {
		u, err := billing.Endpoint(tt.base, tt.path, tt.query)
		if err != nil || u.String() != tt.want {
			t.Errorf("Endpoint(%q, %q, %q) = %v, %v; want %s", tt.base, tt.path, tt.query, u, err, tt.want)
		}
	}
	for _, bad := range []string{"", "b.example", "ftp://b.example", "http://", "mailto:x@y", "http://[::1"} {
		if _, err := billing.Endpoint(bad, "/api/cabinet", ""); !errors.Is(err, billing.ErrBadBillingURL) {
			t.Errorf("Endpoint(%q): %v, want ErrBadBillingURL", bad, err)
		}
	}
	// Credentials in the URL would be sent to billing as Basic
	// authorisation: refused.
	for _, withUser := range []string{"https://u:p@b.example:8443/b", "http://user@b.example/", "http://:@b.example/"} {
		if _, err := billing.Endpoint(withUser, "/api/cabinet", ""); !errors.Is(err, billing.ErrUserInfo) {
			t.Errorf("Endpoint(%q): %v, want ErrUserInfo", withUser, err)
		}
	}
}

// allowedHeaders are the only request headers billing may see.
var allowedHeaders = []string{"Accept", "Accept-Language", "Content-Length", "Content-Type", "User-Agent",
	"X-Auth-Token", "X-Tms-Account-Id", "X-Tms-Provider-Id"}

func TestDoSignsAndIdentifies(t *testing.T) {
	srv := billingtest.Start(t, "s3cret", billingtest.Options{Base: "/billing"})
	c := newClient(t, billing.Options{})
	body := []byte(`{"tariff_id":2,"from":"2025-04-01T00:00:00+0300"}`)
	for _, r := range []billing.Request{
		{Method: http.MethodGet, Path: billing.TariffPath(7), RawQuery: "lang=ru&x=%2F"},
		{Method: http.MethodPost, Path: billing.RouteSubscribe.Path, Body: body},
	} {
		r.BaseURL, r.Token, r.Account, r.Provider, r.AcceptLanguage = srv.BillingURL, "s3cret", 42, 7, "ru-RU,ru;q=0.9"
		resp, err := c.Do(context.Background(), r)
		if err != nil || resp.Status != http.StatusOK {
			t.Fatalf("%s %s: %+v, %v", r.Method, r.Path, resp, err)
		}
		got, _ := srv.Last()
		if !got.SignatureOK {
			t.Errorf("%s %s: billing rejects the signature %s", r.Method, got.Path, got.Header.Get("X-AUTH-TOKEN"))
		}
		want := map[string]string{"X-TMS-ACCOUNT-ID": "42", "X-TMS-PROVIDER-ID": "7", "Accept-Language": "ru-RU,ru;q=0.9"}
		for k, v := range want {
			if got.Header.Get(k) != v {
				t.Errorf("%s: %s = %q, want %q", r.Path, k, got.Header.Get(k), v)
			}
		}
		if got.Method != r.Method || got.Path != "/billing"+r.Path || got.RawQuery != r.RawQuery || string(got.Body) != string(r.Body) {
			t.Errorf("billing got %s %s?%s %q", got.Method, got.Path, got.RawQuery, got.Body)
		}
		for k := range got.Header {
			if !slices.Contains(allowedHeaders, k) {
				t.Errorf("%s: unexpected header %s: %q", r.Path, k, got.Header[k])
			}
		}
	}
}

func TestDoHeaderPrefixAndBadLocale(t *testing.T) {
	srv := billingtest.Start(t, "tok", billingtest.Options{})
	c := newClient(t, billing.Options{HeaderPrefix: "X-TVIP-"})
	_, err := c.Do(context.Background(), billing.Request{BaseURL: srv.BillingURL, Token: "tok", Method: http.MethodGet,
		Path: billing.RouteCabinet.Path, Account: 5, Provider: 6, AcceptLanguage: "en\x01"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := srv.Last()
	if got.Header.Get("X-TVIP-ACCOUNT-ID") != "5" || got.Header.Get("X-TVIP-PROVIDER-ID") != "6" || got.Header.Get("X-TMS-ACCOUNT-ID") != "" {
		t.Errorf("headers %v", got.Header)
	}
	if _, ok := got.Header["Accept-Language"]; ok {
		t.Errorf("a locale with a control byte was forwarded: %q", got.Header["Accept-Language"])
	}
}

func TestDoFailures(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := billingtest.Start(t, "tok", billingtest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/big":
			w.Header().Set("Content-Length", "2048")
			_, _ = w.Write(make([]byte, 2048))
		case "/big-chunked":
			for range 3 {
				_, _ = w.Write(make([]byte, 1000))
				w.(http.Flusher).Flush()
			}
		case "/redirect":
			http.Redirect(w, r, "http://elsewhere.example/", http.StatusFound)
		}
	}})
	dead := deadURL(t)
	c := newClient(t, billing.Options{Timeout: 200 * time.Millisecond, MaxResponseBody: 1024, MaxRequestBody: 16})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		base string
		path string
		body string
		want error
	}{
		{"slow", context.Background(), srv.URL, "/slow", "", billing.ErrTimeout},
		{"dead", context.Background(), dead, "/api/cabinet", "", billing.ErrUnreachable},
		{"declared too large", context.Background(), srv.URL, "/big", "", billing.ErrResponseTooLarge},
		{"streamed too large", context.Background(), srv.URL, "/big-chunked", "", billing.ErrResponseTooLarge},
		{"redirect", context.Background(), srv.URL, "/redirect", "", billing.ErrRedirect},
		{"caller gone", canceled, srv.URL, "/slow", "", billing.ErrCanceled},
		{"request too large", context.Background(), srv.URL, "/api/switch", strings.Repeat("x", 17), billing.ErrRequestTooLarge},
		{"bad url", context.Background(), "ftp://x", "/api/cabinet", "", billing.ErrBadBillingURL},
	}
	for _, tt := range tests {
		_, err := c.Do(tt.ctx, billing.Request{BaseURL: tt.base, Token: "tok", Method: http.MethodGet, Path: tt.path, Body: []byte(tt.body)})
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if got := billing.Failure(errors.Join(billing.ErrTimeout)); got != "timeout" {
		t.Errorf("Failure(timeout) = %q", got)
	}
	if got := billing.Failure(io.EOF); got != "failed" {
		t.Errorf("Failure(EOF) = %q", got)
	}
}

// deadURL returns the URL of a loopback port nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestDoLeavesNothingBehind: after calls that succeed, time out and fail,
// closing the client leaves no goroutine and no connection open.
func TestDoLeavesNothingBehind(t *testing.T) {
	srv := billingtest.Start(t, "tok", billingtest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
		}
	}})
	before := runtime.NumGoroutine()
	c, err := billing.NewClient(billing.Options{Timeout: 100 * time.Millisecond, Addresses: billing.Policy{Allowed: billingtest.LoopbackNetworks()}})
	if err != nil {
		t.Fatal(err)
	}
	dead := deadURL(t)
	for i := range 20 {
		base, path := srv.URL, "/api/cabinet"
		switch i % 3 {
		case 1:
			path = "/slow"
		case 2:
			base = dead
		}
		_, _ = c.Do(context.Background(), billing.Request{BaseURL: base, Token: "tok", Method: http.MethodGet, Path: path})
	}
	if _, err := c.Do(context.Background(), billing.Request{BaseURL: srv.URL, Token: "tok", Method: http.MethodGet, Path: "/api/cabinet"}); err != nil {
		t.Fatal(err)
	}
	if srv.OpenConns() == 0 {
		t.Fatal("no idle connection to billing: the test shows nothing")
	}
	c.Close()
	waitFor(t, "connections and goroutines to go", func() bool {
		return srv.OpenConns() == 0 && runtime.NumGoroutine() <= before
	})
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("timed out waiting for %s\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDoSpellsHeadersInUpperCase reads the request off the wire: the
// identifying headers and the signature keep their documented upper case.
func TestDoSpellsHeadersInUpperCase(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	raw := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			raw <- ""
			return
		}
		defer conn.Close()
		buf := make([]byte, 4096)
		n, _ := conn.Read(buf)
		raw <- string(buf[:n])
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
	}()
	c := newClient(t, billing.Options{})
	if _, err := c.Do(context.Background(), billing.Request{BaseURL: "http://" + l.Addr().String(), Token: "s3cret",
		Method: http.MethodGet, Path: "/api/cabinet", Account: 42, Provider: 7}); err != nil {
		t.Fatal(err)
	}
	req := <-raw
	for _, want := range []string{"GET /api/cabinet HTTP/1.1\r\n", "X-TMS-ACCOUNT-ID: 42\r\n", "X-TMS-PROVIDER-ID: 7\r\n",
		"X-AUTH-TOKEN: 372647cd1c69ca4793d86b36e6fa4597\r\n"} {
		if !strings.Contains(req, want) {
			t.Errorf("request lacks %q:\n%s", want, req)
		}
	}
}

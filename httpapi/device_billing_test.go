package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi"
	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/billing/billingtest"
)

// The billing proxy against a real HTTP server playing the operator's
// billing (billingtest), behind a real gin engine. The device identity
// comes from X-Test-* headers: the lead wires the real device
// authentication; here those headers double as client headers that must
// not reach billing.

const billingToken = "s3cret"

// billingProxy is a device-facing server with the billing proxy mounted.
type billingProxy struct {
	URL       string
	engine    *gin.Engine
	billing   *billingtest.Server
	providers map[int64]domain.Provider
	mu        sync.Mutex     // guards providers and calls
	calls     []billing.Call // the journal
}

type billingSetup struct {
	disabled bool
	options  billing.Options
	handler  http.HandlerFunc // the billing's answers; nil: billingtest's standard ones
	base     string           // base path of the billing url
}

func startBillingProxy(t *testing.T, s billingSetup) *billingProxy {
	t.Helper()
	p := &billingProxy{billing: billingtest.Start(t, billingToken, billingtest.Options{Base: s.base, Handler: s.handler})}
	p.providers = map[int64]domain.Provider{
		7: {ID: 7, Name: "Acme", Enabled: true, Billing: domain.Billing{Resolve: true, URL: p.billing.BillingURL, Token: billingToken}},
		8: {ID: 8, Name: "No billing", Enabled: true, Billing: domain.Billing{URL: p.billing.BillingURL, Token: billingToken}},
		9: {ID: 9, Name: "Deleted", Deleted: true, Billing: domain.Billing{Resolve: true, URL: p.billing.BillingURL, Token: billingToken}},
	}
	if s.options.Addresses.Allowed == nil {
		s.options.Addresses.Allowed = billingtest.LoopbackNetworks()
	}
	client, err := billing.NewClient(s.options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	p.engine = httpapi.New(httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	httpapi.MountBilling(p.engine.Group("/api/device"), httpapi.BillingOptions{
		Enabled:  !s.disabled,
		Identity: testIdentity,
		Provider: p.provider,
		Client:   client,
		Journal:  p,
	})
	srv := httptest.NewServer(p.engine)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *billingProxy) provider(id int64) (domain.Provider, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.providers[id]
	return pr, ok
}

func (p *billingProxy) setProvider(pr domain.Provider) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.providers[pr.ID] = pr
}

// Record implements httpapi.BillingJournal.
func (p *billingProxy) Record(c billing.Call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, c)
	return true
}

func (p *billingProxy) journal() []billing.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// testIdentity takes the device from X-Test-Device/Account/Provider.
func testIdentity(c *gin.Context) (httpapi.BillingIdentity, bool) {
	num := func(h string) int64 { n, _ := strconv.ParseInt(c.GetHeader(h), 10, 64); return n }
	id := httpapi.BillingIdentity{Device: num("X-Test-Device"), Account: num("X-Test-Account"), Provider: num("X-Test-Provider")}
	return id, id.Account > 0
}

// deviceRequest is a request of device 3 of account 42, provider 7, with
// the headers a real client sends and some it must not get through.
func deviceRequest(t *testing.T, method, url string, body io.Reader, header ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	h := req.Header
	h.Set("X-Test-Device", "3")
	h.Set("X-Test-Account", "42")
	h.Set("X-Test-Provider", "7")
	h.Set("Accept-Language", "ru-RU")
	h.Set("Authorization", "Bearer device-token")
	h.Set("Cookie", "session=abc")
	h.Set("X-Forwarded-For", "10.0.0.1")
	h.Set("X-Request-ID", "device-req-1")
	h.Set("Origin", "https://player.example")
	h.Set("X-TMS-ACCOUNT-ID", "999") // a spoofing attempt
	h.Set("X-AUTH-TOKEN", "forged")
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return req
}

// send makes a device request and returns the status, body and
// Content-Type it got.
func (p *billingProxy) send(t *testing.T, method, path, body string, header ...string) (int, string, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	resp, err := http.DefaultClient.Do(deviceRequest(t, method, p.URL+path, r, header...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data), resp.Header.Get("Content-Type")
}

// billingHeaders are the only request headers billing may see (as Go's
// server spells them).
var billingHeaders = []string{"Accept", "Accept-Language", "Content-Length", "Content-Type", "User-Agent",
	"X-Auth-Token", "X-Tms-Account-Id", "X-Tms-Provider-Id"}

func TestBillingForwardsTheSixRoutes(t *testing.T) {
	p := startBillingProxy(t, billingSetup{base: "/billing"})
	tests := []struct {
		method, device, body, billing, answer string
	}{
		{http.MethodGet, "/api/device/billing/cabinet", "", "/billing/api/cabinet", billingtest.Cabinet},
		{http.MethodPost, "/api/device/billing/switch", `{"subscription_id":7,"tariff_id":2,"from":"2025-04-01T00:00:00+0300"}`, "/billing/api/switch", billingtest.Result},
		{http.MethodPost, "/api/device/billing/subscribe", `{"tariff_id":3,"from":"2025-04-01T00:00:00+0300"}`, "/billing/api/subscribe", billingtest.Result},
		{http.MethodPost, "/api/device/billing/unsubscribe?reason=price", `{"subscription_id":7,"to":"2025-05-01T00:00:00+0300"}`, "/billing/api/unsubscribe", billingtest.Result},
		{http.MethodGet, "/api/device/billing/tariff/12?full=1&x=%2F", "", "/billing/api/tariff/12", billingtest.TariffDetail("12")},
		{http.MethodPost, "/api/device/billing/cabinet/password", `{"old_password":"0cc175b9c0f1b6a831c399e269772661","password":"92eb5ffee6ae2fec3ad71c777531578f"}`, "/billing/api/cabinet/password", `{"status":200,"message":null}`},
	}
	for _, tt := range tests {
		status, body, ct := p.send(t, tt.method, tt.device, tt.body, "Content-Type", "application/json")
		if status != http.StatusOK || body != tt.answer || ct != "application/json; charset=utf-8" {
			t.Errorf("%s %s: %d %q %q", tt.method, tt.device, status, ct, body)
		}
		got, _ := p.billing.Last()
		_, query, _ := strings.Cut(tt.device, "?")
		if got.Method != tt.method || got.Path != tt.billing || got.RawQuery != query || string(got.Body) != tt.body {
			t.Errorf("%s: billing got %s %s?%s %q", tt.device, got.Method, got.Path, got.RawQuery, got.Body)
		}
		if !got.SignatureOK {
			t.Errorf("%s: billing rejects X-AUTH-TOKEN %s", tt.device, got.Header.Get("X-AUTH-TOKEN"))
		}
		checkBillingHeaders(t, tt.device, got.Header, "X-TMS-")
	}
	if n := len(p.journal()); n != len(tests) {
		t.Errorf("%d calls journaled, want %d", n, len(tests))
	}
}

// checkBillingHeaders checks the identifying headers and that nothing else
// of the device's request got through.
func checkBillingHeaders(t *testing.T, what string, h http.Header, prefix string) {
	t.Helper()
	for k, want := range map[string]string{prefix + "ACCOUNT-ID": "42", prefix + "PROVIDER-ID": "7", "Accept-Language": "ru-RU"} {
		if got := h.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %s = %q, want %q", what, k, got, want)
		}
	}
	allowed := billingHeaders
	if prefix != "X-TMS-" {
		allowed = append(slices.Clone(allowed), http.CanonicalHeaderKey(prefix+"ACCOUNT-ID"), http.CanonicalHeaderKey(prefix+"PROVIDER-ID"))
		allowed = slices.DeleteFunc(allowed, func(k string) bool { return strings.HasPrefix(k, "X-Tms-") })
	}
	for k, v := range h {
		if !slices.Contains(allowed, k) {
			t.Errorf("%s: client or stray header reached billing: %s: %q", what, k, v)
		}
	}
}

func TestBillingHeaderPrefixIsConfigurable(t *testing.T) {
	p := startBillingProxy(t, billingSetup{options: billing.Options{HeaderPrefix: "X-TVIP-"}})
	if status, body, _ := p.send(t, http.MethodGet, "/api/device/billing/cabinet", ""); status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	got, _ := p.billing.Last()
	checkBillingHeaders(t, "X-TVIP-", got.Header, "X-TVIP-")
}

// TestBillingForwardsNothingElse: other paths and methods, and tariff ids
// that are not positive integers, never reach billing.
func TestBillingForwardsNothingElse(t *testing.T) {
	p := startBillingProxy(t, billingSetup{})
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/api/device/billing/../admin", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/%2e%2e/admin/providers", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/other", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/api/cabinet", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/cabinet/extra", http.StatusNotFound},
		{http.MethodPost, "/api/device/billing/cabinet", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/switch", http.StatusNotFound},
		{http.MethodDelete, "/api/device/billing/subscribe", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/cabinet/password", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/tariff/7/channels", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/tariff/1%2F..%2F..%2Fcabinet", http.StatusNotFound},
		{http.MethodGet, "/api/device/billing/tariff/abc", http.StatusBadRequest},
		{http.MethodGet, "/api/device/billing/tariff/0", http.StatusBadRequest},
		{http.MethodGet, "/api/device/billing/tariff/-3", http.StatusBadRequest},
		{http.MethodGet, "/api/device/billing/tariff/007", http.StatusBadRequest},
		{http.MethodGet, "/api/device/billing/tariff/%2e%2e", http.StatusBadRequest},
	}
	for _, tt := range tests {
		status, body, _ := p.send(t, tt.method, tt.path, "")
		if status != tt.status {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, status, body, tt.status)
		}
		if tt.status == http.StatusBadRequest && !strings.Contains(body, `"fields":{"id":"must be a positive integer"}`) {
			t.Errorf("%s: the 400 does not name the id: %s", tt.path, body)
		}
	}
	if got := p.billing.Requests(); len(got) != 0 {
		t.Errorf("billing got %d requests, first %s %s", len(got), got[0].Method, got[0].Path)
	}
}

func TestBillingPassesAnswersThrough(t *testing.T) {
	p := startBillingProxy(t, billingSetup{handler: func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/switch":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Set-Cookie", "billing=1")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"status":500,"message":null,"subscription":null}`)
		case "/api/cabinet":
			w.Header()["Content-Type"] = nil
			_, _ = io.WriteString(w, "<html>not json</html>")
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}})
	resp, err := http.DefaultClient.Do(deviceRequest(t, http.MethodPost, p.URL+"/api/device/billing/switch", strings.NewReader(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || string(body) != `{"status":500,"message":null,"subscription":null}` ||
		resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Set-Cookie") != "" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("500 passthrough: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if status, body, ct := p.send(t, http.MethodGet, "/api/device/billing/cabinet", ""); status != 200 || body != "<html>not json</html>" || ct != "" {
		t.Errorf("untyped answer: %d %q %q", status, ct, body)
	}
	if status, body, _ := p.send(t, http.MethodGet, "/api/device/billing/tariff/5", ""); status != 404 || body != "" {
		t.Errorf("billing's 404: %d %q", status, body)
	}
	if got := p.journal(); len(got) != 3 || got[0].Status != 500 || got[0].Route != "switch" || got[0].Failure != "" {
		t.Errorf("journal %+v", got)
	}
}

// apiErrorOf decodes an API error body.
func apiErrorOf(t *testing.T, body string) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e
}

func TestBillingSlowAndDead(t *testing.T) {
	release := make(chan struct{})
	blocked := make(chan struct{}, 1)
	p := startBillingProxy(t, billingSetup{options: billing.Options{Timeout: 150 * time.Millisecond}, handler: func(w http.ResponseWriter, r *http.Request) {
		blocked <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}})
	defer close(release)
	status, body, _ := p.send(t, http.MethodGet, "/api/device/billing/cabinet", "")
	if e := apiErrorOf(t, body); status != http.StatusGatewayTimeout || e.Status != 504 || e.Code != httpapi.CodeGatewayTimeout {
		t.Errorf("slow billing: %d %s", status, body)
	}
	select {
	case <-blocked: // billing was still holding the call when the device got its 504
	default:
		t.Error("billing never got the call")
	}

	p.setProvider(domain.Provider{ID: 7, Billing: domain.Billing{Resolve: true, URL: closedPortURL(t), Token: billingToken}})
	status, body, _ = p.send(t, http.MethodPost, "/api/device/billing/subscribe", `{"tariff_id":1}`)
	if e := apiErrorOf(t, body); status != http.StatusBadGateway || e.Code != httpapi.CodeBadGateway || strings.Contains(body, "127.0.0.1") {
		t.Errorf("dead billing: %d %s", status, body)
	}
	got := p.journal()
	if len(got) != 2 || got[0].Status != 504 || got[0].Failure != "timeout" || got[1].Status != 502 || got[1].Failure != "unreachable" {
		t.Errorf("journal %+v", got)
	}
}

// closedPortURL returns the URL of a loopback port nothing listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	return url
}

func TestBillingBodyLimits(t *testing.T) {
	p := startBillingProxy(t, billingSetup{options: billing.Options{MaxRequestBody: 1024, MaxResponseBody: 2048},
		handler: func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(bytes.Repeat([]byte("x"), 2049)) }})
	big := `{"x":"` + strings.Repeat("a", 1024) + `"}`
	status, body, _ := p.send(t, http.MethodPost, "/api/device/billing/switch", big)
	if status != http.StatusRequestEntityTooLarge || apiErrorOf(t, body).Code != httpapi.CodeBodyTooLarge {
		t.Errorf("declared oversize request: %d %s", status, body)
	}
	// Chunked: no Content-Length to refuse it by.
	req := deviceRequest(t, http.MethodPost, p.URL+"/api/device/billing/switch", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversize request: %d", resp.StatusCode)
	}
	if n := len(p.billing.Requests()); n != 0 {
		t.Errorf("oversize requests reached billing %d times", n)
	}
	status, body, _ = p.send(t, http.MethodPost, "/api/device/billing/switch", `{"tariff_id":1}`, "Content-Type", "text/plain")
	if status != http.StatusUnsupportedMediaType {
		t.Errorf("text body: %d %s", status, body)
	}
	status, body, _ = p.send(t, http.MethodGet, "/api/device/billing/cabinet", "")
	if status != http.StatusBadGateway || !strings.Contains(body, "too large") {
		t.Errorf("oversize answer: %d %s", status, body)
	}
}

func TestBillingOffAnswers404(t *testing.T) {
	off := startBillingProxy(t, billingSetup{disabled: true})
	if status, body, _ := off.send(t, http.MethodGet, "/api/device/billing/cabinet", ""); status != http.StatusNotFound {
		t.Errorf("feature off: %d %s", status, body)
	}
	p := startBillingProxy(t, billingSetup{})
	p.setProvider(domain.Provider{ID: 10, Billing: domain.Billing{Resolve: true, Token: billingToken}})
	for _, provider := range []string{"8", "9", "10", "11"} { // resolve off, deleted, no url, unknown
		status, body, _ := p.send(t, http.MethodGet, "/api/device/billing/cabinet", "", "X-Test-Provider", provider)
		if status != http.StatusNotFound || apiErrorOf(t, body).Code != httpapi.CodeNotFound {
			t.Errorf("provider %s: %d %s", provider, status, body)
		}
	}
	status, _, _ := p.send(t, http.MethodGet, "/api/device/billing/cabinet", "", "X-Test-Account", "")
	if status != http.StatusUnauthorized {
		t.Errorf("no device: %d", status)
	}
	if n := len(off.billing.Requests()) + len(p.billing.Requests()); n != 0 {
		t.Errorf("billing got %d requests", n)
	}
}

// TestBillingLeavesNothingBehind: after calls that succeed, time out and
// find billing dead, closing the client leaves no goroutine and no
// connection to billing.
func TestBillingLeavesNothingBehind(t *testing.T) {
	srv := billingtest.Start(t, billingToken, billingtest.Options{Handler: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/switch" {
			<-r.Context().Done()
		}
	}})
	dead := closedPortURL(t)
	before := runtime.NumGoroutine()
	client, err := billing.NewClient(billing.Options{Timeout: 100 * time.Millisecond, Addresses: billing.Policy{Allowed: billingtest.LoopbackNetworks()}})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL
	engine := httpapi.New(httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	httpapi.MountBilling(engine.Group("/api/device"), httpapi.BillingOptions{
		Enabled: true, Identity: testIdentity, Client: client,
		Provider: func(int64) (domain.Provider, bool) {
			return domain.Provider{ID: 7, Billing: domain.Billing{Resolve: true, URL: url, Token: billingToken}}, true
		},
	})
	calls := []struct{ method, path, billing string }{
		{http.MethodGet, "/api/device/billing/cabinet", srv.URL},
		{http.MethodPost, "/api/device/billing/switch", srv.URL}, // billing never answers: 504
		{http.MethodGet, "/api/device/billing/tariff/3", dead},
	}
	for i := range 30 {
		c := calls[i%len(calls)]
		url = c.billing
		w := httptest.NewRecorder()
		engine.ServeHTTP(w, deviceRequest(t, c.method, "http://device"+c.path, nil))
		if want := []int{200, 504, 502}[i%len(calls)]; w.Code != want {
			t.Fatalf("%s: %d, want %d", c.path, w.Code, want)
		}
	}
	// Concurrent successful calls leave several idle connections behind.
	url = srv.URL
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			engine.ServeHTTP(httptest.NewRecorder(), deviceRequest(t, http.MethodGet, "http://device/api/device/billing/cabinet", nil))
		})
	}
	wg.Wait()
	if n := len(srv.Requests()); n != 28 {
		t.Errorf("billing got %d calls, want 28", n)
	}
	if srv.OpenConns() == 0 {
		t.Fatal("no idle connection to billing: the test shows nothing")
	}
	client.Close()
	deadline := time.Now().Add(5 * time.Second)
	for srv.OpenConns() > 0 || runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections to billing and %d goroutines (before: %d) remain", srv.OpenConns(), runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

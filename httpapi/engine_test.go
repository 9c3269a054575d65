package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"

	"tvsm/eventstore"
	"tvsm/internal/platform/metrics"
	"tvsm/internal/testkit/testutil"
)

type testServer struct {
	*httptest.Server
	logs *testutil.SyncBuffer
}

// newTestServer serves an engine over real HTTP; extra adds routes to it.
func newTestServer(t *testing.T, ready ReadinessFunc, extra func(*gin.Engine)) *testServer {
	t.Helper()
	return newTestServerWith(t, Options{Ready: ready}, extra)
}

// newTestServerWith is newTestServer with opts, whose Logger (JSON at debug
// level into the server's logs) and Metrics it sets.
func newTestServerWith(t *testing.T, opts Options, extra func(*gin.Engine)) *testServer {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	opts.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Metrics = metrics.NewRegistry()
	engine := New(opts)
	if extra != nil {
		extra(engine)
	}
	srv := httptest.NewServer(Handler(engine))
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, logs: logs}
}

// get performs a GET with optional headers (pairs).
func (s *testServer) get(t *testing.T, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return s.do(t, http.MethodGet, path, nil, headers...)
}

// decodeJSON decodes body into a generic map, failing the test on bad JSON.
func decodeJSON(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, body)
	}
	return m
}

func assertJSONResponse(t *testing.T, resp *http.Response, body []byte, status int, want map[string]any) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status = %d, want %d (body %s)", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	got := decodeJSON(t, body)
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("body[%q] = %v, want %v (body %s)", k, got[k], v, body)
		}
	}
}

func TestHealthz(t *testing.T) {
	srv := newTestServer(t, func(context.Context) error { return errors.New("not ready") }, nil)
	resp, body := srv.get(t, "/healthz")
	// Liveness does not depend on readiness.
	assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"status": "ok"})
}

func TestReadyz(t *testing.T) {
	var mu sync.Mutex
	reason := errors.New("read model catching up")
	srv := newTestServer(t, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return reason
	}, nil)

	resp, body := srv.get(t, "/readyz")
	assertJSONResponse(t, resp, body, http.StatusServiceUnavailable, map[string]any{
		"statusCode": 503, "error": CodeNotReady, "cause": "read model catching up",
	})

	mu.Lock()
	reason = nil
	mu.Unlock()
	resp, body = srv.get(t, "/readyz")
	assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"status": "ready"})
}

// TestMetrics: /metrics on the API's engine answers superadmins only, in
// Prometheus' text format; anyone else gets 401 (no or wrong credentials)
// or 403 (an admin scoped to a provider), and the figures never leave.
func TestMetrics(t *testing.T) {
	store := newAdminStore(t)
	srv := newTestServerWith(t, Options{MetricsAuth: NewBcryptAuthenticator(store.lookup, BcryptOptions{DummyCost: bcrypt.MinCost})}, nil)
	srv.get(t, "/healthz") // so the request counter has a sample

	for _, tc := range []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"anonymous", nil, http.StatusUnauthorized, CodeUnauthorized},
		{"wrong password", []string{"Authorization", basic("root", "guess")}, http.StatusUnauthorized, CodeUnauthorized},
		{"scoped admin", []string{"Authorization", basic("sync7", "sync-secret")}, http.StatusForbidden, CodeForbidden},
	} {
		resp, body := srv.get(t, "/metrics", tc.header...)
		assertJSONResponse(t, resp, body, tc.status, map[string]any{"error": tc.code})
		if bytes.Contains(body, []byte("tvsm_http_requests_total")) {
			t.Errorf("%s: /metrics gave away its figures: %s", tc.name, body)
		}
	}

	resp, body := srv.get(t, "/metrics", "Authorization", basic("root", "root-secret"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("superadmin: status = %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || !strings.Contains(ct, "version=0.0.4") {
		t.Errorf("Content-Type = %q, want the Prometheus text format", ct)
	}
	for _, want := range []string{
		"# TYPE go_goroutines gauge",
		"process_start_time_seconds",
		`tvsm_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
		`tvsm_http_requests_total{method="GET",route="/metrics",status="401"} 2`,
		"tvsm_http_request_duration_seconds_bucket",
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestMetricsElsewhere: an engine without an authenticator for /metrics,
// or whose /metrics the operators' listener serves, does not serve it; the
// operators' engine serves it to anyone who reaches its address.
func TestMetricsElsewhere(t *testing.T) {
	store := newAdminStore(t)
	auth := NewBcryptAuthenticator(store.lookup, BcryptOptions{DummyCost: bcrypt.MinCost})
	for name, opts := range map[string]Options{
		"no authenticator":         {},
		"served by the ops engine": {MetricsAuth: auth, OpsElsewhere: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newTestServerWith(t, opts, nil)
			resp, body := srv.get(t, "/metrics", "Authorization", basic("root", "root-secret"))
			assertJSONResponse(t, resp, body, http.StatusNotFound, map[string]any{"error": CodeNotFound})
		})
	}
	ops := httptest.NewServer(Handler(NewOps(Options{Logger: discardLogger(), Metrics: metrics.NewRegistry()})))
	t.Cleanup(ops.Close)
	resp, err := ops.Client().Get(ops.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("go_goroutines")) {
		t.Errorf("ops engine /metrics: %d %.200s", resp.StatusCode, body)
	}
}

func TestNoRoute(t *testing.T) {
	srv := newTestServer(t, nil, nil)
	resp, body := srv.get(t, "/x")
	assertJSONResponse(t, resp, body, http.StatusNotFound, map[string]any{
		"statusCode": 404, "error": CodeNotFound, "cause": "no route GET /x",
	})
	if resp.Header.Get(HeaderRequestID) == "" {
		t.Error("404 lacks a request id")
	}
}

// TestTrailingSlashNoRedirect: a path with a trailing slash is answered
// as the path without it, for every method, never with a redirect (clients
// that do not follow one would take it for success).
func TestTrailingSlashNoRedirect(t *testing.T) {
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.Any("/things", func(c *gin.Context) { c.String(http.StatusOK, c.Request.Method+" "+c.Request.URL.RequestURI()) })
		e.GET("/things/:id", func(c *gin.Context) { c.String(http.StatusOK, "thing "+c.Param("id")) })
	})
	for _, tc := range []struct{ method, path, want string }{
		{http.MethodGet, "/things/?limit=1", "GET /things?limit=1"},
		{http.MethodPost, "/things/", "POST /things"},
		{http.MethodPut, "/things/", "PUT /things"},
		{http.MethodDelete, "/things/", "DELETE /things"},
		{http.MethodGet, "/things/7/", "thing 7"},
		{http.MethodGet, "/things", "GET /things"},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != tc.want {
			t.Errorf("%s %s: %d %q (Location %q), want 200 %q", tc.method, tc.path, resp.StatusCode, body, resp.Header.Get("Location"), tc.want)
		}
	}
	if resp, _ := srv.get(t, "/x/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /x/: %d, want 404", resp.StatusCode)
	}
}

func TestRequestID(t *testing.T) {
	seen := make(chan string, 10)
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.GET("/echo", func(c *gin.Context) {
			seen <- RequestID(c) // the gin context falls back to the request's
			c.Status(http.StatusNoContent)
		})
	})

	resp, _ := srv.get(t, "/echo", HeaderRequestID, "sync-job-42:7")
	if got := resp.Header.Get(HeaderRequestID); got != "sync-job-42:7" {
		t.Errorf("echoed request id = %q, want the caller's", got)
	}
	if got := <-seen; got != "sync-job-42:7" {
		t.Errorf("handler saw request id %q", got)
	}
	if !strings.Contains(srv.logs.String(), `"request_id":"sync-job-42:7"`) {
		t.Errorf("request log lacks the request id:\n%s", srv.logs)
	}

	for _, bad := range []string{"", "has space", strings.Repeat("a", 129), "quote\"", "ünï"} {
		resp, _ := srv.get(t, "/echo", HeaderRequestID, bad)
		<-seen
		got := resp.Header.Get(HeaderRequestID)
		if got == bad || len(got) != 36 {
			t.Errorf("for incoming %q got %q, want a generated UUID", bad, got)
		}
	}
}

func TestPanicBecomesJSON500(t *testing.T) {
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.GET("/boom", func(*gin.Context) { panic("kaboom") })
	})
	resp, body := srv.get(t, "/boom", HeaderRequestID, "req-1")
	assertJSONResponse(t, resp, body, http.StatusInternalServerError, map[string]any{
		"statusCode": 500, "error": CodeInternal, "cause": "internal error (request id req-1)",
	})
	if bytes.Contains(body, []byte("kaboom")) {
		t.Errorf("500 body leaks the panic: %s", body)
	}
	logs := srv.logs.String()
	for _, want := range []string{`"msg":"panic in handler"`, `"panic":"kaboom"`, `"stack":`, `"status":500`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	// The server survives.
	if resp, _ := srv.get(t, "/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz after panic: %d", resp.StatusCode)
	}
}

func TestWriteErrorMapsErrors(t *testing.T) {
	cases := map[string]struct {
		err    error
		status int
		want   map[string]any
	}{
		"validation": {
			err:    ValidationFailed(map[string]string{"login": "required", "fullname": "required"}),
			status: http.StatusBadRequest,
			want:   map[string]any{"statusCode": 400, "error": CodeValidationFailed, "cause": "fullname: required; login: required", "fields": map[string]any{"login": "required", "fullname": "required"}},
		},
		"wrapped api error": {
			err:    fmt.Errorf("update account 7: %w", Forbidden("account 7 is outside your provider")),
			status: http.StatusForbidden,
			want:   map[string]any{"error": CodeForbidden, "cause": "account 7 is outside your provider"},
		},
		"wrong revision": {
			err:    fmt.Errorf("append: %w", &eventstore.WrongRevisionError{Stream: "account-1"}),
			status: http.StatusConflict,
			want:   map[string]any{"error": CodeConflict},
		},
		"stream not found": {
			err:    fmt.Errorf("read: %w", eventstore.ErrStreamNotFound),
			status: http.StatusNotFound,
			want:   map[string]any{"error": CodeNotFound},
		},
		"event store unavailable": {
			err:    fmt.Errorf("append: %w", eventstore.ErrUnavailable),
			status: http.StatusServiceUnavailable,
			want:   map[string]any{"error": CodeUnavailable, "cause": "event store unavailable; retry the request"},
		},
		"deadline": {
			err:    context.DeadlineExceeded,
			status: http.StatusServiceUnavailable,
			want:   map[string]any{"error": CodeUnavailable},
		},
		"client gone": {
			err:    fmt.Errorf("wait for the read model: %w", context.Canceled),
			status: StatusClientClosedRequest,
			want:   map[string]any{"error": CodeClientClosed},
		},
		"anything else": {
			err:    errors.New("disk on fire"),
			status: http.StatusInternalServerError,
			want:   map[string]any{"error": CodeInternal, "cause": "internal error (request id r)"},
		},
	}
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.GET("/err/:case", func(c *gin.Context) { WriteError(c, cases[c.Param("case")].err) })
	})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, body := srv.get(t, "/err/"+strings.ReplaceAll(name, " ", "%20"), HeaderRequestID, "r")
			assertJSONResponse(t, resp, body, tc.status, tc.want)
			if bytes.Contains(body, []byte("disk on fire")) {
				t.Errorf("body leaks the internal error: %s", body)
			}
			if tc.status < 500 {
				if _, present := decodeJSON(t, body)["fields"]; present != (name == "validation") {
					t.Errorf("fields present = %v in %s", present, body)
				}
			}
		})
	}
	if !strings.Contains(srv.logs.String(), "disk on fire") {
		t.Error("the internal error was not logged")
	}
}

func TestErrorBodyFieldOrder(t *testing.T) {
	// The error body is a fixed contract of every API; keep the member
	// order too.
	b, err := json.Marshal(ValidationFailed(map[string]string{"login": "required"}))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"statusCode":400,"cause":"login: required","error":"validation_failed","fields":{"login":"required"}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestRequestLogLevels(t *testing.T) {
	ok := func(e *gin.Engine) { e.GET("/ok", func(c *gin.Context) { c.Status(http.StatusOK) }) }
	for _, tc := range []struct {
		accessLog bool
		want      map[string]string // path → level of its request line
	}{
		// Without the access log, only failed requests reach info level.
		{false, map[string]string{"/healthz": "DEBUG", "/ok": "DEBUG", "/nowhere": "INFO"}},
		// With it every request does, except the probes polled by machines.
		{true, map[string]string{"/healthz": "DEBUG", "/ok": "INFO", "/nowhere": "INFO"}},
	} {
		srv := newTestServerWith(t, Options{AccessLog: tc.accessLog}, ok)
		for path := range tc.want {
			srv.get(t, path)
		}
		levels := map[string]string{}
		for line := range strings.SplitSeq(strings.TrimSpace(srv.logs.String()), "\n") {
			rec := decodeJSON(t, []byte(line))
			if rec["msg"] == "http request" {
				levels[fmt.Sprint(rec["path"])] = fmt.Sprint(rec["level"])
			}
		}
		if !maps.Equal(levels, tc.want) {
			t.Errorf("access log %v: request log levels = %v, want %v", tc.accessLog, levels, tc.want)
		}
	}
}

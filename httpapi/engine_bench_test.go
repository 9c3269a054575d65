package httpapi

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"

	"tvsm/httpapi/wire"
	"tvsm/internal/platform/metrics"
	"tvsm/internal/platform/throttle"
	"tvsm/internal/testkit/testutil"
)

// benchAccountBody is an account create as BenchmarkHTTPThroughput sends it.
var benchAccountBody = []byte(`{"contract_info":"contract 123","enabled":true,"fullname":"Subscriber 123",` +
	`"login":"bench123","pin_md5":"0123456789abcdef0123456789abcdef","provider":1}`)

// benchAccountAnswer stands for the rendering CreateAccount returns.
var benchAccountAnswer = []byte(`{"id":123,"enabled":true,"login":"bench123","pin_md5":"0123456789abcdef0123456789abcdef",` +
	`"fullname":"Subscriber 123","provider":1,"remote_custom_field":null,"contract_info":"contract 123","main_address":null,` +
	`"account_desc":null,"region_tag":null,"devices_per_account_limit":null,"created":1795373981,"updated":1795373981,` +
	`"last_online":null,"services_available":false}`)

// benchAccountPost is the per-request work of POST /api/provider/accounts
// without the service: read and check the body, take the caller, answer
// a rendered account.
func benchAccountPost(c *gin.Context) {
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	providerBodyID(obj, 0)
	readProviderAccount(obj)
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	_ = callerOf(c)
	providerRaw(c, benchAccountAnswer)
}

// benchWriter is a reusable http.ResponseWriter that discards the body, so
// that the benchmark measures the engine, not a recorder.
type benchWriter struct {
	header http.Header
	status int
}

func (w *benchWriter) Header() http.Header         { return w.header }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *benchWriter) WriteHeader(status int)      { w.status = status }

// serveBench serves b.N copies of req (with body) through h and checks
// each answer's status.
func serveBench(b *testing.B, h http.Handler, req *http.Request, body []byte, status int) {
	b.Helper()
	w := &benchWriter{header: http.Header{}}
	reader := bytes.NewReader(nil)
	b.ReportAllocs()
	cpu := testutil.ProcessCPU(b)
	for b.Loop() {
		clear(w.header)
		w.status = 0
		r := *req
		reader.Reset(body)
		r.Body = io.NopCloser(reader)
		h.ServeHTTP(w, &r)
		if w.status != status {
			b.Fatalf("status %d, want %d", w.status, status)
		}
	}
	// CPU time (garbage collection included) is what the engine costs,
	// and other load on the machine disturbs it less than ns/op.
	b.ReportMetric(float64(testutil.ProcessCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// benchEngine is the engine of a node: New's middleware and Basic
// authentication with the verification cache and login throttling, with
// the request log formatted (as JSON, at info) and discarded.
func benchEngine(b *testing.B) *gin.Engine {
	b.Helper()
	engine := New(Options{
		Logger:  slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Metrics: metrics.NewRegistry(),
	})
	store := newAdminStore(b)
	auth := ThrottleLogins(NewBcryptAuthenticator(store.lookup, BcryptOptions{DummyCost: bcrypt.MinCost}),
		throttle.NewGuard(throttle.GuardOptions{}))
	engine.Group("/api/provider", BasicAuth(auth)).POST("/accounts", benchAccountPost)
	return engine
}

func benchRequest(b *testing.B, method, target string, body []byte) *http.Request {
	b.Helper()
	req, err := http.NewRequest(method, "http://node"+target, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.RemoteAddr = "192.0.2.7:41234"
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.SetBasicAuth("sync7", "sync-secret")
	}
	return req
}

// BenchmarkEngine measures the per-request CPU and allocations of the
// engine's path outside the services: a cheap route (/healthz, middleware
// only), an account create's decoding and answer behind the middleware and
// Basic authentication (a cached verification), and the same handler on a
// bare gin engine for comparison.
func BenchmarkEngine(b *testing.B) {
	b.Run("healthz", func(b *testing.B) {
		serveBench(b, benchEngine(b), benchRequest(b, http.MethodGet, "/healthz", nil), nil, http.StatusOK)
	})
	b.Run("account-post", func(b *testing.B) {
		req := benchRequest(b, http.MethodPost, "/api/provider/accounts", benchAccountBody)
		serveBench(b, benchEngine(b), req, benchAccountBody, http.StatusOK)
	})
	b.Run("account-post-bare", func(b *testing.B) {
		gin.SetMode(gin.ReleaseMode)
		engine := gin.New()
		engine.POST("/api/provider/accounts", benchAccountPost)
		req := benchRequest(b, http.MethodPost, "/api/provider/accounts", benchAccountBody)
		serveBench(b, engine, req, benchAccountBody, http.StatusOK)
	})
}

package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"tvsm/httpapi/wire"
	"tvsm/internal/platform/metrics"
)

// HeaderRequestID carries the request id in requests and responses.
const HeaderRequestID = "X-Request-ID"

type requestIDKey struct{}

// requestContext is the context of a request that requestIDMiddleware
// saw: it carries the request id, the client's address and, once BasicAuth
// has run, the principal, in one layer: one allocation per request instead
// of a context.WithValue per value and a copy of the request per layer.
// RequestID and PrincipalFromContext find it by their keys.
type requestContext struct {
	context.Context
	id       string
	clientIP string // gin's ClientIP, computed once for the log and BasicAuth
	// principal is set by BasicAuth before any handler runs, on the
	// handler's goroutine (see setPrincipal).
	principal     Principal
	authenticated bool
}

func (c *requestContext) Value(key any) any {
	switch key.(type) {
	case requestIDKey:
		return c // a pointer: no allocation, unlike boxing the id
	case principalKey:
		if c.authenticated {
			return c
		}
	}
	return c.Context.Value(key)
}

// requestContextOf returns the requestContext ctx derives from, or nil.
func requestContextOf(ctx context.Context) *requestContext {
	rc, _ := ctx.Value(requestIDKey{}).(*requestContext)
	return rc
}

// RequestID returns the id of the request ctx belongs to, or "" outside one.
// Commands record it in their events' metadata.
func RequestID(ctx context.Context) string {
	switch v := ctx.Value(requestIDKey{}).(type) {
	case string: // WithRequestID
		return v
	case *requestContext:
		return v.id
	}
	return ""
}

// WithRequestID returns ctx carrying request id id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// headerRequestIDKey is HeaderRequestID in the canonical form net/http keys
// header maps by; indexing with it saves canonicalizing on every request.
var headerRequestIDKey = http.CanonicalHeaderKey(HeaderRequestID)

// requestIDMiddleware keeps the caller's X-Request-ID when it is sane (so a
// provider's sync job can correlate its logs with ours), otherwise makes one,
// and echoes it in the response.
func requestIDMiddleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		var id string
		if v := c.Request.Header[headerRequestIDKey]; len(v) > 0 {
			id = v[0]
		}
		if !saneRequestID(id) {
			id = newRequestID()
		}
		rc := &requestContext{Context: c.Request.Context(), id: id, clientIP: c.ClientIP()}
		c.Request = c.Request.WithContext(rc)
		c.Writer.Header()[headerRequestIDKey] = []string{id}
		c.Next()
	}
}

// newRequestID returns a random (version 4) UUID in its 36-character form.
func newRequestID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])  // never fails (crypto/rand.Read's contract)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	hex.Encode(s[9:13], u[4:6])
	hex.Encode(s[14:18], u[6:8])
	hex.Encode(s[19:23], u[8:10])
	hex.Encode(s[24:], u[10:])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return string(s[:])
}

// saneRequestID accepts 1 to 128 characters that are safe to log and echo:
// letters, digits and - _ . : + / =  (UUIDs, ULIDs, base64, trace ids).
func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '-', b == '_', b == '.', b == ':', b == '+', b == '/', b == '=':
		default:
			return false
		}
	}
	return true
}

// quietRoutes are polled by machines every few seconds; their successful
// requests are logged at debug level so they do not drown the log.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// requestLogMiddleware logs one line per request once it is answered: at
// error level for a server error, at info level for a client error, and at
// info level otherwise only with accessLog (else at debug level).
func requestLogMiddleware(logger *slog.Logger, accessLog bool) gin.HandlerFunc {
	var logPC atomic.Uintptr // see logRequest
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		status := c.Writer.Status()

		level := slog.LevelInfo
		switch {
		case status >= http.StatusInternalServerError && status != http.StatusServiceUnavailable:
			level = slog.LevelError
		case quietRoutes[c.FullPath()]:
			level = slog.LevelDebug
		case status < http.StatusBadRequest && !accessLog:
			level = slog.LevelDebug
		}
		ctx := c.Request.Context()
		if !logger.Enabled(ctx, level) {
			return // build nothing for a line that would be dropped
		}
		latency := time.Since(start)
		attrs := [...]slog.Attr{
			slog.String("method", c.Request.Method),
			// The path only: query strings may carry tokens (?token= on websockets).
			slog.String("path", c.Request.URL.Path),
			slog.Int("status", status),
			slog.Duration("latency", latency),
			slog.String("request_id", RequestID(ctx)),
			// No client address: an IP address is personal data, and a log
			// line cannot be erased.
			slog.Int("bytes", max(c.Writer.Size(), 0)),
			{}, // the error, if any
		}
		n := len(attrs) - 1
		if len(c.Errors) > 0 {
			attrs[n] = slog.String("error", c.Errors.Last().Error())
			n++
		}
		logRequest(ctx, logger, &logPC, level, attrs[:n])
	}
}

// logRequest is logger.LogAttrs(ctx, level, "http request", attrs...)
// without its runtime.Callers per line: the record's program counter
// (the source, for handlers that add it) is the same on every call, so it
// is taken once and kept in pc.
func logRequest(ctx context.Context, logger *slog.Logger, pc *atomic.Uintptr, level slog.Level, attrs []slog.Attr) {
	p := pc.Load()
	if p == 0 {
		var pcs [1]uintptr
		runtime.Callers(2, pcs[:]) // [runtime.Callers, logRequest]: the middleware
		p = pcs[0]
		pc.Store(p)
	}
	r := slog.NewRecord(time.Now(), level, "http request", p)
	r.AddAttrs(attrs...)
	_ = logger.Handler().Handle(ctx, r)
}

// recoveryMiddleware turns a handler panic into a logged 500 with the JSON
// error body, so one bad request never takes the node down.
func recoveryMiddleware(logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler {
				panic(rec) // net/http's sanctioned way to abort a response; it handles it
			}
			logger.ErrorContext(c.Request.Context(), "panic in handler",
				slog.String("panic", fmt.Sprint(rec)),
				slog.String("method", c.Request.Method),
				slog.String("path", c.Request.URL.Path),
				slog.String("request_id", RequestID(c.Request.Context())),
				slog.String("stack", string(debug.Stack())),
			)
			err := fmt.Errorf("panic: %v", rec)
			if c.Writer.Written() {
				// Too late for an error body; drop what was half sent.
				_ = c.Error(err)
				c.Abort()
				return
			}
			WriteError(c, Internal(err))
		}()
		c.Next()
	}
}

// httpMetrics are the request metrics of the API, labelled by route pattern
// (never the raw path, whose ids would explode the series count).
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	// series caches the children of requests and duration by
	// seriesKey, sparing a label lookup (validation, hashing, locking)
	// and a formatted status per request. It holds no more series than
	// the vectors do.
	series sync.Map
}

type seriesKey struct {
	method, route string
	status        int
}

type seriesMetrics struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	return &httpMetrics{
		requests: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tvsm_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "status"})),
		duration: metrics.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tvsm_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by method and route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"})),
		inFlight: metrics.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tvsm_http_requests_in_flight",
			Help: "HTTP requests being answered now (open websockets included).",
		})),
	}
}

func (m *httpMetrics) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		s := m.seriesOf(seriesKey{method: methodLabel(c.Request.Method), route: route, status: c.Writer.Status()})
		s.requests.Inc()
		s.duration.Observe(time.Since(start).Seconds())
	}
}

// seriesOf returns the series of k, creating them on first use.
func (m *httpMetrics) seriesOf(k seriesKey) *seriesMetrics {
	if s, ok := m.series.Load(k); ok {
		return s.(*seriesMetrics)
	}
	s, _ := m.series.LoadOrStore(k, &seriesMetrics{
		requests: m.requests.WithLabelValues(k.method, k.route, strconv.Itoa(k.status)),
		duration: m.duration.WithLabelValues(k.method, k.route),
	})
	return s.(*seriesMetrics)
}

// methodLabel bounds the method label: clients can send any token as a method.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// textMiddleware refuses a request whose path or query parameters, once
// percent-decoded, are not valid UTF-8 (a 400 naming the parameter, or
// "path"): handlers compare and store them as text, and invalid bytes
// would be compared as sent but shown as U+FFFD. Requests without escapes
// cost one scan of their path and query.
func textMiddleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		u := c.Request.URL
		if !utf8.ValidString(u.Path) {
			WriteError(c, ValidationFailed(map[string]string{"path": wire.MsgText}))
			return
		}
		if strings.IndexByte(u.RawQuery, '%') < 0 && utf8.ValidString(u.RawQuery) {
			return
		}
		values, _ := url.ParseQuery(u.RawQuery) // malformed parts are the handlers' to refuse
		bad := map[string]string{}
		for name, vs := range values {
			for _, v := range vs {
				if !utf8.ValidString(name) || !utf8.ValidString(v) {
					bad[strings.ToValidUTF8(name, "\uFFFD")] = wire.MsgText
				}
			}
		}
		if len(bad) > 0 {
			WriteError(c, ValidationFailed(bad))
		}
	}
}

package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"tvsm/internal/metrics"
)

// HeaderRequestID carries the request id in requests and responses.
const HeaderRequestID = "X-Request-ID"

type requestIDKey struct{}

// RequestID returns the id of the request ctx belongs to, or "" outside one.
// Commands record it in their events' metadata.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// WithRequestID returns ctx carrying request id id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestIDMiddleware keeps the caller's X-Request-ID when it is sane (so a
// provider's sync job can correlate its logs with ours), otherwise makes one,
// and echoes it in the response.
func requestIDMiddleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(HeaderRequestID)
		if !saneRequestID(id) {
			id = uuid.NewString()
		}
		c.Request = c.Request.WithContext(WithRequestID(c.Request.Context(), id))
		c.Header(HeaderRequestID, id)
		c.Next()
	}
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

// requestLogMiddleware logs one line per request once it is answered.
func requestLogMiddleware(logger *slog.Logger) gin.HandlerFunc {
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
		}
		attrs := []slog.Attr{
			slog.String("method", c.Request.Method),
			// The path only: query strings may carry tokens (?token= on websockets).
			slog.String("path", c.Request.URL.Path),
			slog.Int("status", status),
			slog.Duration("latency", time.Since(start)),
			slog.String("request_id", RequestID(c.Request.Context())),
			slog.String("client_ip", c.ClientIP()),
			slog.Int("bytes", max(c.Writer.Size(), 0)),
		}
		if len(c.Errors) > 0 {
			attrs = append(attrs, slog.String("error", c.Errors.Last().Error()))
		}
		logger.LogAttrs(c.Request.Context(), level, "http request", attrs...)
	}
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
		method := methodLabel(c.Request.Method)
		m.requests.WithLabelValues(method, route, strconv.Itoa(c.Writer.Status())).Inc()
		m.duration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
	}
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

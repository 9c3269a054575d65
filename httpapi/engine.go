// Package httpapi is tvsm's HTTP interface: the gin engine, its middleware
// (request ids, request log, metrics, panic recovery), the error body every
// API answers with, and the operational endpoints /healthz, /readyz and
// /metrics. It depends on ports (interfaces and funcs it is given), never on
// a storage backend.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadinessFunc reports nil when the node can serve traffic, or an error
// saying why not (for example "read model catching up").
type ReadinessFunc func(ctx context.Context) error

// MetricsRegistry is where the API registers its request metrics and what
// /metrics serves.
type MetricsRegistry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Options are the dependencies of the engine.
type Options struct {
	// Logger receives the request log and panics. Nil means slog.Default().
	Logger *slog.Logger
	// Metrics is served at /metrics. Nil means a fresh, empty registry.
	Metrics MetricsRegistry
	// MetricsAuth checks the Basic credentials /metrics asks for on this
	// engine, which serves it to superadmins only: the figures say how
	// much traffic each route has, which an API port faces anyone with.
	// Nil (without OpsElsewhere) leaves /metrics out of the engine.
	MetricsAuth Authenticator
	// Ready backs /readyz. Nil means always ready.
	Ready ReadinessFunc
	// AccessLog logs every answered request at info level. Without it,
	// requests answered below 400 are logged at debug level: at thousands
	// of requests a second a line each is a load of its own (about 1.5% of
	// an account create's CPU, formatting alone), and the metrics at
	// /metrics count every request by route and status anyway.
	AccessLog bool
	// OpsElsewhere leaves /metrics out of the engine: NewOps serves it, with
	// the profiler, on a listener of its own that devices do not reach.
	// (Mount leaves the profiler out when API.ProfilerElsewhere is set.)
	OpsElsewhere bool
	// Applied is the read model's progress: writes answer HeaderPosition
	// and requests sending HeaderMinPosition wait for it, at most
	// MinPositionTimeout (default 5 s) and then get 503. Nil: neither.
	Applied            AppliedProgress
	MinPositionTimeout time.Duration
}

// withDefaults fills in the defaults of opts' nil fields.
func (opts Options) withDefaults() Options {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	if opts.Ready == nil {
		opts.Ready = func(context.Context) error { return nil }
	}
	if opts.MinPositionTimeout <= 0 {
		opts.MinPositionTimeout = 5 * time.Second
	}
	return opts
}

// New builds the engine with the middleware and operational routes. API
// handlers are added to it by the packages that own them.
func New(opts Options) *gin.Engine {
	opts = opts.withDefaults()
	engine := newGin()
	// Order matters: the request log and metrics wrap recovery so they see
	// the 500 it writes.
	engine.Use(
		requestIDMiddleware(),
		requestLogMiddleware(opts.Logger, opts.AccessLog),
		newHTTPMetrics(opts.Metrics).middleware(),
		recoveryMiddleware(opts.Logger),
		textMiddleware(),
	)
	if opts.Applied != nil {
		engine.Use(positionsMiddleware(opts.Applied, opts.MinPositionTimeout))
	}
	mountProbes(engine, opts.Ready)
	if !opts.OpsElsewhere && opts.MetricsAuth != nil {
		engine.GET("/metrics", BasicAuth(opts.MetricsAuth), superadminOnly, metricsHandler(opts.Metrics, opts.Logger))
	}
	return engine
}

// NewOps builds the engine of the operators' listener: /metrics, /healthz,
// /readyz and Go's profiler under /debug/pprof/, without authentication
// (the listener's address is what keeps them private). Its requests are
// logged as the main engine's are, not counted: scrapes would count
// themselves.
func NewOps(opts Options) *gin.Engine {
	opts = opts.withDefaults()
	engine := newGin()
	engine.Use(requestIDMiddleware(), requestLogMiddleware(opts.Logger, opts.AccessLog), recoveryMiddleware(opts.Logger))
	mountProbes(engine, opts.Ready)
	engine.GET("/metrics", metricsHandler(opts.Metrics, opts.Logger))
	mountProfiler(engine.Group("/debug/pprof"))
	return engine
}

// newGin returns a bare engine set up as every tvsm listener's.
func newGin() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	// Never redirect: curl and PHP clients that do not follow a 301 or 307
	// report success while nothing happened. Handler answers a path with a
	// trailing slash as the path without it instead.
	engine.RedirectTrailingSlash = false
	engine.RedirectFixedPath = false
	// c.Done()/c.Value() fall back to the request's context, so handlers can
	// pass the gin context straight to code that takes a context.Context.
	engine.ContextWithFallback = true
	// Take the client address from the connection, not from X-Forwarded-For
	// headers anyone can send. (A trusted-proxy setting can come later.)
	_ = engine.SetTrustedProxies(nil)
	engine.NoRoute(noRoute)
	return engine
}

// mountProbes adds /healthz and /readyz.
func mountProbes(engine *gin.Engine, ready ReadinessFunc) {
	engine.GET("/healthz", healthz)
	engine.GET("/readyz", readyz(ready))
}

// metricsHandler serves registry in Prometheus's formats.
func metricsHandler(registry MetricsRegistry, logger *slog.Logger) gin.HandlerFunc {
	return gin.WrapH(promhttp.HandlerFor(registry, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	}))
}

func noRoute(c *gin.Context) {
	WriteError(c, NotFound("no route "+c.Request.Method+" "+c.Request.URL.Path))
}

// Handler serves engine with every path answered the same with and without
// one trailing slash (/api/provider/accounts/ is /api/provider/accounts),
// which TVIP's clients use, without a redirect. Servers serve this, not
// the engine itself.
func Handler(engine *gin.Engine) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > 1 && p[len(p)-1] == '/' {
			u := *r.URL
			u.Path = p[:len(p)-1]
			if rp := u.RawPath; len(rp) > 1 && rp[len(rp)-1] == '/' {
				u.RawPath = rp[:len(rp)-1]
			}
			r2 := *r
			r2.URL = &u
			r = &r2
		}
		engine.ServeHTTP(w, r)
	})
}

// Probe answers, rendered once: load balancers poll them every few seconds.
var (
	healthzBody = []byte(`{"status":"ok"}`)
	readyBody   = []byte(`{"status":"ready"}`)
)

// jsonContentType is what gin's c.JSON declares.
const jsonContentType = "application/json; charset=utf-8"

// healthz answers 200 while the process can run handlers at all (liveness).
func healthz(c *gin.Context) {
	c.Data(http.StatusOK, jsonContentType, healthzBody)
}

// readyz answers 200 when the node should receive traffic, else 503 with
// the reason (readiness: a load balancer takes the node out meanwhile).
func readyz(ready ReadinessFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := ready(c.Request.Context()); err != nil {
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, &Error{
				Status: http.StatusServiceUnavailable, Code: CodeNotReady, Cause: err.Error(),
			})
			return
		}
		c.Data(http.StatusOK, jsonContentType, readyBody)
	}
}

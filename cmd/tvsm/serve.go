package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/sealed"
	"tvsm/httpapi"
	"tvsm/internal/platform/config"
	"tvsm/internal/platform/connlimit"
	"tvsm/internal/platform/logging"
	"tvsm/internal/platform/metrics"
	"tvsm/internal/platform/throttle"
	"tvsm/internal/wiring/node"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
	"tvsm/wsgateway"
)

// serve is `tvsm serve`: load the configuration, then run the node until ctx
// ends (SIGINT/SIGTERM). Logs go to stderr.
func serve(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) error {
	cfg, err := config.Load("serve", args, lookupEnv, stderr)
	if err != nil {
		var cmdLine *config.CommandLineError
		if errors.Is(err, flag.ErrHelp) || errors.As(err, &cmdLine) {
			return err
		}
		return &configError{err: err}
	}
	logger := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	return runNode(ctx, cfg, logger)
}

// runNode opens the backends, serves HTTP until ctx ends, then drains
// in-flight requests (bounded by cfg.ShutdownTimeout) and closes the backends.
func runNode(ctx context.Context, cfg config.Config, logger *slog.Logger) (err error) {
	logger.Info("starting tvsm", "version", versionString(), "config", cfg)
	var opened closeStack
	defer func() { err = errors.Join(err, opened.closeAll()) }()

	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	facts, err := openStats(ctx, cfg)
	if err != nil {
		return err
	}
	if facts != nil {
		opened.push("statistics", facts.Close)
	}
	store, err := openEventStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	opened.push("event store", store.Close)
	reg := metrics.NewRegistry()
	n, err := startNode(ctx, cfg, logger, reg, store, facts)
	if err != nil {
		return err
	}
	opened.push("node", n.Close)
	return serveHTTP(ctx, cfg, endpoints(cfg, n, reg), logger)
}

// closeStack closes what runNode opened, newest first, so that the node
// closes before the stores it runs on.
type closeStack []func() error

// push registers how to close what, named in the error.
func (s *closeStack) push(what string, closer func() error) {
	*s = append(*s, func() error {
		if err := closer(); err != nil {
			return fmt.Errorf("close %s: %w", what, err)
		}
		return nil
	})
}

// closeAll closes everything pushed, newest first, once, and joins the
// errors.
func (s *closeStack) closeAll() error {
	var errs []error
	for len(*s) > 0 {
		last := len(*s) - 1
		closeLast := (*s)[last]
		*s = (*s)[:last]
		errs = append(errs, closeLast())
	}
	return errors.Join(errs...)
}

// startNode starts the node on store and facts (nil: the node's embedded
// statistics) as cfg says.
func startNode(ctx context.Context, cfg config.Config, logger *slog.Logger, reg *prometheus.Registry, store eventstore.Store, facts *clickhouse.Store) (*node.Node, error) {
	var master *sealed.MasterKey
	if cfg.MasterKey != "" {
		var err error
		if master, err = sealed.ParseMasterKey([]byte(cfg.MasterKey)); err != nil {
			return nil, &configError{fmt.Errorf("master_key: %w", err)}
		}
	}
	n, err := node.Start(ctx, store, node.Options{
		DataDir:               cfg.DataDir,
		MasterKey:             master,
		MasterKeyFile:         cfg.MasterKeyFile,
		Version:               versionString(),
		EraseDeletedAfter:     cfg.EraseDeletedAfter,
		Logger:                logger,
		Metrics:               reg,
		AdminLogin:            cfg.AdminLogin,
		AdminPassword:         cfg.AdminPassword,
		ReadYourWritesTimeout: cfg.ReadYourWritesTimeout,
		AccessLog:             cfg.AccessLog,
		NodeName:              cfg.NodeName,
		EndOfDay:              cfg.EndOfDayLocation,
		Stats:                 factStore(facts),
		StatsName:             statsName(facts),
		Billing: node.BillingOptions{
			Enabled: cfg.HasFeature(config.FeatureBilling), HeaderPrefix: cfg.BillingHeaderPrefix, Timeout: cfg.BillingTimeout,
			AllowedNetworks: cfg.BillingAllowedNetworks,
		},
		AdminLogins: throttle.GuardOptions{
			LoginLimit: cfg.AdminLoginFailures, AddressLimit: cfg.AdminAddressFailures, LoginTotalLimit: cfg.AdminLoginTotalFailures,
		},
		DeviceLogins: throttle.GuardOptions{
			LoginLimit: cfg.DeviceLoginFailures, AddressLimit: cfg.DeviceAddressFailures, LoginTotalLimit: cfg.DeviceLoginTotalFailures,
		},
		PasswordChecks:     cfg.PasswordChecks,
		PasswordCheckWait:  cfg.PasswordCheckWait,
		OpsListener:        cfg.OpsHTTPAddr != "",
		Sockets:            wsgateway.Options{MaxPerAddress: cfg.MaxWebsocketsPerAddress},
		DefaultDeviceLimit: cmp.Or(cfg.DefaultDeviceLimit, -1), // 0 is none here, the default there
	})
	if err != nil {
		return nil, err
	}
	if n.GeneratedPassword != "" {
		// Printed once, on the first start of an empty store: it is not
		// stored anywhere in clear text.
		logger.Warn("created the first superadmin; note its password, it is not shown again",
			"login", cmp.Or(cfg.AdminLogin, node.DefaultAdminLogin), "password", n.GeneratedPassword)
	}
	return n, nil
}

// endpoint is a listener to serve: the API's, or the operators' one.
type endpoint struct {
	name, addr string
	handler    http.Handler
	// limit caps the listener's connections (nil: no caps).
	limit func(net.Listener) net.Listener
	// states counts its connections by state (nil: not counted).
	states *connStates
}

// endpoints are the listeners of n as cfg says. The API's, which devices
// and the internet reach, has the connection caps; the operators' one is
// private.
func endpoints(cfg config.Config, n *node.Node, reg prometheus.Registerer) []endpoint {
	eps := []endpoint{{name: "api", addr: cfg.HTTPAddr, handler: n.Handler(), limit: func(l net.Listener) net.Listener {
		capped := connlimit.Wrap(l, connlimit.Options{
			Max: cfg.MaxConnections, PerAddress: cfg.MaxConnectionsPerAddress, Refusal: httpapi.ConnectionRefusal,
		})
		registerConnectionMetrics(reg, capped)
		return capped
	}, states: newConnStates(reg)}}
	if n.Ops != nil {
		eps = append(eps, endpoint{name: "ops", addr: cfg.OpsHTTPAddr, handler: httpapi.Handler(n.Ops)})
	}
	return eps
}

// serving is a server started on an endpoint.
type serving struct {
	name   string
	server *http.Server
	served chan error // Serve's result
}

// serveHTTP serves each endpoint until ctx ends, then shuts the servers
// down. It returns early if one fails to listen or fails later.
func serveHTTP(ctx context.Context, cfg config.Config, eps []endpoint, logger *slog.Logger) error {
	listeners := make([]net.Listener, 0, len(eps))
	for _, ep := range eps {
		l, err := net.Listen("tcp", ep.addr)
		if err != nil {
			for _, opened := range listeners {
				_ = opened.Close()
			}
			return fmt.Errorf("listen on %s: %w", ep.addr, err)
		}
		if ep.limit != nil {
			l = ep.limit(l)
		}
		listeners = append(listeners, l)
	}
	running := make([]serving, len(eps))
	failed := make(chan error, len(eps))
	for i, ep := range eps {
		s := serving{name: ep.name, server: newHTTPServer(ep.handler, logger), served: make(chan error, 1)}
		if ep.states != nil {
			s.server.ConnState = ep.states.track
		}
		running[i] = s
		go func() {
			err := s.server.Serve(listeners[i])
			s.served <- err
			if !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("http server %s: %w", s.name, err)
			}
		}()
		logger.Info("listening", "listener", ep.name, "addr", listeners[i].Addr().String())
	}

	select {
	case err := <-failed:
		for _, s := range running {
			_ = s.server.Close()
		}
		return err
	case <-ctx.Done():
	}
	return shutDown(running, cfg.ShutdownTimeout, logger)
}

// shutDown drains the servers' in-flight requests within timeout, then
// cuts off what is left.
func shutDown(running []serving, timeout time.Duration, logger *slog.Logger) error {
	logger.Info("shutting down", "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	for _, s := range running {
		if err := s.server.Shutdown(ctx); err != nil {
			// Requests still running at the deadline are cut off; that is
			// what the timeout is for, not a failure of the node.
			logger.Warn("graceful shutdown timed out; closing remaining connections", "listener", s.name, "error", err)
			_ = s.server.Close()
		}
		if err := <-s.served; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("http server %s: %w", s.name, err))
		}
	}
	logger.Info("stopped")
	return errors.Join(errs...)
}

// registerConnectionMetrics exports the connections l holds and refuses.
func registerConnectionMetrics(reg prometheus.Registerer, l *connlimit.Listener) {
	metrics.Register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tvsm_http_connections", Help: "Connections open on the API listener, websockets included.",
	}, func() float64 { return float64(l.Open()) }))
	for _, r := range []connlimit.Reason{connlimit.Total, connlimit.PerAddress} {
		metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tvsm_http_connections_refused_total", ConstLabels: prometheus.Labels{"cap": r.String()},
			Help: "Connections the API listener refused at once: max_connections (total) or max_connections_per_address (address).",
		}, func() float64 { return float64(l.Refused(r)) }))
	}
}

// connStates counts a listener's HTTP connections by their state: new
// (no request yet), active (a request being served) and idle (kept
// alive between requests). Websockets leave it when they are hijacked;
// tvsm_ws_connections counts them.
type connStates struct {
	mu    sync.Mutex
	state map[net.Conn]http.ConnState
}

func newConnStates(reg prometheus.Registerer) *connStates {
	c := &connStates{state: map[net.Conn]http.ConnState{}}
	for _, s := range []http.ConnState{http.StateNew, http.StateActive, http.StateIdle} {
		metrics.Register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tvsm_http_connections_by_state", ConstLabels: prometheus.Labels{"state": s.String()},
			Help: "HTTP connections of the API listener by state: new (no request yet), active (serving a request), idle (kept alive); websockets are tvsm_ws_connections.",
		}, func() float64 { return float64(c.count(s)) }))
	}
	return c
}

// track is http.Server.ConnState.
func (c *connStates) track(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(c.state, conn)
	default:
		c.state[conn] = s
	}
}

// count returns how many connections are in state s.
func (c *connStates) count(s http.ConnState) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cs := range c.state {
		if cs == s {
			n++
		}
	}
	return n
}

// closableStore is an event store backend the node owns and closes.
type closableStore interface {
	eventstore.Store
	Close() error
}

// openEventStore opens the backend cfg.EventStore names.
func openEventStore(ctx context.Context, cfg config.Config, logger *slog.Logger) (closableStore, error) {
	if cfg.EventStore == config.EventStoreEmbedded {
		dir := filepath.Join(cfg.DataDir, "events")
		store, err := embedded.Open(dir, embedded.Options{Logger: logger.With("component", "eventstore"), CommitDelay: commitDelay(cfg.CommitDelay)})
		if err != nil {
			return nil, fmt.Errorf("open embedded event store in %s: %w", dir, err)
		}
		return store, nil
	}
	// config only lets EventStoreDB URLs through besides "embedded". Open
	// waits for the server to answer (a node cannot build its read model
	// without it).
	store, err := esdb.Open(ctx, cfg.EventStore, esdb.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("event store: %w", err)
	}
	return store, nil
}

// openStats opens the ClickHouse fact store cfg.Stats names (it creates or
// migrates the schema); nil means the node's embedded one.
func openStats(ctx context.Context, cfg config.Config) (*clickhouse.Store, error) {
	if cfg.Stats == config.StatsEmbedded {
		return nil, nil
	}
	store, err := clickhouse.Open(ctx, cfg.Stats)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	return store, nil
}

// factStore is the node's Stats option for s (a nil *Store is no store).
func factStore(s *clickhouse.Store) stats.FactStore {
	if s == nil {
		return nil
	}
	return s
}

func statsName(s *clickhouse.Store) string {
	if s == nil {
		return ""
	}
	return "clickhouse"
}

// newHTTPServer configures the timeouts the server needs facing the internet.
func newHTTPServer(handler http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler: handler,
		// Slow-header clients (slowloris) cannot hold connections open.
		ReadHeaderTimeout: 10 * time.Second,
		// Room for the largest bulk-sync body on a slow link.
		ReadTimeout: 2 * time.Minute,
		// No WriteTimeout: websockets and long statistics exports stream for
		// longer than any global bound. Routes that want one set it with
		// http.ResponseController; hijacked websockets clear the read
		// deadline ReadTimeout left on their connection.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// commitDelay maps the configured commit_delay, where 0 means none, to
// embedded.Options.CommitDelay, where 0 means one fsync's measured time.
func commitDelay(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

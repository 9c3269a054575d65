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
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/internal/platform/config"
	"tvsm/internal/platform/logging"
	"tvsm/internal/platform/metrics"
	"tvsm/internal/platform/throttle"
	"tvsm/internal/wiring/node"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
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
	store, err := openEventStore(cfg, logger)
	if err != nil {
		return err
	}
	opened.push("event store", store.Close)
	n, err := startNode(ctx, cfg, logger, store, facts)
	if err != nil {
		return err
	}
	opened.push("node", n.Close)
	return serveHTTP(ctx, cfg, n.Engine, logger)
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
func startNode(ctx context.Context, cfg config.Config, logger *slog.Logger, store eventstore.Store, facts *clickhouse.Store) (*node.Node, error) {
	n, err := node.Start(ctx, store, node.Options{
		DataDir:               cfg.DataDir,
		Logger:                logger,
		Metrics:               metrics.NewRegistry(),
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
		},
		AdminLogins:  throttle.GuardOptions{LoginLimit: cfg.AdminLoginFailures, AddressLimit: cfg.AdminAddressFailures},
		DeviceLogins: throttle.GuardOptions{LoginLimit: cfg.DeviceLoginFailures, AddressLimit: cfg.DeviceAddressFailures},
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

// serveHTTP serves handler on cfg.HTTPAddr until ctx ends, then shuts the
// server down. It returns early if the server fails.
func serveHTTP(ctx context.Context, cfg config.Config, handler http.Handler, logger *slog.Logger) error {
	listener, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	server := newHTTPServer(handler, logger)
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	logger.Info("listening", "addr", listener.Addr().String())

	if err := waitForStop(ctx, served); err != nil {
		return err
	}
	return shutDown(server, served, cfg.ShutdownTimeout, logger)
}

// waitForStop waits until ctx ends (SIGINT/SIGTERM) or the server fails.
func waitForStop(ctx context.Context, served <-chan error) error {
	select {
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
		return nil
	}
}

// shutDown drains the server's in-flight requests within timeout, then
// cuts off what is left.
func shutDown(server *http.Server, served <-chan error, timeout time.Duration, logger *slog.Logger) error {
	logger.Info("shutting down", "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := server.Shutdown(ctx); err != nil {
		// Requests still running at the deadline are cut off; that is what
		// the timeout is for, not a failure of the node.
		logger.Warn("graceful shutdown timed out; closing remaining connections", "error", err)
		_ = server.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// closableStore is an event store backend the node owns and closes.
type closableStore interface {
	eventstore.Store
	Close() error
}

// openEventStore opens the backend cfg.EventStore names.
func openEventStore(cfg config.Config, logger *slog.Logger) (closableStore, error) {
	if cfg.EventStore == config.EventStoreEmbedded {
		dir := filepath.Join(cfg.DataDir, "events")
		store, err := embedded.Open(dir, embedded.Options{Logger: logger.With("component", "eventstore"), CommitDelay: commitDelay(cfg.CommitDelay)})
		if err != nil {
			return nil, fmt.Errorf("open embedded event store in %s: %w", dir, err)
		}
		return store, nil
	}
	// config only lets esdb URLs through besides "embedded".
	return nil, errors.New("event store: esdb backend not built yet")
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

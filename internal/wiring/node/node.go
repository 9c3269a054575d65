// Package node assembles one tvsm node from an event store: the event
// registry, the read model (restored from its snapshot, then caught up from
// the log), the command executor, the services and the HTTP engine. `tvsm
// serve` and the black-box tests build nodes the same way, so the tests
// exercise what operators run.
package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/robfig/cron/v3"
	"golang.org/x/crypto/bcrypt"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/httpapi"
	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/devauth"
	"tvsm/internal/app"
	"tvsm/internal/platform/metrics"
	"tvsm/internal/platform/schedule"
	"tvsm/internal/platform/throttle"
	"tvsm/internal/service"
	"tvsm/projections"
	"tvsm/projections/readmodel"
	"tvsm/projections/stats"
	"tvsm/projections/stats/embedded"
	"tvsm/wsgateway"
	"tvsm/wsgateway/dispatch"
)

// DefaultAdminLogin is the login of the first superadmin when none is
// configured.
const DefaultAdminLogin = "admin"

// Options configure a node. DataDir is required.
type Options struct {
	// DataDir holds the read model snapshot (DataDir/readmodel.snapshot).
	DataDir string
	Logger  *slog.Logger
	// Metrics is served at /metrics, with the node's own figures (default
	// a fresh registry).
	Metrics httpapi.MetricsRegistry
	// AdminLogin (default DefaultAdminLogin) and AdminPassword create the
	// first superadmin when there is no admin yet. An empty password is
	// generated and reported in Node.GeneratedPassword (to be printed once).
	AdminLogin    string
	AdminPassword string
	// BcryptCost hashes admin passwords (default bcrypt.DefaultCost).
	BcryptCost            int
	ReadYourWritesTimeout time.Duration
	// AccessLog logs every answered HTTP request at info level
	// (httpapi.Options.AccessLog).
	AccessLog bool
	// SnapshotSpec is the cron spec (UTC) of read model snapshots
	// (default every five minutes); snapshots are also written on Close.
	SnapshotSpec string
	// CatchUpTimeout bounds how long Start waits for the read model to reach
	// the head of the log (default 10 minutes).
	CatchUpTimeout time.Duration
	Clock          func() time.Time
	// AdminLogins and DeviceLogins throttle failed logins of the Basic-auth
	// APIs and of the Device API (zero fields: 5 per login and 20 per
	// address a minute; the clock defaults to Clock).
	AdminLogins  throttle.GuardOptions
	DeviceLogins throttle.GuardOptions
	// DeviceTokenTTL is the lifetime of device tokens (default 30 days).
	DeviceTokenTTL time.Duration
	// Sockets configures the device websocket hub; the command dispatcher
	// installs its hooks in front of any set here.
	Sockets wsgateway.Options
	// Timers drives the dispatcher's delivery rules and timers (default the
	// system clock); tests pass a testutil.Clock.
	Timers schedule.Clock
	// NodeName names this node in delivery claims and connection events
	// (default the host name).
	NodeName string
	// Billing configures the billing proxy (off by default).
	Billing BillingOptions
	// Stats is the statistics fact store (ClickHouse); nil means the
	// embedded one in DataDir/stats, opened and closed by the node.
	// StatsName names it in the projector's snapshot file.
	Stats     stats.FactStore
	StatsName string
	// EndOfDay is the time zone whose midnight closes a statistics day
	// (default UTC).
	EndOfDay *time.Location
}

// Node is a running node. Close stops it.
type Node struct {
	Store    eventstore.Store
	Registry *domain.Registry
	Executor *app.Executor
	Model    *readmodel.Model
	Runner   *projections.Runner
	Service  *service.Service
	Engine   *gin.Engine
	// Hub holds the devices' websockets (GET /api/device/ws); Dispatcher
	// delivers provider commands to them.
	Hub        *wsgateway.Hub
	Dispatcher *dispatch.Dispatcher
	// Stats answers the Statistics API from the facts StatsRunner projects.
	Stats       *stats.Service
	StatsRunner *projections.Runner
	// Auth checks admins' Basic credentials, throttled: routes mounted
	// outside httpapi.Mount use httpapi.BasicAuth(n.Auth). Device routes use
	// httpapi.DeviceAuth(n.Service).
	Auth httpapi.Authenticator
	// GeneratedPassword is the superadmin password Start generated, if any.
	GeneratedPassword string

	log      *slog.Logger
	snapPath string
	snapMu   sync.Mutex
	snapPos  eventstore.Position // position of the last snapshot written or loaded
	cron     *cron.Cron
	stop     context.CancelFunc
	done     chan struct{}

	gatewayDone   chan struct{} // closed when the dispatcher's Run returned
	journal       *billing.Journal
	billingClient *billing.Client
	statsDone     chan struct{} // closed when the statistics runner returned
	statsSched    *stats.Scheduler
	ownFacts      *embedded.Store // the embedded fact store the node opened
}

// Start builds a node on store and returns once its read model has caught
// up with the log (so that admin bootstrap and the first reads see every
// write made before).
func Start(ctx context.Context, store eventstore.Store, opts Options) (*Node, error) {
	if opts.DataDir == "" {
		return nil, errors.New("node: DataDir is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.AdminLogin == "" {
		opts.AdminLogin = DefaultAdminLogin
	}
	if opts.BcryptCost <= 0 {
		opts.BcryptCost = bcrypt.DefaultCost
	}
	if opts.SnapshotSpec == "" {
		opts.SnapshotSpec = "@every 5m"
	}
	if opts.CatchUpTimeout <= 0 {
		opts.CatchUpTimeout = 10 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.NewRegistry()
	}
	if err := os.MkdirAll(opts.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n := &Node{Store: store, log: opts.Logger, snapPath: filepath.Join(opts.DataDir, "readmodel.snapshot"), done: make(chan struct{})}

	n.Registry = domain.NewRegistry()
	domain.RegisterEvents(n.Registry)
	app.RegisterEvents(n.Registry)
	devauth.RegisterEvents(n.Registry)

	n.Model = readmodel.New(n.Registry)
	started := time.Now()
	from, err := n.Model.LoadSnapshot(n.snapPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		from = eventstore.Beginning
	case err != nil:
		// A damaged snapshot is only a cache of the log: rebuild from it.
		n.log.Warn("read model snapshot unusable; replaying the whole log", "path", n.snapPath, "error", err)
		n.Model = readmodel.New(n.Registry)
		from = eventstore.Beginning
	default:
		n.snapPos = from
		n.log.Info("read model snapshot loaded", "position", from.String(), "took", time.Since(started))
	}

	caughtUp := make(chan struct{})
	var once sync.Once
	n.Runner = projections.NewRunner(store, n.Registry, n.Model, projections.SnapshotCheckpoints{Position: from}, projections.RunnerOptions{
		Logger:     n.log,
		OnCaughtUp: func() { once.Do(func() { close(caughtUp) }) },
	})
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	n.stop = stop
	go func() {
		defer close(n.done)
		_ = n.Runner.Run(runCtx)
	}()
	if err := waitCaughtUp(ctx, caughtUp, opts.CatchUpTimeout); err != nil {
		n.shutdownRunner()
		return nil, err
	}
	n.log.Info("read model caught up", "position", n.Runner.Progress().Position().String(), "took", time.Since(started))

	if n.Executor, err = app.New(store, n.Registry, app.Options{Clock: opts.Clock}); err != nil {
		n.shutdownRunner()
		return nil, fmt.Errorf("node: %w", err)
	}
	tokens, err := deviceTokens(ctx, store, n.Registry, opts)
	if err != nil {
		n.shutdownRunner()
		return nil, err
	}
	n.Service, err = service.New(service.Config{
		Executor: n.Executor, Model: n.Model, Applied: n.Runner.Progress(), Store: store, Registry: n.Registry,
		ReadYourWritesTimeout: opts.ReadYourWritesTimeout, BcryptCost: opts.BcryptCost, Logger: n.log, Clock: opts.Clock,
		DeviceTokens: tokens,
	})
	if err != nil {
		n.shutdownRunner()
		return nil, fmt.Errorf("node: %w", err)
	}
	if n.GeneratedPassword, err = n.Service.Bootstrap(ctx, opts.AdminLogin, opts.AdminPassword); err != nil {
		n.shutdownRunner()
		return nil, fmt.Errorf("node: admin bootstrap: %w", err)
	}

	if err := n.startStats(runCtx, opts); err != nil {
		n.abort()
		return nil, fmt.Errorf("node: %w", err)
	}
	if err := n.startGateway(runCtx, opts); err != nil {
		n.abort()
		return nil, fmt.Errorf("node: %w", err)
	}
	billingOpts, err := n.billingProxy(opts)
	if err != nil {
		n.abort()
		return nil, fmt.Errorf("node: billing: %w", err)
	}
	registerGatewayMetrics(opts.Metrics, n.Dispatcher, n.journal)
	n.Engine = httpapi.New(httpapi.Options{Logger: n.log, Metrics: opts.Metrics, Ready: n.ready, AccessLog: opts.AccessLog})
	n.Auth = httpapi.ThrottleLogins(
		httpapi.NewBcryptAuthenticator(n.credentials, httpapi.BcryptOptions{DummyCost: opts.BcryptCost}),
		throttle.NewGuard(withClock(opts.AdminLogins, opts.Clock)))
	httpapi.Mount(n.Engine, httpapi.API{
		Auth:         n.Auth,
		Admin:        n.Service,
		Provider:     n.Service,
		Device:       n.Service,
		Sockets:      n.Hub,
		DeviceLogins: throttle.NewGuard(withClock(opts.DeviceLogins, opts.Clock)),
		Commands:     n.Service,
		Billing:      billingOpts,
	})
	if err := httpapi.MountStats(n.Engine.Group("/api/stats"), n.Stats, httpapi.BasicAuth(n.Auth)); err != nil {
		n.abort()
		return nil, fmt.Errorf("node: %w", err)
	}

	n.cron = schedule.NewCron(n.log)
	if _, err := n.cron.AddFunc(opts.SnapshotSpec, func() { n.snapshot() }); err != nil {
		n.abort()
		return nil, fmt.Errorf("node: snapshot schedule %q: %w", opts.SnapshotSpec, err)
	}
	n.cron.Start()
	return n, nil
}

// deviceTokens returns the signer of device tokens, with the key every
// node on store shares (created by the first node to start).
func deviceTokens(ctx context.Context, store eventstore.Store, reg *domain.Registry, opts Options) (*devauth.Signer, error) {
	key, err := devauth.LoadKey(ctx, store, reg, opts.Clock())
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	s, err := devauth.NewSigner(key, devauth.Options{TTL: opts.DeviceTokenTTL, Clock: opts.Clock})
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	return s, nil
}

// withClock gives o the node's clock unless it has its own.
func withClock(o throttle.GuardOptions, clock func() time.Time) throttle.GuardOptions {
	if o.Clock == nil {
		o.Clock = clock
	}
	return o
}

func waitCaughtUp(ctx context.Context, caughtUp <-chan struct{}, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-caughtUp:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node: waiting for the read model to catch up: %w", ctx.Err())
	case <-t.C:
		return fmt.Errorf("node: read model did not catch up within %v", timeout)
	}
}

// credentials looks an admin up in the read model for Basic auth.
func (n *Node) credentials(login string) (hash string, provider *int64, ok bool) {
	a, ok := n.Model.Admin(login)
	if !ok {
		return "", nil, false
	}
	return a.PasswordHash, a.Provider, true
}

// ready backs /readyz: the read model must have caught up with the log.
func (n *Node) ready(context.Context) error {
	if !n.Runner.Stats().CaughtUp {
		return errors.New("read model catching up")
	}
	if !n.Dispatcher.CaughtUp() {
		return errors.New("command dispatcher catching up")
	}
	return nil
}

// snapshot writes the read model snapshot if the model moved since the last
// one. Snapshots are a start-up cache: a failure is logged, not fatal.
func (n *Node) snapshot() {
	n.snapMu.Lock()
	defer n.snapMu.Unlock()
	if !n.Model.Position().After(n.snapPos) {
		return
	}
	started := time.Now()
	pos, err := n.Model.WriteSnapshot(n.snapPath)
	if err != nil {
		n.log.Warn("read model snapshot failed", "path", n.snapPath, "error", err)
		return
	}
	n.snapPos = pos
	n.log.Debug("read model snapshot written", "position", pos.String(), "took", time.Since(started))
}

// abort undoes a Start that failed after the runners started.
func (n *Node) abort() {
	n.closeGateway()
	n.shutdownRunner()
	n.closeStats()
}

func (n *Node) shutdownRunner() {
	n.stop()
	<-n.done
}

// Close stops the schedules, closes the devices' websockets (the dispatcher
// saves its pending commands), stops the read model runner and writes a
// final snapshot, so the next start replays only what comes after it. It
// does not close the store, which the caller opened.
func (n *Node) Close() error {
	ctx := n.cron.Stop()
	<-ctx.Done()
	n.closeGateway()
	n.shutdownRunner()
	n.closeStats()
	n.snapshot()
	return nil
}

// Package node assembles one tvsm node from an event store: the event
// registry, the read model (restored from its snapshot, then caught up from
// the log), the command executor, the services and the HTTP engine. `tvsm
// serve` and the black-box tests build nodes the same way, so the tests
// exercise what operators run.
package node

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/sealed"
	"tvsm/httpapi"
	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/devauth"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/internal/platform/metrics"
	"tvsm/internal/platform/schedule"
	"tvsm/internal/platform/supervise"
	"tvsm/internal/platform/throttle"
	"tvsm/projections"
	"tvsm/projections/readmodel"
	"tvsm/projections/stats"
	"tvsm/wsgateway"
	"tvsm/wsgateway/dispatch"
)

// DefaultAdminLogin is the login of the first superadmin when none is
// configured.
const DefaultAdminLogin = "admin"

// DefaultDeviceLimit is how many devices an account may bind when neither
// it nor its provider sets a limit: households have a handful, and one
// account's credentials cannot bind thousands.
const DefaultDeviceLimit = 100

// Options configure a node. DataDir is required.
type Options struct {
	// DataDir holds the read model snapshot (DataDir/readmodel.snapshot).
	DataDir string
	Logger  *slog.Logger
	// Metrics is served at /metrics, with the node's own figures (default
	// a fresh registry): on Ops with OpsListener, else on Engine to
	// superadmins only.
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
	// OpsListener moves /metrics and the profiler from Engine to Ops, for a
	// listener of their own (httpapi.NewOps), where they need no
	// credentials.
	OpsListener bool
	// SnapshotSpec is the cron spec (UTC) of read model snapshots
	// (default every five minutes); snapshots are also written on Close.
	SnapshotSpec string
	// CatchUpTimeout bounds how long Start waits for the read model to reach
	// the head of the log (default 10 minutes).
	CatchUpTimeout time.Duration
	// BackupReadModelWait bounds how long a backup, once it has copied the
	// log, waits for the read model to apply the copy's last event (default
	// two minutes): a read model that cannot apply an event retries it
	// forever, and the backup is then refused (backup.ErrReadModelBehind)
	// rather than held.
	BackupReadModelWait time.Duration
	Clock               func() time.Time
	// AdminLogins and DeviceLogins throttle failed logins of the Basic-auth
	// APIs and of the Device API (zero fields: 5 per login and 20 per
	// address a minute; the clock defaults to Clock).
	AdminLogins  throttle.GuardOptions
	DeviceLogins throttle.GuardOptions
	// DefaultDeviceLimit is the device limit of accounts when neither the
	// account nor its provider sets devices_per_account_limit: 0 means
	// DefaultDeviceLimit, negative none.
	DefaultDeviceLimit int
	// PasswordChecks bounds the admin password checks (bcrypt) running at
	// once; more wait their turn (httpapi.BcryptOptions.MaxChecks: 0 is half
	// the cores, negative no bound), at most PasswordCheckWait (0: the
	// default, two seconds) before they are answered 503.
	PasswordChecks    int
	PasswordCheckWait time.Duration
	// PasswordCache bounds the cache of verified admin credentials
	// (httpapi.BcryptOptions.CacheSize: 0 is the default, negative none).
	PasswordCache int
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
	// MasterKey wraps the subscribers' data keys; nil reads it from
	// MasterKeyFile, and without that a node on the embedded store uses
	// (and on its first start generates) DefaultMasterKeyFile(DataDir).
	// Nodes on a shared store (EventStoreDB) must be given the same one.
	MasterKey     *sealed.MasterKey
	MasterKeyFile string
	// EraseDeletedAfter, when positive, erases the accounts deleted
	// longer ago than this, by a job on RetentionSpec (a cron spec, UTC;
	// default DefaultRetentionSpec).
	EraseDeletedAfter time.Duration
	RetentionSpec     string
	// Keys is the store of the subscribers' data keys; nil picks the key
	// streams of a store that can tombstone them, else a key file in
	// DataDir/keys.
	Keys sealed.KeyStore
	// StatsBatchInterval paces the statistics projection's live batches
	// (default StatsBatchInterval; negative: not paced, for tools that wait
	// for the statistics after each of their steps).
	StatsBatchInterval time.Duration
	// Version is the tvsm version the node's backups name.
	Version string
	// AdminSessionIdle and AdminSessionMaxAge bound the admin console's
	// sessions: how long one lasts without a request, and at most
	// (defaults httpapi.DefaultSessionIdle and DefaultSessionMaxAge).
	AdminSessionIdle   time.Duration
	AdminSessionMaxAge time.Duration
}

// Node is a running node. Close stops it.
type Node struct {
	// Store is the store the node was started on, its appends timed
	// (tvsm_eventstore_append_seconds).
	Store    eventstore.Store
	Registry *domain.Registry
	Executor *app.Executor
	Model    *readmodel.Model
	Runner   *projections.Runner
	// Commands and Queries are the application: every write and read of
	// the Provider, Admin and Device APIs.
	Commands *command.Commands
	Queries  *query.Queries
	Engine   *gin.Engine
	// Ops serves /metrics, the probes and the profiler when
	// Options.OpsListener is set; nil otherwise.
	Ops *gin.Engine
	// Hub holds the devices' websockets (GET /api/device/ws); Dispatcher
	// delivers provider commands to them.
	Hub        *wsgateway.Hub
	Dispatcher *dispatch.Dispatcher
	// Stats answers the Statistics API from the facts StatsRunner projects;
	// StatsScheduler closes the days by the clock.
	Stats          *query.Statistics
	StatsRunner    *projections.Runner
	StatsScheduler *stats.Scheduler
	// Auth checks admins' Basic credentials, throttled, and Sessions the
	// admin console's session tokens: routes mounted outside httpapi.Mount
	// use httpapi.AdminAuth(n.Auth, n.Sessions). Device routes use
	// httpapi.DeviceAuth(n.Queries.Sessions).
	Auth     httpapi.Authenticator
	Sessions *httpapi.Sessions
	// GeneratedPassword is the superadmin password Start generated, if any.
	GeneratedPassword string

	// Rebuilds runs rebuilds and checks of the read model and the
	// statistics (POST /api/admin/rebuilds).
	Rebuilds *Rebuilds
	// Backups stages online backups of the event store (POST
	// /api/admin/backups).
	Backups *Backups
	// Keys holds the subscribers' data keys: Store seals personal values
	// with them, and an erasure destroys one.
	Keys *sealed.Keyring

	backend eventstore.Store // the store as given, with all its abilities
	version string
	// fileKeys is the key file of a node on the embedded store (nil on a
	// shared one); master the master key, from masterFile when it came
	// from a file, and masterLocation says where it came from.
	fileKeys       *sealed.FileKeys
	master         *sealed.MasterKey
	masterFile     string
	masterLocation string
	log            *slog.Logger
	dataDir        string
	snapPath       string
	snapMu         sync.Mutex
	snapPos        eventstore.Position // position of the last snapshot written or loaded
	cleanup        cleanup             // how to stop what Start started, newest last

	journal *billing.Journal
	billing *httpapi.BillingOptions

	statsProjector *stats.Projector
	statsFacts     stats.FactStore
}

// Start builds a node on store and returns once its read model has caught
// up with the log (so that admin bootstrap and the first reads see every
// write made before). If a step fails, Start undoes the steps before it.
func Start(ctx context.Context, store eventstore.Store, opts Options) (*Node, error) {
	n, opts, err := newNode(store, opts)
	if err != nil {
		return nil, err
	}
	if err := n.run(ctx, opts, n.steps()); err != nil {
		return nil, err
	}
	return n, nil
}

// newNode fills in the defaults of opts and creates the data directory.
func newNode(store eventstore.Store, opts Options) (*Node, Options, error) {
	if opts.DataDir == "" {
		return nil, opts, errors.New("node: DataDir is required")
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
		return nil, opts, fmt.Errorf("node: %w", err)
	}
	registerGroupCommitMetrics(opts.Metrics, store)
	return &Node{Store: metered(store, opts.Metrics), backend: store, log: opts.Logger, dataDir: opts.DataDir, version: opts.Version,
		snapPath: filepath.Join(opts.DataDir, "readmodel.snapshot")}, opts, nil
}

// step is one part of starting a node. It builds or starts one thing and
// pushes how to undo it onto the node's cleanup.
type step struct {
	name string
	run  func(ctx context.Context, opts Options) error
}

// steps are the parts of a node in the order Start builds them: each uses
// only what the steps before it built.
func (n *Node) steps() []step {
	return []step{
		{"personal data keys", n.sealStore},
		{"event registry", n.registerEvents},
		{"read model", n.startReadModel},
		{"executor", n.buildExecutor},
		{"command gateway", n.startGateway},
		{"application", n.buildApplication},
		{"admin bootstrap", n.bootstrapAdmin},
		{"statistics", n.startStats},
		{"billing proxy", n.startBilling},
		{"rebuilds", n.startRebuilds},
		{"backups", n.startBackups},
		{"http", n.buildHTTP},
		{"snapshot schedule", n.scheduleSnapshots},
		{"retention", n.scheduleRetention},
	}
}

// run runs steps in order. On the first failure it undoes the steps that
// ran, newest first, and returns the error.
func (n *Node) run(ctx context.Context, opts Options, steps []step) error {
	for _, s := range steps {
		if err := s.run(ctx, opts); err != nil {
			n.cleanup.unwind()
			return fmt.Errorf("node: %w", err)
		}
	}
	return nil
}

// registerEvents builds the registry of every event the node reads or
// writes.
func (n *Node) registerEvents(context.Context, Options) error {
	n.Registry = NewRegistry()
	return nil
}

// NewRegistry returns the registry of every event a node reads or writes:
// what reading a node's log takes (a rebuild of its projections, a check).
func NewRegistry() *domain.Registry {
	r := domain.NewRegistry()
	domain.RegisterEvents(r)
	app.RegisterEvents(r)
	devauth.RegisterEvents(r)
	return r
}

// startReadModel restores the read model from its snapshot, starts its
// runner from there and waits until it has caught up with the log.
func (n *Node) startReadModel(ctx context.Context, opts Options) error {
	started := time.Now()
	from := n.restoreReadModel(started)
	// Erasures before the snapshot are not read again: the keyring learns
	// them from the model (what it shows of older, unsealed events).
	for _, id := range n.Model.ErasedAccounts() {
		n.Keys.Forget(id)
	}

	caughtUp := make(chan struct{})
	var once sync.Once
	n.Runner = projections.NewRunner(n.Store, n.Registry, n.Model, projections.SnapshotCheckpoints{Position: from}, projections.RunnerOptions{
		Logger:     n.log,
		OnCaughtUp: func() { once.Do(func() { close(caughtUp) }) },
	})
	n.cleanup.push(goUntilStopped(ctx, func(ctx context.Context) { _ = n.Runner.Run(ctx) }))
	if err := waitCaughtUp(ctx, caughtUp, opts.CatchUpTimeout); err != nil {
		return err
	}
	n.log.Info("read model caught up", "position", n.Runner.Progress().Position().String(), "took", time.Since(started))
	return nil
}

// restoreReadModel builds the read model from its snapshot and returns the
// position to follow the log from: after the snapshot, or the beginning
// when there is none or it is unusable.
func (n *Node) restoreReadModel(started time.Time) eventstore.Position {
	n.Model = n.newModel()
	from, err := n.Model.LoadSnapshot(n.snapPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return eventstore.Beginning
	case err != nil:
		// A damaged snapshot is only a cache of the log: rebuild from it.
		n.log.Warn("read model snapshot unusable; replaying the whole log", "path", n.snapPath, "error", err)
		n.Model = n.newModel()
		return eventstore.Beginning
	default:
		n.snapPos = from
		n.log.Info("read model snapshot loaded", "position", from.String(), "took", time.Since(started))
		return from
	}
}

// buildExecutor builds the command executor.
func (n *Node) buildExecutor(ctx context.Context, opts Options) (err error) {
	nameKey, err := n.Keys.NameKey(ctx)
	if err != nil {
		return err
	}
	n.Executor, err = app.New(n.Store, n.Registry, app.Options{Clock: opts.Clock, NameKey: nameKey})
	return err
}

// buildApplication builds the queries on the read model and the commands
// on the executor.
func (n *Node) buildApplication(ctx context.Context, opts Options) error {
	tokens, err := deviceTokens(ctx, n.Store, n.Registry, opts)
	if err != nil {
		return err
	}
	n.Queries, err = query.New(query.Config{
		Model: n.Model, Applied: n.Runner.Progress(), Store: n.Store, Registry: n.Registry,
		ReadYourWritesTimeout: opts.ReadYourWritesTimeout, Clock: opts.Clock, DeviceTokens: tokens,
	})
	if err != nil {
		return err
	}
	n.Commands, err = command.New(command.Config{
		Executor: n.Executor, Model: n.Model, Applied: n.Runner.Progress(), Queries: n.Queries,
		ReadYourWritesTimeout: opts.ReadYourWritesTimeout, BcryptCost: opts.BcryptCost, Logger: n.log, Clock: opts.Clock,
		DeviceTokens: tokens, BillingURL: opts.Billing.policy().CheckURL, DefaultDeviceLimit: defaultDeviceLimit(opts.DefaultDeviceLimit),
		Keys: n.Keys, SendClaims: n.Dispatcher,
	})
	return err
}

// bootstrapAdmin creates the first superadmin when there is no admin yet.
func (n *Node) bootstrapAdmin(ctx context.Context, opts Options) (err error) {
	if n.GeneratedPassword, err = n.Commands.Admins.Bootstrap(ctx, opts.AdminLogin, opts.AdminPassword); err != nil {
		return fmt.Errorf("admin bootstrap: %w", err)
	}
	return nil
}

// buildHTTP builds the HTTP engine with the node's metrics and every API.
func (n *Node) buildHTTP(ctx context.Context, opts Options) (err error) {
	registerGatewayMetrics(opts.Metrics, n.Dispatcher, n.journal)
	passwords := httpapi.NewBcryptAuthenticator(n.credentials, httpapi.BcryptOptions{
		DummyCost: opts.BcryptCost, MaxChecks: opts.PasswordChecks, MaxCheckWait: opts.PasswordCheckWait, CacheSize: opts.PasswordCache,
	})
	registerPasswordMetrics(opts.Metrics, passwords)
	registerProjectionMetrics(opts.Metrics, n.backend, map[string]*projections.Runner{"readmodel": n.Runner, "statistics": n.StatsRunner}, opts.Clock)
	registerReadModelMetrics(opts.Metrics, n.Model)
	metrics.Register(opts.Metrics, panicsCollector{})
	adminLogins := throttle.NewGuard(withClock(opts.AdminLogins, opts.Clock))
	deviceLogins := throttle.NewGuard(withClock(opts.DeviceLogins, opts.Clock))
	registerLoginRefusals(opts.Metrics, map[string]*throttle.Guard{"admin": adminLogins, "device": deviceLogins})
	n.Auth = httpapi.ThrottleLogins(passwords, adminLogins)
	if n.Sessions, err = n.adminSessions(ctx, opts); err != nil {
		return err
	}
	engineOpts := httpapi.Options{
		Logger: n.log, Metrics: opts.Metrics, MetricsAuth: n.Auth, Ready: n.ready, AccessLog: opts.AccessLog,
		OpsElsewhere: opts.OpsListener, Applied: n.Runner.Progress(), MinPositionTimeout: opts.ReadYourWritesTimeout,
	}
	n.Engine = httpapi.New(engineOpts)
	if opts.OpsListener {
		n.Ops = httpapi.NewOps(engineOpts)
	}
	cmds, qs := n.Commands, n.Queries
	httpapi.Mount(n.Engine, httpapi.API{
		Auth:        n.Auth,
		Idempotency: n.Executor,
		Provider: httpapi.ProviderAPI{
			Accounts: cmds.Accounts, AccountReads: qs.Accounts, AccountErasure: cmds.Accounts, AccountExport: qs.Accounts,
			Subscriptions: cmds.Subscriptions, SubscriptionReads: qs.Subscriptions,
			DeviceSubscriptions: cmds.DeviceSubscriptions, DeviceSubscriptionReads: qs.DeviceSubscriptions,
			Devices: cmds.Devices, DeviceReads: qs.Devices, DeviceOnline: n.Hub.Connected,
			Networks: cmds.Networks, NetworkReads: qs.Networks,
			Changes: qs.Changes,
			Sends:   cmds.Sends, Receipts: qs.Sends,
			Tariffs: cmds.Tariffs, TariffReads: qs.Tariffs,
			TariffTags: cmds.TariffTags, TariffTagReads: qs.TariffTags,
			ProviderReads: qs.Providers, ChannelReads: qs.LineUp, FavoriteGroupReads: qs.FavoriteGroups,
			RegionReads: qs.Regions, DeviceTypes: cmds.DeviceTypes, DeviceTypeReads: qs.DeviceTypes,
		},
		Admin: httpapi.AdminAPI{
			Providers: cmds.Providers, ProviderReads: qs.Providers,
			Tariffs: cmds.Tariffs, TariffReads: qs.Tariffs,
			Channels: cmds.Channels, ChannelReads: qs.Channels,
			Categories: cmds.Categories, CategoryReads: qs.Categories,
			Regions: cmds.Regions, RegionReads: qs.Regions,
			Admins: cmds.Admins, AdminReads: qs.Admins,
			Imports: cmds.Imports,
		},
		Device:            httpapi.DeviceAPI{Writes: cmds.Devices, Sessions: qs.Sessions},
		Sockets:           n.Hub,
		DeviceLogins:      deviceLogins,
		Billing:           n.billing,
		ProfilerElsewhere: opts.OpsListener,
		Rebuilds:          n.Rebuilds,
		Backups:           n.Backups,
		Sessions:          n.Sessions,
	})
	return httpapi.MountStats(n.Engine.Group("/api/stats"), n.Stats, httpapi.AdminAuth(n.Auth, n.Sessions))
}

// sessionKeyLabel names the admin session signing key among the keys
// derived from the name key.
const sessionKeyLabel = "tvsm admin session tokens v1"

// adminSessions returns the admin console's sessions. Their signing key is
// derived (HKDF-SHA256) from the key store's name key, a secret every node
// on the store already shares under the master key: tokens one node issues
// pass on all, a copy of the store without the master key forges none, and
// a master key rotation keeps the sessions.
func (n *Node) adminSessions(ctx context.Context, opts Options) (*httpapi.Sessions, error) {
	secret, err := n.Keys.NameKey(ctx)
	if err != nil {
		return nil, err
	}
	key, err := hkdf.Key(sha256.New, secret, nil, sessionKeyLabel, httpapi.MinSessionKeyLen)
	if err != nil {
		return nil, fmt.Errorf("admin session key: %w", err)
	}
	return httpapi.NewSessions(httpapi.SessionOptions{
		Key: key, Admins: n.Model.Admin, SignOuts: n.Commands.Admins,
		Idle: opts.AdminSessionIdle, MaxAge: opts.AdminSessionMaxAge, Clock: opts.Clock,
	})
}

// panicsCollector exports the panics recovered in background work, by
// component (supervise.Counts).
type panicsCollector struct{}

var panicsDesc = prometheus.NewDesc("tvsm_panics_total",
	"Panics recovered in background work (logged with their stacks), by component.", []string{"component"}, nil)

// Describe implements prometheus.Collector.
func (panicsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- panicsDesc }

// Collect implements prometheus.Collector.
func (panicsCollector) Collect(ch chan<- prometheus.Metric) {
	for component, n := range supervise.Counts() {
		ch <- prometheus.MustNewConstMetric(panicsDesc, prometheus.CounterValue, float64(n), component)
	}
}

// registerPasswordMetrics exports the admin password checks made, refused
// because they could not have their turn in time, and waiting now.
func registerPasswordMetrics(reg prometheus.Registerer, a *httpapi.BcryptAuthenticator) {
	metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tvsm_password_checks_total", Help: "Admin password checks (bcrypt comparisons) made.",
	}, func() float64 { return float64(a.Comparisons()) }))
	metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tvsm_password_checks_refused_total", Help: "Admin logins answered 503 because their password check could not have its turn within password_check_wait.",
	}, func() float64 { return float64(a.Refused()) }))
	metrics.Register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tvsm_password_checks_waiting", Help: "Admin password checks waiting for their turn.",
	}, func() float64 { return float64(a.Waiting()) }))
}

// scheduleSnapshots writes read model snapshots on opts.SnapshotSpec.
func (n *Node) scheduleSnapshots(_ context.Context, opts Options) error {
	c := schedule.NewCron(n.log)
	if _, err := c.AddFunc(opts.SnapshotSpec, n.snapshot); err != nil {
		return fmt.Errorf("snapshot schedule %q: %w", opts.SnapshotSpec, err)
	}
	c.Start()
	// Waits for a snapshot being written.
	n.cleanup.push(func() { <-c.Stop().Done() })
	return nil
}

// deviceTokens returns the signer of device tokens, with the key every
// node on store shares (created by the first node to start).
func deviceTokens(ctx context.Context, store eventstore.Store, reg *domain.Registry, opts Options) (*devauth.Signer, error) {
	key, err := devauth.LoadKey(ctx, store, reg, opts.Clock())
	if err != nil {
		return nil, err
	}
	return devauth.NewSigner(key, devauth.Options{TTL: opts.DeviceTokenTTL, Clock: opts.Clock})
}

// defaultDeviceLimit is Options.DefaultDeviceLimit as the commands take
// it: nil for none.
func defaultDeviceLimit(n int) *int {
	switch {
	case n < 0:
		return nil
	case n == 0:
		n = DefaultDeviceLimit
	}
	return &n
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
		return fmt.Errorf("waiting for the read model to catch up: %w", ctx.Err())
	case <-t.C:
		return fmt.Errorf("read model did not catch up within %v", timeout)
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

// ready backs /readyz: the read model and the command dispatcher must
// follow the log at its head, and must not be stuck on a panic (they retry,
// and report ready again once a batch goes through). A node whose event
// store went away is not ready until it has resubscribed and caught up; it
// still answers reads from its read model meanwhile.
func (n *Node) ready(context.Context) error {
	model := n.Runner.Stats()
	switch {
	case !model.CaughtUp:
		return errors.New("read model catching up")
	case !model.Live:
		return errors.New("read model not following the event store (unreachable?); resubscribing")
	case !n.Dispatcher.CaughtUp():
		return errors.New("command dispatcher catching up")
	case !n.Dispatcher.Live():
		return errors.New("command dispatcher not following the event store (unreachable?); resubscribing")
	case model.Panicked:
		return errors.New("read model projection panicked; retrying (see the log)")
	case n.Dispatcher.Panicked():
		return errors.New("command dispatcher panicked; retrying (see the log)")
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

// Close stops what Start started in the reverse order: the snapshot
// schedule, the command gateway (it closes the devices' websockets and saves
// its pending commands), the billing journal (it stores what it still
// holds), the statistics and the read model runner. Then it writes a final
// snapshot, so the next start replays only what comes after it. It does not
// close the store, which the caller opened.
// Handler is what a server serves: the engine, with every path answered the
// same with and without a trailing slash.
func (n *Node) Handler() http.Handler { return httpapi.Handler(n.Engine) }

func (n *Node) Close() error {
	n.cleanup.unwind()
	n.snapshot()
	return nil
}

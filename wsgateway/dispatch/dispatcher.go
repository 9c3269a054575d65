package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/platform/schedule"
	"tvsm/projections"
	"tvsm/wsgateway"
)

// requestPrefix starts the request id of the dispatcher's events.
const requestPrefix = "dispatch:"

// Dispatcher delivers command events to the devices connected to its hub.
// Create it with New, run it with Run and stop it with Close.
type Dispatcher struct {
	opts     Options
	log      *slog.Logger
	clock    schedule.Clock
	store    eventstore.Store
	reg      *domain.Registry
	hub      *wsgateway.Hub
	runner   *projections.Runner
	timers   *schedule.Timers
	receipts *receipts
	conns    *connEvents
	// instance tells this process's appends apart from those of an earlier
	// run or another node of the same name.
	instance string

	// Owned by the loop goroutine (by New and Close while no loop runs).
	state    *state
	caughtUp atomic.Bool // set by the loop only
	// sendClaims are this node's claims made for sends' own appends, by
	// send, until the log shows them (see ClaimWithSend).
	sendClaims map[int64]*sendClaim
	// storeWaits counts the loop's claims and expiries under way: calls
	// that wait on the store.
	storeWaits atomic.Int32
	// liveSince is when this process caught up: commands due before it
	// were due while this node did not run.
	liveSince time.Time

	inbox   chan loopMsg
	pending pending
	stats   counters

	snapPath  string
	loadedPos eventstore.Position // of the snapshot restored by New
	snapMu    sync.Mutex
	snapPos   eventstore.Position // loaded or last written
	snapGen   uint64              // state generation of that snapshot

	runMu    sync.Mutex
	cancel   context.CancelFunc // of the current Run
	running  chan struct{}      // closed when the current Run returned
	loopDone chan struct{}      // closed when the current Run's loop returned
	closed   bool
	once     sync.Once
}

// New builds a dispatcher and its hub and restores the snapshot of live
// commands from DataDir. The hub's hooks and the receipt and connection
// event queues work from here on; commands are delivered once Run runs.
func New(opts Options) (*Dispatcher, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	d := &Dispatcher{
		opts: o, log: o.Logger.With("component", "dispatch", "node", o.Node), clock: o.Clock,
		store: o.Store, reg: o.Registry, timers: schedule.NewTimers(o.Clock),
		instance: randomHex(8), state: newState(), sendClaims: make(map[int64]*sendClaim), inbox: make(chan loopMsg),
		snapPath: filepath.Join(o.DataDir, snapshotFile),
	}
	d.pending.wake, d.pending.live = make(chan struct{}, 1), &d.caughtUp
	d.hub = wsgateway.NewHub(d.hubOptions(o.Hub))
	d.receipts = newReceipts(d)
	d.conns = newConnEvents(d)
	d.loadSnapshot()
	d.runner = projections.NewRunner(o.Store, o.Registry, handler{d}, projections.SnapshotCheckpoints{Position: d.snapPos},
		projections.RunnerOptions{Logger: d.log, OnCaughtUp: d.onCaughtUp})
	return d, nil
}

// hubOptions installs the dispatcher's hooks in front of the caller's, and
// its logger unless the caller has one.
func (d *Dispatcher) hubOptions(o wsgateway.Options) wsgateway.Options {
	if o.Logger == nil {
		o.Logger = d.log
	}
	open, msg, closed := o.OnOpen, o.OnMessage, o.OnClose
	o.OnOpen = func(c *wsgateway.Conn) {
		d.OnOpen(c)
		if open != nil {
			open(c)
		}
	}
	o.OnMessage = func(c *wsgateway.Conn, m wsgateway.DeviceMessage) {
		d.OnMessage(c, m)
		if msg != nil {
			msg(c, m)
		}
	}
	o.OnClose = func(c *wsgateway.Conn, r wsgateway.CloseReason) {
		d.OnClose(c, r)
		if closed != nil {
			closed(c, r)
		}
	}
	return o
}

// Hub returns the hub of device connections; the device websocket route
// calls its Upgrade.
func (d *Dispatcher) Hub() *wsgateway.Hub { return d.hub }

// OnOpen is the hub's OnOpen hook (installed by New): it records the
// connection and lets the loop deliver live ttl commands to it. It never
// blocks.
func (d *Dispatcher) OnOpen(c *wsgateway.Conn) {
	d.conns.connected(c)
	d.pending.opened(c)
}

// OnMessage is the hub's OnMessage hook: acks and confirms become receipts.
// It never blocks.
func (d *Dispatcher) OnMessage(c *wsgateway.Conn, m wsgateway.DeviceMessage) {
	d.receipts.handle(c, m)
}

// OnClose is the hub's OnClose hook: it records the disconnection. It never
// blocks.
func (d *Dispatcher) OnClose(c *wsgateway.Conn, r wsgateway.CloseReason) {
	d.conns.disconnected(c, r)
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("dispatch: closed")

// Run follows the log and delivers commands until ctx ends or Close is
// called; it returns ctx's error, or nil after Close. Snapshots are taken on
// SnapshotSpec while it runs. Store failures are retried inside (the
// runner resubscribes with backoff); they never end Run.
func (d *Dispatcher) Run(ctx context.Context) error {
	ctx, done, err := d.startRun(ctx)
	if err != nil {
		return err
	}
	defer done()
	c := schedule.NewCron(d.log)
	if _, err := c.AddFunc(d.opts.SnapshotSpec, d.snapshotJob(ctx)); err != nil {
		return fmt.Errorf("dispatch: snapshot schedule %q: %w", d.opts.SnapshotSpec, err)
	}
	if _, err := c.AddFunc("@every 1m", d.receipts.prune); err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	c.Start()
	defer stopCron(c)
	loopDone := d.currentLoop()
	go func() {
		defer close(loopDone)
		d.loop(ctx)
	}()
	err = d.runner.Run(ctx)
	<-loopDone
	if d.isClosed() {
		return nil
	}
	return err
}

// startRun registers a Run; done unregisters it.
func (d *Dispatcher) startRun(parent context.Context) (context.Context, func(), error) {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	if d.closed {
		return nil, nil, ErrClosed
	}
	if d.running != nil {
		return nil, nil, errors.New("dispatch: already running")
	}
	ctx, cancel := context.WithCancel(parent)
	d.cancel, d.running, d.loopDone = cancel, make(chan struct{}), make(chan struct{})
	running := d.running
	return ctx, func() {
		cancel()
		d.runMu.Lock()
		d.cancel, d.running, d.loopDone = nil, nil, nil
		d.runMu.Unlock()
		close(running)
	}, nil
}

// currentLoop returns the channel the current Run's loop closes on exit.
func (d *Dispatcher) currentLoop() chan struct{} {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	return d.loopDone
}

func (d *Dispatcher) isClosed() bool {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	return d.closed
}

func stopCron(c *cron.Cron) { <-c.Stop().Done() }

// Close says goodbye to every device (close code 1001), stops Run, appends
// the receipts and connection events still queued and writes a final
// snapshot. It is safe to call more than once.
func (d *Dispatcher) Close() error {
	var err error
	d.once.Do(func() {
		d.hub.Close()
		d.runMu.Lock()
		d.closed = true
		cancel, running := d.cancel, d.running
		d.runMu.Unlock()
		if cancel != nil {
			cancel()
			<-running
		}
		d.timers.Close()
		d.conns.close()
		d.receipts.close()
		err = d.writeSnapshot(d.encodeSnapshot())
	})
	return err
}

// onCaughtUp tells the loop that the log has been read to its head.
func (d *Dispatcher) onCaughtUp() {
	d.send(context.Background(), loopMsg{caughtUp: true})
}

// Panicked reports whether applying command events panicked (recovered,
// logged, counted) and no batch has been applied since: the dispatcher is
// stuck, which readiness reports.
func (d *Dispatcher) Panicked() bool { return d.runner.Stats().Panicked }

// CaughtUp reports whether the dispatcher has read the log to its head
// (once, since New): only then does it deliver.
func (d *Dispatcher) CaughtUp() bool { return d.caughtUp.Load() }

// Live reports whether the dispatcher follows the log at its head now: it
// is false before the first catch-up and while its subscription is down (a
// store that cannot be reached), until a resubscription has caught up.
func (d *Dispatcher) Live() bool { return d.runner.Stats().Live }

// WaitApplied waits until the dispatcher has applied the log up to pos (and
// run the delivery rounds of the sends up to it), or ctx ends.
func (d *Dispatcher) WaitApplied(ctx context.Context, pos eventstore.Position) error {
	return d.runner.Progress().Wait(ctx, pos)
}

// Settle waits until the loop has handled everything pending when it is
// called: due timers and newly opened connections.
func (d *Dispatcher) Settle(ctx context.Context) error {
	done := make(chan struct{})
	return d.sendAndWait(ctx, loopMsg{settled: done}, done)
}

// sendAndWait hands m to the loop and waits until the loop closes done.
func (d *Dispatcher) sendAndWait(ctx context.Context, m loopMsg, done <-chan struct{}) error {
	if err := d.send(ctx, m); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errNotRunning is returned by calls that need the loop when it is not
// running.
var errNotRunning = errors.New("dispatch: not running")

// send hands m to the loop, giving up when ctx ends or the loop has
// exited.
func (d *Dispatcher) send(ctx context.Context, m loopMsg) error {
	loopDone := d.currentLoop()
	if loopDone == nil {
		return errNotRunning
	}
	select {
	case d.inbox <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-loopDone:
		return errNotRunning
	}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// handler feeds the runner's batches to the loop.
type handler struct{ d *Dispatcher }

// Name is the runner's name; the checkpoint lives in the snapshot.
func (handler) Name() string { return "dispatch.v1" }

// Filter selects the command streams. receipt-{id} is not followed:
// nothing the dispatcher decides depends on receipts.
func (handler) Filter() eventstore.Filter {
	return eventstore.Filter{StreamPrefixes: []string{domain.StreamCommand.Prefix()}}
}

// Apply hands the batch to the loop and returns once it has been applied
// (and its new sends' delivery rounds have run), so the runner's progress
// never passes what the state holds.
func (h handler) Apply(ctx context.Context, events iter.Seq[*projections.Event], _ projections.Mode) error {
	done := make(chan error, 1)
	if err := h.d.send(ctx, loopMsg{events: events, applied: done}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// appendCtx bounds one store call.
func (d *Dispatcher) appendCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.opts.AppendTimeout)
}

// counters are the dispatcher's live counters.
type counters struct {
	liveSends, liveCommands                   atomic.Int64
	deliveries, misses                        atomic.Uint64
	claims, conflicts, claimFailures          atomic.Uint64
	sendClaims                                atomic.Uint64
	expired, expiryFailures                   atomic.Uint64
	acks, confirms                            atomic.Uint64
	receiptsRejected, receiptsDropped         atomic.Uint64
	receiptFailures                           atomic.Uint64
	connEvents, connDropped, connFailures     atomic.Uint64
	snapshots, snapshotFailures, decodeErrors atomic.Uint64
}

// Stats is a snapshot of the dispatcher's figures, for metrics. All but
// Connections, LiveSends, LiveCommands and CaughtUp are monotonic counters.
type Stats struct {
	Connections  int   // devices connected to this node
	LiveSends    int64 // sends with a command still deliverable
	LiveCommands int64 // commands still deliverable
	CaughtUp     bool
	Deliveries   uint64 // command messages queued to a connection
	Misses       uint64 // claimed deliveries whose connection was gone
	Claims       uint64 // CommandsSent appends
	// SendClaims counts claims made in the append of a send taken on this
	// node (ClaimWithSend) that the node wrote to their devices.
	SendClaims uint64
	// ClaimConflicts counts claim appends that lost to another append
	// (another node's claim, an expiry); ClaimFailures rounds given up.
	ClaimConflicts, ClaimFailures uint64
	Expired, ExpiryFailures       uint64
	Acks, Confirms                uint64 // devices recorded in receipts
	// ReceiptsRejected: acks and confirms for deliveries the device was not
	// sent here (or already acknowledged); ReceiptsDropped: lost to a full
	// queue; ReceiptFailures: lost to the store.
	ReceiptsRejected, ReceiptsDropped, ReceiptFailures uint64
	// ConnectionEvents appended, dropped (queue full) and failed (store).
	ConnectionEvents, ConnectionEventsDropped, ConnectionEventFailures uint64
	Snapshots, SnapshotFailures                                        uint64
	DecodeErrors                                                       uint64 // command events that could not be decoded
}

// Stats returns the dispatcher's current figures.
func (d *Dispatcher) Stats() Stats {
	c := &d.stats
	return Stats{
		Connections: d.hub.Count(), LiveSends: c.liveSends.Load(), LiveCommands: c.liveCommands.Load(),
		CaughtUp: d.CaughtUp(), Deliveries: c.deliveries.Load(), Misses: c.misses.Load(),
		Claims: c.claims.Load(), SendClaims: c.sendClaims.Load(), ClaimConflicts: c.conflicts.Load(), ClaimFailures: c.claimFailures.Load(),
		Expired: c.expired.Load(), ExpiryFailures: c.expiryFailures.Load(),
		Acks: c.acks.Load(), Confirms: c.confirms.Load(),
		ReceiptsRejected: c.receiptsRejected.Load(), ReceiptsDropped: c.receiptsDropped.Load(),
		ReceiptFailures: c.receiptFailures.Load(), ConnectionEvents: c.connEvents.Load(),
		ConnectionEventsDropped: c.connDropped.Load(), ConnectionEventFailures: c.connFailures.Load(),
		Snapshots: c.snapshots.Load(), SnapshotFailures: c.snapshotFailures.Load(), DecodeErrors: c.decodeErrors.Load(),
	}
}

// publishGauges copies the state's sizes to the counters.
func (d *Dispatcher) publishGauges() {
	d.stats.liveSends.Store(int64(len(d.state.sends)))
	d.stats.liveCommands.Store(int64(d.state.items))
}

// retryLater schedules another look at send id after RetryDelay.
func (d *Dispatcher) retryLater(id int64) {
	d.timers.At(timerKey("retry", id, 0), d.clock.Now().Add(d.opts.RetryDelay), d.dueFunc(id))
}

// timerKey names a timer of a send.
func timerKey(kind string, send int64, index int) string {
	return fmt.Sprintf("%s/%d/%d", kind, send, index)
}

// dueFunc returns the timer job that asks the loop to look at send id.
func (d *Dispatcher) dueFunc(id int64) func() {
	return func() { d.pending.due(id) }
}

// sinceSeconds is the whole seconds from t to now, never negative.
func sinceSeconds(now, t time.Time) int64 {
	return max(int64(now.Sub(t)/time.Second), 0)
}

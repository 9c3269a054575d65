package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/platform/supervise"
)

// Defaults of RunnerOptions.
const (
	DefaultBackoffBase      = 100 * time.Millisecond
	DefaultBackoffMax       = 5 * time.Second
	DefaultWatchdogInterval = 30 * time.Second
)

// RunnerOptions configure a Runner. The zero value gives the defaults.
type RunnerOptions struct {
	// Rebuild starts from the beginning of the log, ignoring the stored
	// checkpoint, and applies with Mode Replay until the first caught-up
	// batch has been applied; after that it continues in Live mode.
	//
	// Checkpoints still never move backwards: while the rebuild is behind
	// the stored checkpoint, saves are no-ops, so an interrupted rebuild
	// resumes from the old checkpoint. A rebuild that throws its target away
	// first should use a new handler Name (or delete the checkpoint, see
	// FileCheckpointStore.Delete).
	Rebuild bool
	// BackoffBase and BackoffMax bound the delay before resubscribing after a
	// failure: exponential from base, capped at max, with full jitter, and
	// back to base after a batch is handled. Defaults 100ms and 5s: a
	// subscription to a store that is down fails at once, so retrying costs
	// nothing, and the cap is how long a node may stay behind (and not
	// ready) after its store has come back.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// WatchdogInterval is how often the watchdog compares the store's head
	// with the applied position, when the store implements
	// eventstore.HeadReader. A subscription that has delivered nothing for
	// a whole interval while the head was ahead is resubscribed. Default
	// 30s; negative disables the watchdog.
	WatchdogInterval time.Duration
	// Logger receives the runner's logs; default slog.Default().
	Logger *slog.Logger
	// OnCaughtUp, when set, is called once per Run, from the Run goroutine,
	// after the runner has first applied everything up to the head (after
	// the replay, in a rebuild). Use it for readiness.
	OnCaughtUp func()
	// CheckpointEvery bounds how often the checkpoint is saved while events
	// flow (default DefaultCheckpointEvery; negative: after every batch). It
	// is also saved on catching up and when Run ends. A crash redoes at most
	// this much work, which idempotent handlers absorb; saving after every
	// live batch would cost an fsync per group commit per projection.
	CheckpointEvery time.Duration
	// MinBatchInterval, when positive, spaces live batches out: once
	// caught up, the runner receives the next batch no sooner than this
	// long after the previous one, so a projection that need not be
	// current to the millisecond takes the log in fewer, larger batches.
	// Without it a live runner wakes for every group commit: about a
	// thousand times a second under write load, each time for a handful of
	// events (and, for statistics kept in ClickHouse, an INSERT each, where
	// ClickHouse wants few large inserts, about one a second:
	// https://clickhouse.com/docs/optimize/bulk-inserts). Catch-up is never
	// slowed, nor a live batch marked More (cut short with more already
	// there): pacing each piece of a backlog would keep the runner behind
	// for good once appends outrun one batch per interval. Default 0: every
	// batch at once.
	MinBatchInterval time.Duration
}

// DefaultCheckpointEvery is RunnerOptions.CheckpointEvery's default.
const DefaultCheckpointEvery = time.Second

// Runner feeds one Handler from the global log: catch-up subscription after
// the checkpoint, decoding (each batch once, see Event), batch apply,
// checkpoint save, progress publication,
// resubscription with backoff after failures, and a watchdog for stalled
// subscriptions. Create it with NewRunner and start it with Run.
type Runner struct {
	store eventstore.Store
	h     Handler
	dec   *Decoder
	name  string
	cp    CheckpointStore
	opts  RunnerOptions
	log   *slog.Logger

	progress Progress
	running  atomic.Bool

	eventsApplied atomic.Uint64
	batches       atomic.Uint64
	reconnects    atomic.Uint64
	caughtUp      atomic.Bool
	live          atomic.Bool
	replaying     atomic.Bool
	panicked      atomic.Bool

	mu        sync.Mutex
	lastErr   error
	lastBatch time.Time
}

// NewRunner returns a runner that feeds h from store, decoding events with
// reg (DecoderFor) and keeping its checkpoint in cp.
func NewRunner(store eventstore.Store, reg *domain.Registry, h Handler, cp CheckpointStore, opts RunnerOptions) *Runner {
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = DefaultBackoffBase
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = DefaultBackoffMax
	}
	if opts.BackoffMax < opts.BackoffBase {
		opts.BackoffMax = opts.BackoffBase
	}
	if opts.WatchdogInterval == 0 {
		opts.WatchdogInterval = DefaultWatchdogInterval
	}
	if opts.CheckpointEvery == 0 {
		opts.CheckpointEvery = DefaultCheckpointEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	name := h.Name()
	return &Runner{
		store: store,
		h:     h,
		dec:   DecoderFor(reg, h),
		name:  name,
		cp:    cp,
		opts:  opts,
		log:   opts.Logger.With("projection", name),
	}
}

// Progress returns the applied position of the runner's handler, to wait on
// for read-your-writes. It starts at the loaded checkpoint.
func (r *Runner) Progress() *Progress { return &r.progress }

// Filter is the filter of the runner's handler: the events it applies.
func (r *Runner) Filter() eventstore.Filter { return r.h.Filter() }

// Stats returns a snapshot of the runner's counters.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	lastErr, lastBatch := r.lastErr, r.lastBatch
	r.mu.Unlock()
	s := Stats{
		Name:          r.name,
		Position:      r.progress.Position(),
		EventsApplied: r.eventsApplied.Load(),
		Batches:       r.batches.Load(),
		CaughtUp:      r.caughtUp.Load(),
		Live:          r.live.Load(),
		Replaying:     r.replaying.Load(),
		Reconnects:    r.reconnects.Load(),
		LastBatch:     lastBatch,
		Panicked:      r.panicked.Load(),
	}
	if lastErr != nil {
		s.LastError = lastErr.Error()
	}
	return s
}

// runState is what Run carries from one subscription to the next.
type runState struct {
	// mu guards saved, applied and savedAt, which the checkpoint ticker reads.
	mu        sync.Mutex
	saved     eventstore.Position // last checkpoint saved (or loaded)
	applied   eventstore.Position // last checkpoint applied; resubscribe after it
	savedAt   time.Time
	loaded    bool
	replaying bool
	notified  bool // OnCaughtUp called
	backoff   backoff
}

// Run feeds the handler until ctx ends, then returns ctx's error. Failures
// (subscribing, receiving, applying, saving) are logged and retried after a
// backoff, after the last applied position; they never end Run. A Runner runs
// at most once at a time.
func (r *Runner) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return fmt.Errorf("projections: run %q: already running", r.name)
	}
	defer r.running.Store(false)

	st := &runState{
		replaying: r.opts.Rebuild,
		backoff:   backoff{base: r.opts.BackoffBase, max: r.opts.BackoffMax},
	}
	r.replaying.Store(st.replaying)
	defer r.replaying.Store(false)
	for {
		err := r.guardedSession(ctx, st)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
		delay := st.backoff.next()
		r.log.Warn("projection failed; resubscribing",
			"error", err, "after", st.appliedPos().String(), "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		r.reconnects.Add(1)
	}
}

// guardedSession is session with a panic outside the handler (the store's
// subscription, the runner itself) recovered, logged and counted, and
// returned as its error: the session's own cleanup has run by then.
func (r *Runner) guardedSession(ctx context.Context, st *runState) (err error) {
	defer supervise.Recover(r.log, r.component(), func(p *supervise.Panic) { err = p })
	return r.session(ctx, st)
}

// session loads the checkpoint if needed, subscribes after it and handles
// batches until something fails. It always returns a non-nil error.
func (r *Runner) session(ctx context.Context, st *runState) error {
	if !st.loaded {
		if err := r.loadCheckpoint(ctx, st); err != nil {
			return err
		}
	}
	// Live from the subscription's first caught-up batch until it ends.
	defer r.live.Store(false)
	subCtx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	// Whatever ends the session, record what was applied, so that a restart
	// does not redo it.
	defer func() {
		if err := r.save(ctx, st); err != nil {
			r.log.Warn("saving checkpoint at the end of a session", "error", err)
		}
	}()

	after := st.appliedPos()
	sub, err := r.store.SubscribeAll(subCtx, after, r.h.Filter())
	if err != nil {
		return fmt.Errorf("projections: %s: subscribe after %v: %w", r.name, after, err)
	}
	defer sub.Close()
	r.log.Debug("subscribed", "after", after.String(), "mode", r.mode(st).String())
	// A panic of a helper goroutine ends the session, which is then
	// resubscribed as after any failure.
	endSession := func(p *supervise.Panic) { cancel(p) }
	if every := r.opts.CheckpointEvery; every > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer supervise.Recover(r.log, r.component(), endSession)
			r.saveEvery(subCtx, st, every)
		}()
	}

	var recvSince atomic.Int64 // UnixNano when Recv was entered; 0 outside Recv
	if hr, ok := r.store.(eventstore.HeadReader); ok && r.opts.WatchdogInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer supervise.Recover(r.log, r.component(), endSession)
			r.watchdog(subCtx, hr, &recvSince, cancel)
		}()
	}

	pace := newPacer(r.opts.MinBatchInterval)
	defer pace.stop()
	for {
		recvSince.Store(time.Now().UnixNano())
		b, err := sub.Recv(subCtx)
		recvSince.Store(0)
		if err != nil {
			var p *supervise.Panic
			if cause := context.Cause(subCtx); errors.Is(cause, errStalled) || errors.As(cause, &p) {
				return fmt.Errorf("projections: %s: %w", r.name, cause)
			}
			return fmt.Errorf("projections: %s: receive after %v: %w", r.name, st.appliedPos(), err)
		}
		received := time.Now()
		if err := r.handle(ctx, st, b); err != nil {
			return err
		}
		st.backoff.reset()
		if b.CaughtUp && !b.More {
			pace.wait(subCtx, received)
		}
	}
}

// pacer waits out RunnerOptions.MinBatchInterval between live batches,
// with one timer for the whole session.
type pacer struct {
	every time.Duration
	timer *time.Timer
}

func newPacer(every time.Duration) *pacer { return &pacer{every: every} }

// wait returns once every has passed since last, or when ctx ends.
func (p *pacer) wait(ctx context.Context, last time.Time) {
	d := p.every - time.Since(last)
	if p.every <= 0 || d <= 0 {
		return
	}
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
	case <-ctx.Done():
		p.timer.Stop()
	}
}

func (p *pacer) stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// loadCheckpoint sets st.saved to the stored checkpoint, or to the beginning
// in a rebuild, and publishes it as the applied position.
func (r *Runner) loadCheckpoint(ctx context.Context, st *runState) error {
	if r.opts.Rebuild {
		r.log.Info("rebuilding from the beginning of the log", "mode", Replay.String())
		st.saved = eventstore.Beginning
	} else {
		pos, err := r.cp.Load(ctx, r.name)
		if err != nil {
			return fmt.Errorf("projections: %s: %w", r.name, err)
		}
		st.saved = pos
		r.log.Info("starting after checkpoint", "after", pos.String())
	}
	st.loaded = true
	st.applied = st.saved
	st.savedAt = time.Now()
	r.progress.Advance(st.saved)
	return nil
}

// handle applies one batch, saves its checkpoint and publishes progress.
func (r *Runner) handle(ctx context.Context, st *runState, b eventstore.Batch) error {
	checkpoint := b.Checkpoint
	if n := len(b.Events); n > 0 {
		mode := r.mode(st)
		last := b.Events[n-1].Position
		if err := r.apply(ctx, b.Events, mode); err != nil {
			return fmt.Errorf("projections: %s: apply %d events up to %v (%v): %w", r.name, n, last, mode, err)
		}
		r.eventsApplied.Add(uint64(n))
		if last.After(checkpoint) { // a backend reporting less than it delivered
			checkpoint = last
		}
	}
	r.batches.Add(1)
	r.panicked.Store(false)
	r.mu.Lock()
	r.lastBatch = time.Now()
	r.mu.Unlock()
	// Applied: visible to readers even if saving the checkpoint fails below.
	r.progress.Advance(checkpoint)
	st.mu.Lock()
	if checkpoint.After(st.applied) {
		st.applied = checkpoint
	}
	due := time.Since(st.savedAt) >= r.opts.CheckpointEvery
	st.mu.Unlock()
	if b.CaughtUp && !st.notified || due {
		if err := r.save(ctx, st); err != nil {
			return err
		}
	}
	if b.CaughtUp {
		r.live.Store(true)
		if st.replaying {
			st.replaying = false
			r.replaying.Store(false)
			r.log.Info("replay finished; continuing live", "position", checkpoint.String())
		}
		if !st.notified {
			st.notified = true
			r.caughtUp.Store(true)
			r.log.Info("caught up", "position", checkpoint.String())
			if r.opts.OnCaughtUp != nil {
				r.opts.OnCaughtUp()
			}
		}
	}
	return nil
}

// apply hands events to the handler. A panic of the handler is recovered,
// logged with its stack and counted (supervise), and returned as the
// error: the runner resubscribes after the last applied position, as after
// any failure, and reports Panicked until a batch is applied. So does a
// handler that returns a panic it recovered on a goroutine of its own.
func (r *Runner) apply(ctx context.Context, events []eventstore.RecordedEvent, mode Mode) (err error) {
	defer func() { // runs after Recover below has set err
		var p *supervise.Panic
		if errors.As(err, &p) {
			r.panicked.Store(true)
		}
	}()
	defer supervise.Recover(r.log, r.component(), func(p *supervise.Panic) { err = p })
	return r.h.Apply(ctx, r.dec.Decode(events), mode)
}

// component names the runner in panic logs and metrics.
func (r *Runner) component() string { return "projection/" + r.name }

// save stores the applied position as the checkpoint if it moved. It runs
// even when shutdown has begun: the work is applied and must not be redone.
func (r *Runner) save(ctx context.Context, st *runState) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.applied.After(st.saved) {
		return nil
	}
	if err := r.cp.Save(context.WithoutCancel(ctx), r.name, st.applied); err != nil {
		return fmt.Errorf("projections: %s: %w", r.name, err)
	}
	st.saved = st.applied
	st.savedAt = time.Now()
	return nil
}

// saveEvery saves the applied position every interval while the session
// lasts, so an idle tail after a burst is recorded without waiting for the
// next batch.
func (r *Runner) saveEvery(ctx context.Context, st *runState, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.save(ctx, st); err != nil {
				r.log.Warn("saving checkpoint", "error", err)
			}
		}
	}
}

func (st *runState) appliedPos() eventstore.Position {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.applied
}

func (r *Runner) mode(st *runState) Mode {
	if st.replaying {
		return Replay
	}
	return Live
}

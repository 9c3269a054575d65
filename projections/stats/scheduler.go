package stats

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"tvsm/internal/platform/schedule"
)

// SchedulerOptions configure a Scheduler. The zero value gives the
// defaults.
type SchedulerOptions struct {
	// CloseSpec is the cron spec of the job that closes quiet days and
	// writes pending facts (default "@every 1m"). The job is a cheap no-op
	// until a midnight (plus the projector's Grace) has passed, and it
	// catches up any number of days, so a fixed interval serves every time
	// zone and daylight-saving change, and downtime (robfig/cron never
	// re-runs missed jobs).
	CloseSpec string
	// SnapshotSpec is the cron spec of snapshots (default "@every 5m").
	SnapshotSpec string
	// Ready reports whether the projector has applied the log up to its
	// head (the runner's Stats().CaughtUp); days are closed by time only
	// then. Nil means always.
	Ready func() bool
	// Clock is the time days are closed by (default time.Now).
	Clock  func() time.Time
	Logger *slog.Logger
}

// Scheduler runs a projector's time-driven jobs on robfig/cron (in UTC,
// recovered from panics, never overlapping itself): closing days on which
// no event passed midnight, and snapshots. Every job is idempotent.
type Scheduler struct {
	p    *Projector
	cron *cron.Cron
	opts SchedulerOptions
	log  *slog.Logger
}

// StartScheduler starts the jobs of p.
func StartScheduler(p *Projector, opts SchedulerOptions) (*Scheduler, error) {
	if opts.CloseSpec == "" {
		opts.CloseSpec = "@every 1m"
	}
	if opts.SnapshotSpec == "" {
		opts.SnapshotSpec = "@every 5m"
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = p.log
	}
	s := &Scheduler{p: p, opts: opts, log: opts.Logger}
	s.cron = schedule.NewCron(s.log)
	if _, err := s.cron.AddFunc(opts.CloseSpec, s.CloseDue); err != nil {
		return nil, errors.Join(errors.New("stats: close schedule "+opts.CloseSpec), err)
	}
	if _, err := s.cron.AddFunc(opts.SnapshotSpec, s.snapshot); err != nil {
		return nil, errors.Join(errors.New("stats: snapshot schedule "+opts.SnapshotSpec), err)
	}
	s.cron.Start()
	return s, nil
}

// CloseDue runs the close job now: it writes pending facts and, once the
// projector has caught up, closes the days due by the clock.
func (s *Scheduler) CloseDue() {
	ctx := context.Background()
	var err error
	if s.opts.Ready != nil && !s.opts.Ready() {
		err = s.p.Flush(ctx)
	} else {
		err = s.p.CloseDue(ctx, s.opts.Clock())
	}
	if err != nil {
		s.log.Warn("closing statistics days", "error", err)
	}
}

func (s *Scheduler) snapshot() {
	if err := s.p.WriteSnapshot(context.Background()); err != nil {
		s.log.Warn("statistics snapshot", "error", err)
	}
}

// Stop stops the jobs, waits for a running one, and writes a last
// snapshot so the next start replays only the tail of the log.
func (s *Scheduler) Stop() {
	<-s.cron.Stop().Done()
	s.snapshot()
}

package schedule

import (
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"tvsm/internal/platform/supervise"
)

// NewCron returns a cron scheduler for recurring jobs, evaluated in UTC
// (robfig/cron does not run jobs scheduled in a daylight-saving leap-ahead
// gap: https://pkg.go.dev/github.com/robfig/cron/v3), with every job wrapped
// so that a panic is recovered, logged with its stack and counted
// (supervise) and a run is skipped while the previous run of the same job
// is still going. cron never catches up runs missed while the process was
// down: jobs must not rely on it.
//
// The order of the wrappers matters: SkipIfStillRunning holds a token while
// the job runs and gets it back only when the job returns, so the recovery
// must sit inside it; outside, one panic would skip every later run.
func NewCron(log *slog.Logger) *cron.Cron {
	if log == nil {
		log = slog.Default()
	}
	l := cronLogger{log.With("component", "cron")}
	return cron.New(
		cron.WithLocation(time.UTC),
		cron.WithLogger(l),
		cron.WithChain(cron.SkipIfStillRunning(l), recoverJobs(log)),
	)
}

// recoverJobs recovers a job's panic, logging and counting it.
func recoverJobs(log *slog.Logger) cron.JobWrapper {
	return func(j cron.Job) cron.Job {
		return cron.FuncJob(func() { supervise.Do(log, "cron", j.Run) })
	}
}

// cronLogger adapts slog to cron.Logger; cron's info messages (every
// schedule and run) go to debug.
type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(msg string, keysAndValues ...any) {
	l.log.Debug(msg, keysAndValues...)
}

func (l cronLogger) Error(err error, msg string, keysAndValues ...any) {
	l.log.Error(msg, append([]any{"error", err}, keysAndValues...)...)
}

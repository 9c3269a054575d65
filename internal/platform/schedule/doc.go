// Package schedule runs jobs at given times. One-off jobs (a command's
// post_time, its ttl) wait in a timer heap, Timers, driven by an injectable
// Clock, so tests move time forward instead of sleeping. Recurring jobs
// (snapshots, pruning) run on robfig/cron, set up by NewCron in UTC with
// panics recovered and overlapping runs skipped.
//
// Every job must be idempotent: a one-off job may run late (after a restart,
// a stalled process) and a recurring job may be skipped or run on several
// nodes, so a job decides from the state it finds, never from having been
// called.
package schedule

// Package demo writes a realistic, back-dated history into a fresh data
// directory (`tvsm demo`): providers, channels, tariffs, accounts that
// arrive over the days, subscriptions that start, end and change, devices of
// every class logging in, and viewing every evening.
//
// It runs a real node on the directory and makes every change through the
// node's commands, the same as the APIs do, with the node's clock set to
// the simulated moment: each event's occurred-at is in the past, so the
// statistics projector closes the past days as it would have live, and a
// node started on the directory afterwards (tvsm serve) shows them. Days
// are simulated in phases (arrivals in the morning, changes at noon,
// viewing reported in the evening); before the clock passes a midnight the
// statistics have applied every event of the day, so no event is counted
// for a later day than its own. The last simulated day is yesterday; at
// the end the days up to yesterday are closed.
package demo

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/internal/wiring/node"
	"tvsm/projections/stats"
)

// Options say what to write.
type Options struct {
	// DataDir is the node's data directory; Store the event store in it,
	// empty (the caller opens it).
	DataDir string
	Store   interface {
		eventstore.Store
		eventstore.HeadReader
	}
	// Days of history, ending yesterday (default 90), and the accounts
	// there are by the end (default 1000).
	Days, Accounts int
	// Providers (default 2), tariffs over all providers (default 4 per
	// provider) and channels (default 40).
	Providers, Tariffs, Channels int
	// Seed makes the history reproducible (same options, same seed, same
	// history; only times of writing differ).
	Seed uint64
	// AdminLogin and AdminPassword create the superadmin, as on a first
	// start (an empty password is generated: see Result).
	AdminLogin, AdminPassword string
	// Workers write concurrently within a phase (default 32).
	Workers int
	// Now is the real time (default time.Now): the history ends the day
	// before it.
	Now    func() time.Time
	Logger *slog.Logger
	// Progress, when set, is told each finished day.
	Progress func(day, days int, events Counts)
}

// Counts are what the history holds.
type Counts struct {
	Accounts, Deleted, Subscriptions, Ended, Devices, Logins, Reports, Sessions, Changes int64
}

// Result reports the written history.
type Result struct {
	Counts
	From, To          time.Time // first and last simulated day
	AdminLogin        string
	GeneratedPassword string // set when no password was given
	ClosedThrough     string // the last closed statistics day
}

// Validate fills in the defaults of o's zero fields and checks the sizes.
func (o *Options) Validate() error {
	o.Days = cmp.Or(o.Days, 90)
	o.Accounts = cmp.Or(o.Accounts, 1000)
	o.Providers = cmp.Or(o.Providers, 2)
	o.Tariffs = cmp.Or(o.Tariffs, 4*o.Providers)
	o.Channels = cmp.Or(o.Channels, 40)
	o.Workers = cmp.Or(o.Workers, 32)
	switch {
	case o.Days < 1 || o.Days > 3660:
		return errors.New("demo: days must be between 1 and 3660")
	case o.Accounts < 1 || o.Accounts > 10_000_000:
		return errors.New("demo: accounts must be between 1 and 10,000,000")
	case o.Providers < 1 || o.Providers > 1000:
		return errors.New("demo: providers must be between 1 and 1000")
	case o.Tariffs < o.Providers || o.Tariffs > 10_000:
		return errors.New("demo: tariffs must be at least one per provider, at most 10,000")
	case o.Channels < 3 || o.Channels > 10_000:
		return errors.New("demo: channels must be between 3 and 10,000")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// clock is the node's clock: the simulated moment of the phase running,
// moving on with real time within the phase but never past its end.
type clock struct {
	mu          sync.Mutex
	start, end  time.Time
	startedReal time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.start.Add(time.Since(c.startedReal))
	if t.After(c.end) {
		return c.end
	}
	return t
}

// set starts a phase at start, ending at end.
func (c *clock) set(start, end time.Time) {
	c.mu.Lock()
	c.start, c.end, c.startedReal = start, end, time.Now()
	c.mu.Unlock()
}

// Run writes the history. The store must be empty.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.DataDir == "" || o.Store == nil {
		return Result{}, errors.New("demo: DataDir and Store are required")
	}
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	if head, err := o.Store.Head(ctx); err != nil {
		return Result{}, fmt.Errorf("demo: %w", err)
	} else if head != eventstore.Beginning {
		return Result{}, errors.New("demo: the data directory already holds events: give a fresh one")
	}
	today := o.Now().UTC().Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -o.Days)
	clk := &clock{}
	clk.set(first, first.Add(time.Hour))
	n, err := node.Start(ctx, o.Store, node.Options{
		DataDir: o.DataDir, Logger: o.Logger, AdminLogin: o.AdminLogin, AdminPassword: o.AdminPassword,
		Clock: clk.now, NodeName: "demo", ReadYourWritesTimeout: time.Minute, StatsBatchInterval: -1,
	})
	if err != nil {
		return Result{}, err
	}
	g := &generator{o: o, n: n, clk: clk, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		caller: app.Caller{Admin: cmp.Or(o.AdminLogin, node.DefaultAdminLogin), RequestID: "demo"}}
	res := Result{From: first, To: today.AddDate(0, 0, -1), AdminLogin: g.caller.Admin, GeneratedPassword: n.GeneratedPassword}
	err = g.run(ctx, first)
	if err == nil {
		res.ClosedThrough, err = g.finish(ctx, today)
	}
	res.Counts = g.counts.snapshot()
	return res, errors.Join(err, n.Close())
}

// counters are Counts written to concurrently.
type counters struct {
	accounts, deleted, subscriptions, ended, devices, logins, reports, sessions, changes atomic.Int64
}

func (c *counters) snapshot() Counts {
	return Counts{Accounts: c.accounts.Load(), Deleted: c.deleted.Load(), Subscriptions: c.subscriptions.Load(),
		Ended: c.ended.Load(), Devices: c.devices.Load(), Logins: c.logins.Load(), Reports: c.reports.Load(),
		Sessions: c.sessions.Load(), Changes: c.changes.Load()}
}

// finish closes the statistics' days before today (the history's last day
// is the one before), once they have applied the whole log.
func (g *generator) finish(ctx context.Context, today time.Time) (string, error) {
	if err := g.settle(ctx); err != nil {
		return "", err
	}
	// A day closes once its midnight plus the projector's grace has passed:
	// in the minute after midnight the real time is not there yet, and the
	// history's last day would stay open.
	now := g.o.Now()
	if due := today.Add(stats.DefaultGrace); now.Before(due) {
		now = due
	}
	g.clk.set(now, now.Add(24*time.Hour))
	g.n.StatsScheduler.CloseDue()
	day, ok := g.n.Stats.ClosedThrough()
	if !ok {
		return "", errors.New("demo: no statistics day closed")
	}
	return day.String(), nil
}

// settle waits until the statistics and the read model have applied every
// event written so far.
func (g *generator) settle(ctx context.Context) error {
	head, err := g.o.Store.Head(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := g.n.StatsRunner.Progress().Wait(ctx, head); err != nil {
		return fmt.Errorf("demo: statistics did not apply the log: %w", err)
	}
	return g.n.Runner.Progress().Wait(ctx, head)
}

// pinMD5 is every demo account's password digest: the password is "demo".
var pinMD5 = func() string { s := md5.Sum([]byte("demo")); return hex.EncodeToString(s[:]) }()

// parallel runs jobs on the workers and returns the first error.
func (g *generator) parallel(ctx context.Context, jobs []func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(g.o.Workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) || ctx.Err() != nil {
					return
				}
				if err := jobs[i](ctx); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// must turns a command's answer into its error, naming what failed.
func must[T any](what string) func(T, error) error {
	return func(_ T, err error) error {
		if err != nil {
			return fmt.Errorf("demo: %s: %w", what, err)
		}
		return nil
	}
}

// identity is what ReportViewing needs of a logged-in device.
func identity(s command.DeviceSession, class domain.DeviceClass) query.DeviceIdentity {
	return query.DeviceIdentity{Device: s.Device, Account: s.Account, Provider: s.Provider, Class: class}
}

package node

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"tvsm/internal/app/query"
	"tvsm/projections"
	"tvsm/projections/stats"
	"tvsm/projections/stats/embedded"
)

// StatsBatchInterval is how often, at most, the statistics projection takes
// a live batch. Statistics are per day and closed at midnight, so a second
// of lag changes nothing anyone sees; taken at once, every group commit
// woke the projection (about a thousand a second under write load) and,
// with ClickHouse, made an INSERT of a few rows each, where ClickHouse wants
// about one insert a second
// (https://clickhouse.com/docs/optimize/bulk-inserts). Paced, account
// creates over HTTP gained about 3% (docs/benchmarks.md).
const StatsBatchInterval = time.Second

// startStats starts the statistics projector on opts.Stats (the embedded
// fact store in DataDir/stats when nil) with its runner and its schedule of
// day closing and snapshots, and builds the service the Statistics API
// reads. It resumes from the projector's snapshot when the fact store still
// holds its facts, and recomputes every day from the log otherwise.
func (n *Node) startStats(ctx context.Context, opts Options) error {
	facts, name, err := n.openFacts(opts)
	if err != nil {
		return err
	}
	proj, err := stats.NewProjector(facts, stats.ProjectorOptions{
		Location: opts.EndOfDay, Logger: n.log.With("component", "stats"),
		// One snapshot per backend: it describes what that fact store holds.
		SnapshotPath: filepath.Join(opts.DataDir, "stats-"+name+".snapshot"),
	})
	if err != nil {
		return err
	}
	from, err := proj.Restore(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("restore statistics: %w", err)
	}
	runner := projections.NewRunner(n.Store, n.Registry, proj, projections.SnapshotCheckpoints{Position: from},
		projections.RunnerOptions{Logger: n.log.With("component", "stats"), MinBatchInterval: cmp.Or(opts.StatsBatchInterval, StatsBatchInterval)})
	// The scheduler starts before the runner so that the cleanup stops the
	// runner first: the scheduler's last snapshot must see every fact the
	// runner wrote.
	sched, err := stats.StartScheduler(proj, stats.SchedulerOptions{
		Ready: func() bool { return runner.Stats().CaughtUp }, Clock: opts.Clock, Logger: n.log.With("component", "stats"),
	})
	if err != nil {
		return err
	}
	n.cleanup.push(sched.Stop)
	n.cleanup.push(goUntilStopped(ctx, func(ctx context.Context) { _ = runner.Run(ctx) }))
	n.StatsRunner, n.StatsScheduler = runner, sched
	n.Stats = query.NewStatistics(facts, query.ReadModelCatalog{Model: n.Model}, proj)
	return nil
}

// openFacts returns the fact store of opts and the name of its backend.
// Without one it opens the embedded store in DataDir/stats, which the node
// then owns and closes.
func (n *Node) openFacts(opts Options) (stats.FactStore, string, error) {
	if opts.Stats != nil {
		return opts.Stats, cmp.Or(opts.StatsName, "custom"), nil
	}
	facts, err := embedded.Open(filepath.Join(opts.DataDir, "stats"), embedded.Options{Logger: n.log.With("component", "stats")})
	if err != nil {
		return nil, "", fmt.Errorf("open embedded statistics: %w", err)
	}
	n.cleanup.push(func() {
		if err := facts.Close(); err != nil {
			n.log.Warn("closing embedded statistics", "error", err)
		}
	})
	return facts, "embedded", nil
}

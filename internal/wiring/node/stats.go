package node

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"tvsm/projections"
	"tvsm/projections/stats"
	"tvsm/projections/stats/embedded"
)

// startStats starts the statistics projector on opts.Stats (the embedded
// fact store in DataDir/stats when nil) with its runner and its schedule of
// day closing and snapshots, and builds the service the Statistics API
// reads. It resumes from the projector's snapshot when the fact store still
// holds its facts, and recomputes every day from the log otherwise.

// StatsBatchInterval is how often, at most, the statistics projection takes
// a live batch. Statistics are per day and closed at midnight, so a second
// of lag changes nothing anyone sees; taken at once, every group commit
// woke the projection (about a thousand a second under write load) and,
// with ClickHouse, made an INSERT of a few rows each, where ClickHouse wants
// about one insert a second (PITFALLS 21). Paced, account creates over HTTP
// gained about 3% (docs/benchmarks.md).
const StatsBatchInterval = time.Second

func (n *Node) startStats(ctx context.Context, opts Options) error {
	facts, name := opts.Stats, opts.StatsName
	if facts == nil {
		f, err := embedded.Open(filepath.Join(opts.DataDir, "stats"), embedded.Options{Logger: n.log.With("component", "stats")})
		if err != nil {
			return fmt.Errorf("open embedded statistics: %w", err)
		}
		facts, name, n.ownFacts = f, "embedded", f
	}
	if name == "" {
		name = "custom"
	}
	proj, err := stats.NewProjector(facts, stats.ProjectorOptions{
		Location: opts.EndOfDay, Logger: n.log.With("component", "stats"),
		// One snapshot per backend: it describes what that fact store holds.
		SnapshotPath: filepath.Join(opts.DataDir, "stats-"+name+".snapshot"),
	})
	if err != nil {
		return err
	}
	from, err := proj.Restore(ctx)
	if err != nil {
		return fmt.Errorf("restore statistics: %w", err)
	}
	runner := projections.NewRunner(n.Store, n.Registry, proj, projections.SnapshotCheckpoints{Position: from},
		projections.RunnerOptions{Logger: n.log.With("component", "stats"), MinBatchInterval: StatsBatchInterval})
	n.statsDone = make(chan struct{})
	go func() {
		defer close(n.statsDone)
		_ = runner.Run(ctx)
	}()
	n.statsSched, err = stats.StartScheduler(proj, stats.SchedulerOptions{
		Ready: func() bool { return runner.Stats().CaughtUp }, Clock: opts.Clock, Logger: n.log.With("component", "stats"),
	})
	if err != nil {
		return err
	}
	n.StatsRunner = runner
	n.Stats = stats.NewService(facts, stats.ReadModelCatalog{Model: n.Model}, proj)
	return nil
}

// closeStats waits for the statistics runner (its context is the node's run
// context, cancelled before), writes the last snapshot and closes the
// embedded fact store if the node opened it.
func (n *Node) closeStats() {
	if n.statsDone != nil {
		<-n.statsDone
	}
	if n.statsSched != nil {
		n.statsSched.Stop()
	}
	if n.ownFacts != nil {
		if err := n.ownFacts.Close(); err != nil {
			n.log.Warn("closing embedded statistics", "error", err)
		}
	}
}

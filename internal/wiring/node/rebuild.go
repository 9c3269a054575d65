package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"tvsm/eventstore"
	"tvsm/projections"
	"tvsm/projections/readmodel"
	"tvsm/projections/stats"
	"tvsm/projections/stats/embedded"
)

// The projections a node rebuilds and checks (the target of POST
// /api/admin/rebuilds).
const (
	RebuildReadModel = "readmodel"
	RebuildStats     = "stats"
)

// Rebuild limits.
const (
	// MaxDifferences is how many lines of differences a check keeps.
	MaxDifferences = 50
	// shortPass is how short a pass of a rebuild's replay must be for the
	// rebuild to take over: the last pass runs while the live projection
	// waits, so it must be short. While writes keep coming each pass
	// replays what came during the one before, so passes shorten fast.
	shortPass = 200 * time.Millisecond
	maxPasses = 20
)

// ErrNotReplaceable is why a node cannot rebuild statistics kept in a fact
// store that is not a stats.Replacer.
var ErrNotReplaceable = errors.New("node: the statistics store cannot be rebuilt beside itself")

// Rebuilds runs rebuilds and checks of a node's projections in the
// background, one per projection at a time (httpapi.Rebuilds).
//
// A rebuild builds a new version of a projection from the whole log
// beside the live one, while the node serves from the live one, and swaps
// it in once it has caught up (blue/green). A check (verify) captures the
// live state at a position, replays a fresh copy to exactly that position
// and reports how they differ; it swaps nothing.
type Rebuilds struct {
	n    *Node
	jobs *projections.RebuildJobs
}

// startRebuilds makes the node's Rebuilds; stopping the node cancels the
// running ones first (before the runners they hold stop).
func (n *Node) startRebuilds(context.Context, Options) error {
	n.Rebuilds = &Rebuilds{n: n, jobs: projections.NewRebuildJobs(n.log)}
	n.cleanup.push(n.Rebuilds.jobs.Close)
	return nil
}

// Targets returns the projections r rebuilds.
func (r *Rebuilds) Targets() []string { return []string{RebuildReadModel, RebuildStats} }

// Start starts a rebuild (verify false) or a check of target. It fails
// with projections.ErrRebuildRunning while one of target runs.
func (r *Rebuilds) Start(target string, verify bool) (projections.RebuildStatus, error) {
	var work projections.RebuildWork
	switch {
	case target == RebuildReadModel && verify:
		work = r.n.verifyReadModel
	case target == RebuildReadModel:
		work = r.n.rebuildReadModel
	case target == RebuildStats && verify:
		work = r.n.verifyStats
	case target == RebuildStats:
		if _, ok := r.n.statsFacts.(stats.Replacer); !ok {
			return projections.RebuildStatus{}, ErrNotReplaceable
		}
		work = r.n.rebuildStats
	default:
		return projections.RebuildStatus{}, fmt.Errorf("node: no projection %q to rebuild", target)
	}
	return r.jobs.Start(target, verify, work)
}

// Status returns the status of the job id.
func (r *Rebuilds) Status(id string) (projections.RebuildStatus, bool) { return r.jobs.Status(id) }

// List returns the jobs the node remembers, newest first.
func (r *Rebuilds) List() []projections.RebuildStatus { return r.jobs.List() }

// rebuildReadModel replays a new read model from the log beside the live
// one and makes it the live one (readmodel.Model.Adopt), then writes a
// snapshot of it.
func (n *Node) rebuildReadModel(ctx context.Context, job *projections.RebuildJob) error {
	fresh := n.newModel()
	rep := n.replayer(fresh, job)
	if err := rep.catchUp(ctx, n.Model.Position); err != nil {
		return err
	}
	job.SetPhase("taking over")
	err := n.Model.Hold(func() error {
		if err := rep.to(ctx, n.Model.Position()); err != nil {
			return err
		}
		n.Model.Adopt(fresh)
		return nil
	})
	if err != nil {
		return err
	}
	job.SetPhase("writing a snapshot")
	n.snapMu.Lock()
	n.snapPos = eventstore.Beginning // the file holds the old model
	n.snapMu.Unlock()
	n.snapshot()
	return nil
}

// verifyReadModel compares a copy of the live read model with one replayed
// to its position.
func (n *Node) verifyReadModel(ctx context.Context, job *projections.RebuildJob) error {
	job.SetPhase("capturing")
	live, err := n.Model.Copy()
	if err != nil {
		return err
	}
	fresh := n.newModel()
	return n.compare(ctx, job, fresh, live.Position(), func() ([]string, int, error) {
		return readmodel.Differences(live, fresh, MaxDifferences)
	})
}

// compare replays fresh, a new copy of a projection, to at, the position
// of a capture of the live one, and records what differences finds.
func (n *Node) compare(ctx context.Context, job *projections.RebuildJob, fresh projections.Handler, at eventstore.Position,
	differences func() ([]string, int, error)) error {
	job.SetHead(at)
	job.SetPhase("replaying")
	if err := n.replayer(fresh, job).to(ctx, at); err != nil {
		return err
	}
	job.SetPhase("comparing")
	lines, total, err := differences()
	if err != nil {
		return err
	}
	job.SetDifferences(lines, total)
	return nil
}

// rebuildStats replays new statistics from the log into a store beside the
// live one and makes them the live ones (stats.Projector.TakeOver and
// stats.Replacer.Replace: the old facts are dropped).
func (n *Node) rebuildStats(ctx context.Context, job *projections.RebuildJob) (err error) {
	live := n.statsProjector
	facts := n.statsFacts.(stats.Replacer)
	job.SetPhase("preparing")
	beside, err := facts.Beside(ctx)
	if err != nil {
		return err
	}
	replaced := false
	defer func() {
		if !replaced {
			err = errors.Join(err, facts.Discard(beside))
		}
	}()
	fresh, err := live.Beside(beside)
	if err != nil {
		return err
	}
	rep := n.replayer(fresh, job)
	// The runner's position, not the projector's last event: it follows
	// the log past the events the statistics skip, so a rebuild reaches
	// the head when the log ends with some (a catalog change).
	if err := rep.catchUp(ctx, n.StatsRunner.Progress().Position); err != nil {
		return err
	}
	job.SetPhase("taking over")
	return live.TakeOver(ctx, fresh, func(through eventstore.Position) error { return rep.to(ctx, through) },
		func() error {
			replaced = true // Replace closes beside, whatever it returns
			return facts.Replace(ctx, beside)
		})
}

// verifyStats compares the live statistics with statistics replayed to
// their position, in a scratch embedded store in the data directory.
func (n *Node) verifyStats(ctx context.Context, job *projections.RebuildJob) error {
	job.SetPhase("capturing")
	capture, err := n.statsProjector.Capture(ctx)
	if err != nil {
		return err
	}
	dir := filepath.Join(n.dataDir, "stats-verify")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	scratch, err := embedded.Open(dir, embedded.Options{Logger: n.log.With("component", "stats-verify")})
	if err != nil {
		return err
	}
	defer func() {
		if err := errors.Join(scratch.Close(), os.RemoveAll(dir)); err != nil {
			n.log.Warn("removing the statistics of a check", "dir", dir, "error", err)
		}
	}()
	fresh, err := n.statsProjector.Beside(scratch)
	if err != nil {
		return err
	}
	return n.compare(ctx, job, fresh, capture.At, func() ([]string, int, error) {
		return fresh.Differences(ctx, capture, MaxDifferences)
	})
}

// replayer replays the log into a new copy of a projection, beside the
// live one, reporting on job.
type replayer struct {
	n    *Node
	h    projections.Handler
	job  *projections.RebuildJob
	read eventstore.Position // what the copy has read the log through
}

func (n *Node) replayer(h projections.Handler, job *projections.RebuildJob) *replayer {
	return &replayer{n: n, h: h, job: job}
}

// to replays the log up to through (projections.ReplayTo).
func (r *replayer) to(ctx context.Context, through eventstore.Position) (err error) {
	r.read, err = projections.ReplayTo(ctx, r.n.Store, r.n.Registry, r.h, r.read, through, r.job.Progress)
	return err
}

// catchUp replays the log up to where the live projection is (live), and
// again while it moves on, until a pass is short enough for the copy to
// take over with a last one while the live projection waits.
func (r *replayer) catchUp(ctx context.Context, live func() eventstore.Position) error {
	r.job.SetPhase("replaying")
	for pass := 0; pass < maxPasses; pass++ {
		target := live()
		head, err := r.n.head(ctx)
		if err != nil || target.After(head) {
			head = target
		}
		r.job.SetHead(head) // where the log is; the live projection follows it
		if !target.After(r.read) {
			return nil
		}
		started := time.Now()
		if err := r.to(ctx, target); err != nil {
			return err
		}
		if time.Since(started) < shortPass {
			return nil
		}
	}
	return nil
}

// head returns the position of the newest event in the log, when the
// store can tell.
func (n *Node) head(ctx context.Context) (eventstore.Position, error) {
	hr, ok := n.backend.(eventstore.HeadReader)
	if !ok {
		return eventstore.Position{}, errors.ErrUnsupported
	}
	return hr.Head(ctx)
}

package projections

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"tvsm/eventstore"
	"tvsm/internal/platform/supervise"
)

// RebuildState is where a rebuild or check stands.
type RebuildState string

// States of a RebuildJob.
const (
	RebuildRunning RebuildState = "running"
	RebuildDone    RebuildState = "done"
	RebuildFailed  RebuildState = "failed"
)

// ErrRebuildRunning is returned by RebuildJobs.Start while a job of the
// same target runs.
var ErrRebuildRunning = errors.New("projections: a rebuild of this projection is running")

// keptRebuildJobs is how many finished jobs RebuildJobs remembers.
const keptRebuildJobs = 32

// RebuildStatus is what a rebuild or check of a projection has done so
// far.
type RebuildStatus struct {
	ID     string
	Target string
	// Verify: a check (a fresh copy compared with the live state), not a
	// rebuild.
	Verify bool
	State  RebuildState
	// Phase says what the job does now, for people ("replaying", "taking
	// over", "comparing", ...).
	Phase string
	// Applied counts the events applied to the new copy.
	Applied uint64
	// Through is the log position the copy has been read through; Head
	// where it is going: the log's head for a rebuild, the position of
	// the captured live state for a check.
	Through, Head     eventstore.Position
	Started, Finished time.Time
	// Differences are the first differences a check found (lines "- live"
	// and "+ rebuilt"); DifferenceCount counts them all.
	Differences     []string
	DifferenceCount int
	// Error is why the job failed.
	Error string
}

// Rate returns the events applied per second since the job started, up
// to now or to its end.
func (s RebuildStatus) Rate(now time.Time) float64 {
	end := s.Finished
	if end.IsZero() {
		end = now
	}
	if d := end.Sub(s.Started).Seconds(); d > 0 {
		return float64(s.Applied) / d
	}
	return 0
}

// RebuildJob is one rebuild or check running in the background. The work
// reports on it as it goes; RebuildJobs.Status reads it.
type RebuildJob struct {
	mu sync.Mutex
	st RebuildStatus
}

// SetPhase records what the job does now.
func (j *RebuildJob) SetPhase(phase string) {
	j.mu.Lock()
	j.st.Phase = phase
	j.mu.Unlock()
}

// SetHead records where the job is going.
func (j *RebuildJob) SetHead(head eventstore.Position) {
	j.mu.Lock()
	j.st.Head = head
	j.mu.Unlock()
}

// Progress records a replay's progress; it is a ReplayProgress.
func (j *RebuildJob) Progress(through eventstore.Position, events int) {
	j.mu.Lock()
	j.st.Applied += uint64(events)
	if through.After(j.st.Through) {
		j.st.Through = through
	}
	if j.st.Through.After(j.st.Head) {
		j.st.Head = j.st.Through
	}
	j.mu.Unlock()
}

// SetDifferences records what a check found: the first lines and how many
// differences there are in all.
func (j *RebuildJob) SetDifferences(lines []string, total int) {
	j.mu.Lock()
	j.st.Differences, j.st.DifferenceCount = lines, total
	j.mu.Unlock()
}

func (j *RebuildJob) status() RebuildStatus {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.Differences = slices.Clone(st.Differences)
	return st
}

// finish records the job's end.
func (j *RebuildJob) finish(err error, now time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st.Finished = now
	j.st.State = RebuildDone
	if err != nil {
		j.st.State, j.st.Error = RebuildFailed, err.Error()
	}
}

// RebuildWork is what a job does: it reports on job as it goes and returns
// once done.
type RebuildWork func(ctx context.Context, job *RebuildJob) error

// RebuildJobs runs rebuilds and checks of projections in the background,
// at most one per target at a time, and remembers the last ones. Create
// it with NewRebuildJobs; Close cancels the running ones.
type RebuildJobs struct {
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	jobs    []*RebuildJob // oldest first
	running map[string]*RebuildJob
}

// NewRebuildJobs returns an empty set of jobs.
func NewRebuildJobs(log *slog.Logger) *RebuildJobs {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &RebuildJobs{log: log, ctx: ctx, cancel: cancel, running: map[string]*RebuildJob{}}
}

// Start starts work as a job on target and returns its status at once. It
// fails with ErrRebuildRunning while another job on target runs.
func (js *RebuildJobs) Start(target string, verify bool, work RebuildWork) (RebuildStatus, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if err := js.ctx.Err(); err != nil {
		return RebuildStatus{}, fmt.Errorf("projections: rebuild %s: shutting down", target)
	}
	if _, busy := js.running[target]; busy {
		return RebuildStatus{}, fmt.Errorf("%w: %s", ErrRebuildRunning, target)
	}
	job := &RebuildJob{st: RebuildStatus{ID: newJobID(), Target: target, Verify: verify,
		State: RebuildRunning, Phase: "starting", Started: time.Now()}}
	js.running[target] = job
	js.jobs = append(js.jobs, job)
	// Forget the oldest finished jobs beyond the number kept.
	excess := len(js.jobs) - keptRebuildJobs
	js.jobs = slices.DeleteFunc(js.jobs, func(j *RebuildJob) bool {
		if excess > 0 && j.status().State != RebuildRunning {
			excess--
			return true
		}
		return false
	})
	log := js.log.With("rebuild", job.st.ID, "target", target, "verify", verify)
	js.wg.Go(func() {
		log.Info("rebuild started")
		err := js.runGuarded(log, target, job, work)
		js.mu.Lock() // the target is free once the job shows its end
		job.finish(err, time.Now())
		delete(js.running, target)
		js.mu.Unlock()
		st := job.status()
		if err != nil {
			log.Warn("rebuild failed", "error", err, "events", st.Applied)
		} else {
			log.Info("rebuild done", "events", st.Applied, "through", st.Through.String(),
				"took", st.Finished.Sub(st.Started), "differences", st.DifferenceCount)
		}
	})
	return job.status(), nil
}

// runGuarded runs work, turning a panic into its error.
func (js *RebuildJobs) runGuarded(log *slog.Logger, target string, job *RebuildJob, work RebuildWork) (err error) {
	defer supervise.Recover(log, "rebuild/"+target, func(p *supervise.Panic) { err = p })
	return work(js.ctx, job)
}

// Status returns the status of the job id.
func (js *RebuildJobs) Status(id string) (RebuildStatus, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.jobs {
		if j.st.ID == id {
			return j.status(), true
		}
	}
	return RebuildStatus{}, false
}

// List returns the status of the jobs remembered, newest first.
func (js *RebuildJobs) List() []RebuildStatus {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]RebuildStatus, 0, len(js.jobs))
	for _, j := range slices.Backward(js.jobs) {
		out = append(out, j.status())
	}
	return out
}

// Close cancels the running jobs and waits for them to end; Start fails
// afterwards.
func (js *RebuildJobs) Close() {
	js.mu.Lock()
	js.cancel()
	js.mu.Unlock()
	js.wg.Wait()
}

// newJobID returns a random id: ids of two nodes, or of two runs of one
// node, do not collide.
func newJobID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

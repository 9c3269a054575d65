package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"tvsm/eventstore"
)

// Blue/green rebuilds and checks. A rebuild fills a new projector (Beside)
// from the log into a store beside the live one (Replacer.Beside), and
// TakeOver makes it the live one. A check captures the live statistics
// at a position (Capture), replays a new projector to that position and
// compares (Differences).

// Beside returns a new, empty projector with p's options (time zone,
// window) writing to facts and keeping no snapshot: a rebuild or a check
// fills it from the log beside p.
func (p *Projector) Beside(facts FactStore) (*Projector, error) {
	opts := p.opts
	opts.SnapshotPath = ""
	return NewProjector(facts, opts)
}

// TakeOver makes fresh, a projector rebuilt from the log beside p (see
// Beside) into a store from p's store's Replacer.Beside, the one p is. p
// applies no events meanwhile (a runner feeding it waits): catchUp brings
// fresh to p's position, fresh closes the days p has closed and writes its
// facts, replace moves them into p's store (Replacer.Replace), and p takes
// fresh's state and writes a snapshot of it. fresh must not be used
// afterwards.
//
// p's snapshot is removed before replace: a crash from then on restarts
// without one, and recomputes every day from the log into whichever facts
// the store then holds.
func (p *Projector) TakeOver(ctx context.Context, fresh *Projector, catchUp func(through eventstore.Position) error, replace func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := catchUp(p.applied); err != nil {
		return err
	}
	fresh.mu.Lock()
	defer fresh.mu.Unlock()
	fresh.closeThrough(p.closed)
	if err := fresh.flush(ctx); err != nil {
		return fmt.Errorf("stats: take over: %w", err)
	}
	if p.opts.SnapshotPath != "" {
		if err := os.Remove(p.opts.SnapshotPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stats: take over: %w", err)
		}
	}
	p.snapPos = eventstore.Beginning
	if err := replace(); err != nil {
		return fmt.Errorf("stats: take over: %w", err)
	}
	if fresh.applied.After(p.applied) {
		p.applied = fresh.applied
	}
	p.st, p.days, p.ends, p.pending = fresh.st, fresh.days, fresh.ends, fresh.pending
	p.closed, p.written, p.last = fresh.closed, fresh.written, fresh.last
	p.publishWritten()
	fresh.reset()
	if err := p.writeSnapshot(ctx); err != nil {
		p.log.Warn("statistics snapshot after a rebuild", "error", err)
	}
	return nil
}

// closeThrough closes the days up to mark's, as the live projector whose
// last closed day mark is has done (by events or by the clock).
func (p *Projector) closeThrough(mark dayMark) {
	if mark.ok && p.st.started {
		p.advance(mark.day+1, p.applied.Commit)
	}
}

// Capture is the live statistics at a log position, rendered (Render), for
// a check against statistics rebuilt to that position.
type Capture struct {
	// At is the position of the last event the statistics applied.
	At     eventstore.Position
	closed dayMark
	days   Range
	lines  []string
}

// Capture writes p's pending facts and renders its store, every day of it,
// while p applies no events: the statistics as of p.Position(). The days
// of device class totals are those from the first subscription row to the
// day open now.
func (p *Projector) Capture(ctx context.Context) (*Capture, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.flush(ctx); err != nil {
		return nil, fmt.Errorf("stats: capture: %w", err)
	}
	c := &Capture{At: p.applied, closed: p.closed, days: Range{From: p.st.open, To: p.st.open}}
	err := p.facts.SubscriptionDays(ctx, AllDays, func(row SubscriptionDay) error {
		c.days.From = min(c.days.From, row.Day)
		c.days.To = max(c.days.To, row.Day)
		return nil
	})
	if err == nil {
		c.lines, err = Render(ctx, p.facts, AllDays, c.days, false)
	}
	if err != nil {
		return nil, fmt.Errorf("stats: capture: %w", err)
	}
	return c, nil
}

// Differences compares the capture c of the live statistics with p, a
// projector replayed from the beginning of the log to c.At (see Beside):
// p first closes the days the live one had closed and writes its facts.
// It reports at most limit lines of differences (DiffLines) and how many
// there are.
func (p *Projector) Differences(ctx context.Context, c *Capture, limit int) (lines []string, total int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeThrough(c.closed)
	if err := p.flush(ctx); err != nil {
		return nil, 0, fmt.Errorf("stats: compare: %w", err)
	}
	rebuilt, err := Render(ctx, p.facts, AllDays, c.days, false)
	if err != nil {
		return nil, 0, fmt.Errorf("stats: compare: %w", err)
	}
	lines, total = DiffLines(c.lines, rebuilt, limit)
	return lines, total, nil
}

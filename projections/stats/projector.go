package stats

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// Name is the projector's handler name ("stats.v1"): a new name means a
// full replay (projections.Handler).
const Name = "stats.v1"

// Defaults of ProjectorOptions.
const (
	DefaultWindow    = 3
	DefaultFlushRows = 50_000
	DefaultGrace     = time.Minute
	maxWindow        = 62 // days of viewing bits in a uint64, with the open day
)

// ProjectorOptions configure a Projector.
type ProjectorOptions struct {
	// Location is where days are cut at midnight (default UTC).
	Location *time.Location
	// Window is how many closed days keep their end state, so that late
	// viewing reports for them still count as active (default 3, at most
	// 62). Reports later than that are kept as viewing but change no
	// closed day's active count.
	Window int
	// FlushRows bounds the facts held before writing in Replay mode
	// (default 50,000); in Live mode every batch is written at once.
	FlushRows int
	// Grace is how long after midnight CloseDue closes a day on which no
	// event passed midnight (default one minute), so events stamped just
	// before midnight and appended just after still count for their day.
	Grace time.Duration
	// SnapshotPath is where WriteSnapshot and Restore keep the projector's
	// state with its log position ("" disables snapshots: every start
	// replays the whole log).
	SnapshotPath string
	Logger       *slog.Logger
}

// Projector turns the log into statistics facts. It is a
// projections.Handler; feed it with a projections.Runner started after the
// position Restore returns, with projections.SnapshotCheckpoints, and run a
// Scheduler beside it to close quiet days and take snapshots.
//
// It keeps in memory, per account, what a day's statistic needs (enabled,
// bound devices, subscription windows, which recent days it watched) and
// closes a day when an event at or past the next midnight arrives, or when
// CloseDue finds midnight (plus the grace) passed. The statistic of a day
// is the state after every event stamped before the next midnight, with
// subscription windows evaluated at the last instant of the day. Days with
// no events repeat the previous state.
//
// Idempotence: events at or before the last applied position are skipped,
// the state is saved with that position (snapshots), every fact is keyed
// by the event that produced it, and subscription rows carry the log
// position that produced them as their version.
type Projector struct {
	facts  FactStore
	opts   ProjectorOptions
	loc    *time.Location
	log    *slog.Logger
	window int

	mu      sync.Mutex
	st      *state
	applied eventstore.Position
	// days holds the last window closed days' rows, at day % window; ends
	// the subscriptions each account ended those days with.
	days    []closedDay
	ends    [][][]sub
	pending pending
	// closed is the last closed day; written the last one whose rows are
	// in the fact store.
	closed, written dayMark
	last            lastWrite
	snapPos         eventstore.Position

	// writtenThrough is written.day+1 (0: none), readable without mu,
	// which a flush holds while the fact store is slow or away; rows
	// counts the rows handed to the fact store, by table.
	writtenThrough atomic.Int64
	rows           [tableCount]atomic.Uint64
}

// The fact store's tables, as RowsWritten counts them.
const (
	TableViewing = iota
	TableSubscriptionDays
	TableClassSeen
	tableCount
)

// TableNames name the tables of RowsWritten, by index.
var TableNames = [tableCount]string{"viewing", "subscription_days", "class_seen"}

// dayMark is a day that may be unset.
type dayMark struct {
	day Day
	ok  bool
}

// closedDay is one closed day's rows, kept while late viewing can change
// their active counts.
type closedDay struct {
	day     Day
	ok      bool
	rows    []SubscriptionDay
	index   map[rowKey]int
	dirty   bool // changed since last handed to pending
	version uint64
}

type rowKey struct{ provider, tariff int64 }

// lastWrite remembers where the last facts went, so that Restore can tell
// whether the fact store still holds what the snapshot says was written.
type lastWrite struct {
	subProvider, factProvider int64
	subDay, factDay           Day
	hasSub, hasFact           bool
}

// NewProjector returns a projector writing to facts.
func NewProjector(facts FactStore, opts ProjectorOptions) (*Projector, error) {
	if facts == nil {
		return nil, errors.New("stats: NewProjector needs a FactStore")
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Window > maxWindow {
		return nil, fmt.Errorf("stats: window of %d days is more than %d", opts.Window, maxWindow)
	}
	if opts.FlushRows <= 0 {
		opts.FlushRows = DefaultFlushRows
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Projector{facts: facts, opts: opts, loc: opts.Location, log: opts.Logger.With("projection", Name), window: opts.Window}
	p.reset()
	return p, nil
}

// reset empties the state.
func (p *Projector) reset() {
	p.st = newState()
	p.applied = eventstore.Beginning
	p.days = make([]closedDay, p.window)
	p.ends = make([][][]sub, p.window)
	p.pending = pending{}
	p.closed, p.written, p.last = dayMark{}, dayMark{}, lastWrite{}
	p.publishWritten()
}

// publishWritten makes p.written readable without mu. p.mu is held.
func (p *Projector) publishWritten() {
	var v int64
	if p.written.ok {
		v = int64(p.written.day) + 1
	}
	p.writtenThrough.Store(v)
}

// Name implements projections.Handler.
func (p *Projector) Name() string { return Name }

// Filter implements projections.Handler: accounts (state, subscriptions,
// devices), tariffs (a row per tariff and day) and devices (connections,
// viewing).
func (p *Projector) Filter() eventstore.Filter {
	return eventstore.Filter{
		StreamPrefixes: []string{domain.StreamAccount.Prefix(), domain.StreamTariff.Prefix(), domain.StreamDevice.Prefix()},
		EventTypePrefixes: []string{"Account", "Subscription", domain.DeviceBoundType, domain.DeviceUnboundType,
			domain.TariffCreatedType, domain.TariffDeletedType, domain.DeviceConnectedType, domain.ViewingReportedType},
	}
}

// Apply implements projections.Handler. Events at or before the last
// applied position are skipped, so a batch delivered again changes
// nothing; so are events of a type this node does not know (written by a
// newer node). In Live mode the facts are written before Apply returns; in
// Replay mode once FlushRows have gathered (or on Flush).
func (p *Projector) Apply(ctx context.Context, events iter.Seq[*projections.Event], mode projections.Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ev := range events {
		if !ev.Position.After(p.applied) {
			continue // a batch begins where the last one (or a snapshot) left off
		}
		if ev.Err != nil {
			return fmt.Errorf("stats: apply %s of %s at %v: %w", ev.Type, ev.Stream, ev.Position, ev.Err)
		}
		if ev.Payload != nil {
			p.apply(ev)
		}
		p.applied = ev.Position
	}
	if mode == projections.Live || p.pending.rows() >= p.opts.FlushRows {
		return p.flush(ctx)
	}
	return nil
}

// apply applies one event: first it closes the days that ended before the
// event happened, then it changes the state.
func (p *Projector) apply(ev *projections.Event) {
	day := DayOf(ev.OccurredAt, p.loc)
	version := ev.Position.Commit
	p.advance(day, version)
	switch e := ev.Payload.(type) {
	case domain.TariffCreated, domain.TariffDeleted:
		p.st.applyTariff(e)
	case domain.DeviceConnected:
		if a := p.st.account(e.Account); a != nil {
			for _, d := range a.devices {
				if d.id == e.DeviceID {
					p.markSeen(a.provider, p.st.className(d.class), day)
				}
			}
		}
	case domain.ViewingReported:
		p.viewing(e, day, version)
	case domain.DeviceBound:
		p.st.applyAccount(e)
		if a := p.st.account(e.AccountID); a != nil {
			p.markSeen(a.provider, string(e.Class), day)
		}
	default:
		p.st.applyAccount(e)
	}
}

// viewing records the sessions of a report as facts, each on the day it
// started (never after the day of the report: a device clock running
// ahead does not put viewing into the future), and marks the account as
// active on those days.
func (p *Projector) viewing(e domain.ViewingReported, reported Day, version uint64) {
	a := p.st.account(e.Account)
	for i, s := range e.Sessions {
		if s.Seconds <= 0 {
			continue
		}
		d := min(DayOf(s.Start, p.loc), reported)
		p.pending.facts = append(p.pending.facts, ViewingFact{
			Day: d, Provider: e.Provider, Account: e.Account, Device: e.DeviceID, Class: string(e.Class),
			Channel: s.Channel, Live: s.Mode != domain.ViewingDVR, Seconds: s.Seconds,
			Position: version, Index: int32(i),
		})
		p.markSeen(e.Provider, string(e.Class), d)
		if a != nil && a.exists {
			p.markViewed(a, d, version)
		}
	}
}

// markSeen records that a device of class was used for provider on day d,
// unless an earlier day is already recorded.
func (p *Projector) markSeen(provider int64, class string, d Day) {
	k := classKey{provider, class}
	if cur, ok := p.st.seen[k]; ok && cur <= d {
		return
	}
	p.st.seen[k] = d
	p.pending.seen = append(p.pending.seen, DeviceClassSeen{Provider: provider, Class: class, Day: d})
}

// Flush writes the facts gathered so far.
func (p *Projector) Flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flush(ctx)
}

// ClosedThrough returns the last closed day whose statistics are in the
// fact store: the Statistics API shows days up to it.
// It does not wait for a flush under way.
func (p *Projector) ClosedThrough() (Day, bool) {
	v := p.writtenThrough.Load()
	return Day(v - 1), v > 0
}

// RowsWritten returns how many rows this projector has handed to its fact
// store since it was created, by table (TableViewing…). Rows rewritten
// (a closed day's counts changed by late viewing) count again.
func (p *Projector) RowsWritten() [tableCount]uint64 {
	var n [tableCount]uint64
	for i := range n {
		n[i] = p.rows[i].Load()
	}
	return n
}

// Position returns the last applied log position.
func (p *Projector) Position() eventstore.Position {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

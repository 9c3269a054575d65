package stats

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// advance closes every day before day (the day of the event about to be
// applied, or the day CloseDue found current): each with the state as it
// is now, which is the state after every event before its midnight. An
// event stamped before the open day (a clock behind, or appended long after
// it happened) closes nothing and counts for the open day.
func (p *Projector) advance(day Day, version uint64) {
	st := p.st
	if !st.started {
		st.open, st.started = day, true
		return
	}
	for st.open < day {
		p.closeDay(st.open, version)
		st.open++
	}
}

// slotOf is the index of day d in the window rings.
func (p *Projector) slotOf(d Day) int {
	w := Day(p.window)
	return int((d%w + w) % w)
}

// closeDay computes day d's subscription rows from the state: one per
// tariff existing at its end, and one per tariff with subscribers. It keeps
// them, and what every account ended the day subscribed to, in the window.
func (p *Projector) closeDay(d Day, version uint64) {
	st := p.st
	end := (d + 1).Time(p.loc).Unix()
	slot := p.slotOf(d)
	p.materialize(&p.days[slot]) // the day leaving the window
	rows := map[rowKey]*SubscriptionDay{}
	// A tariff's accounts are of its provider: looking rows up by the
	// tariff alone (an int64 key, hashed much faster than the pair) finds
	// them, and the pair map stays the truth. Closing runs this lookup for
	// every account every day.
	byTariff := map[int64]*SubscriptionDay{}
	row := func(provider, tariff int64) *SubscriptionDay {
		if r := byTariff[tariff]; r != nil && r.Provider == provider {
			return r
		}
		k := rowKey{provider, tariff}
		r := rows[k]
		if r == nil {
			r = &SubscriptionDay{Day: d, Provider: provider, Tariff: tariff, Version: version}
			rows[k] = r
		}
		byTariff[tariff] = r
		return r
	}
	for id, t := range st.tariffs {
		if t.exists {
			row(t.provider, id)
		}
	}
	ends := slices.Grow(p.ends[slot][:0], len(st.accounts))[:len(st.accounts)]
	var buf [8]int64
	for i := range st.accounts {
		a := &st.accounts[i]
		ends[i] = nil
		if a.exists {
			ends[i] = a.subs
			for _, t := range tariffsAt(buf[:0], a.subs, end) {
				count(row(a.provider, t), a)
			}
		}
		a.viewed <<= 1
	}
	p.ends[slot] = ends
	p.days[slot] = keepRows(d, rows, version)
	p.pending.subs = append(p.pending.subs, p.days[slot].rows...)
	p.closed = dayMark{day: d, ok: true}
}

// count adds account a, subscribed to r's tariff, to r.
func count(r *SubscriptionDay, a *account) {
	if a.enabled {
		r.Enabled++
		r.EnabledDevices += int64(len(a.devices))
		if len(a.devices) > 0 {
			r.EnabledWithDevices++
		}
	} else {
		r.Disabled++
	}
	if a.viewed&1 != 0 {
		r.Active++
	}
}

// keepRows returns the closed day of rows, ordered by provider and tariff.
func keepRows(d Day, rows map[rowKey]*SubscriptionDay, version uint64) closedDay {
	cd := closedDay{day: d, ok: true, rows: make([]SubscriptionDay, 0, len(rows)), index: make(map[rowKey]int, len(rows)), version: version}
	for _, r := range rows {
		cd.rows = append(cd.rows, *r)
	}
	slices.SortFunc(cd.rows, func(a, b SubscriptionDay) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Tariff, b.Tariff))
	})
	for i, r := range cd.rows {
		cd.index[rowKey{r.Provider, r.Tariff}] = i
	}
	return cd
}

// markViewed records that account a watched on day d. On a closed day of
// the window that it had not watched on yet, it adds the account to the
// active count of every tariff it ended that day subscribed to; the day's
// rows are written again with version.
func (p *Projector) markViewed(a *account, d Day, version uint64) {
	k := p.st.open - d
	if k < 0 || k > Day(p.window) {
		return // beyond the window: the viewing counts, the day's active count stays
	}
	bit := uint64(1) << k
	if a.viewed&bit != 0 {
		return
	}
	a.viewed |= bit
	if k == 0 {
		return // the open day: counted when it closes
	}
	slot := p.slotOf(d)
	cd := &p.days[slot]
	if !cd.ok || cd.day != d {
		return // before the first closed day
	}
	i := int(p.st.slot[a.id])
	if i >= len(p.ends[slot]) {
		return // created after d closed
	}
	var buf [8]int64
	for _, t := range tariffsAt(buf[:0], p.ends[slot][i], (d + 1).Time(p.loc).Unix()) {
		if j, ok := cd.index[rowKey{a.provider, t}]; ok {
			cd.rows[j].Active++
			cd.dirty, cd.version = true, version
		}
	}
}

// materialize hands a changed closed day's rows to pending.
func (p *Projector) materialize(cd *closedDay) {
	if !cd.dirty {
		return
	}
	for _, r := range cd.rows {
		r.Version = cd.version
		p.pending.subs = append(p.pending.subs, r)
	}
	cd.dirty = false
}

// CloseDue closes the days that ended at least Grace before now, although
// no event has passed their midnight, and writes them. The Scheduler calls
// it; call it only once the projector has caught up with the log, or days
// would be closed before their events were applied.
func (p *Projector) CloseDue(ctx context.Context, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st.started {
		p.advance(DayOf(now.Add(-p.opts.Grace), p.loc), p.applied.Commit)
	}
	return p.flush(ctx)
}

// pending is what has not been written to the fact store yet.
type pending struct {
	facts []ViewingFact
	subs  []SubscriptionDay
	seen  []DeviceClassSeen
}

func (w *pending) rows() int { return len(w.facts) + len(w.subs) + len(w.seen) }

// flush writes pending facts. What was written is dropped from pending as
// soon as its call succeeds; on an error the rest stays for the next
// flush (rewrites are idempotent).
func (p *Projector) flush(ctx context.Context) error {
	for i := range p.days {
		p.materialize(&p.days[i])
	}
	w := &p.pending
	closed := p.closed
	if len(w.facts) > 0 {
		if err := p.facts.WriteViewing(ctx, w.facts); err != nil {
			return err
		}
		p.rows[TableViewing].Add(uint64(len(w.facts)))
		f := w.facts[len(w.facts)-1]
		p.last.factProvider, p.last.factDay, p.last.hasFact = f.Provider, f.Day, true
		w.facts = w.facts[:0]
	}
	if len(w.subs) > 0 {
		if err := p.facts.WriteSubscriptionDays(ctx, w.subs); err != nil {
			return err
		}
		p.rows[TableSubscriptionDays].Add(uint64(len(w.subs)))
		r := w.subs[len(w.subs)-1]
		p.last.subProvider, p.last.subDay, p.last.hasSub = r.Provider, r.Day, true
		w.subs = w.subs[:0]
	}
	if len(w.seen) > 0 {
		if err := p.facts.WriteClassSeen(ctx, w.seen); err != nil {
			return err
		}
		p.rows[TableClassSeen].Add(uint64(len(w.seen)))
		w.seen = w.seen[:0]
	}
	p.written = closed
	p.publishWritten()
	return nil
}

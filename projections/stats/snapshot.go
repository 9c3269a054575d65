package stats

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"tvsm/eventstore"
	"tvsm/projections"
)

// snapshotFormat is the version of the payload written by WriteSnapshot.
const snapshotFormat = 1

// WriteSnapshot writes the pending facts, then saves the state with its
// log position (projections.WriteSnapshot: atomic, checksummed) at
// SnapshotPath, unless nothing was applied since the last snapshot. It
// holds the projector's lock meanwhile, so the state cannot move.
func (p *Projector) WriteSnapshot(ctx context.Context) error {
	if p.opts.SnapshotPath == "" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writeSnapshot(ctx)
}

// writeSnapshot is WriteSnapshot with p.mu held.
func (p *Projector) writeSnapshot(ctx context.Context) error {
	if !p.applied.After(p.snapPos) {
		return nil
	}
	if err := p.flush(ctx); err != nil {
		return fmt.Errorf("stats: snapshot: %w", err)
	}
	if err := projections.WriteSnapshot(p.opts.SnapshotPath, p.applied, p.encode); err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	p.snapPos = p.applied
	return nil
}

// Restore loads the snapshot at SnapshotPath and returns the position to
// resume the log after. Without a usable snapshot (none, damaged, of
// another window or time zone, or one whose facts the fact store does not
// hold, as when the store was emptied or replaced) it starts empty and
// returns eventstore.Beginning: every past day is then recomputed from the
// log. Call it before the runner starts.
func (p *Projector) Restore(ctx context.Context) (eventstore.Position, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.publishWritten()
	p.reset()
	if p.opts.SnapshotPath == "" {
		return eventstore.Beginning, nil
	}
	pos, err := projections.ReadSnapshot(p.opts.SnapshotPath, p.decode)
	if err == nil {
		err = p.checkFacts(ctx)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.reset()
		return eventstore.Beginning, nil
	case errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled):
		p.reset()
		return eventstore.Beginning, err
	case err != nil:
		p.log.Warn("statistics snapshot unusable; recomputing every day from the log", "error", err)
		p.reset()
		return eventstore.Beginning, nil
	}
	p.applied, p.snapPos = pos, pos
	return pos, nil
}

// checkFacts asks the fact store for the last rows the snapshot says were
// written.
func (p *Projector) checkFacts(ctx context.Context) error {
	l := p.last
	if l.hasSub {
		rows, err := AllSubscriptionDays(ctx, p.facts, Range{From: l.subDay, To: l.subDay, Provider: l.subProvider})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return fmt.Errorf("the fact store has no rows of %v (provider %d) that the snapshot says were written", l.subDay, l.subProvider)
		}
	}
	if l.hasFact {
		ids, err := p.facts.ActiveAccounts(ctx, l.factProvider, l.factDay)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return fmt.Errorf("the fact store has no viewing of %v (provider %d) that the snapshot says was written", l.factDay, l.factProvider)
		}
	}
	return nil
}

func (p *Projector) encode(w io.Writer) error {
	e := &encoder{w: bufio.NewWriter(w)}
	st := p.st
	e.uint(snapshotFormat)
	e.int(int64(p.window))
	e.str(p.loc.String())
	e.bool(st.started)
	e.int(int64(st.open))
	for _, m := range []dayMark{p.closed, p.written} {
		e.bool(m.ok)
		e.int(int64(m.day))
	}
	e.bool(p.last.hasSub)
	e.bool(p.last.hasFact)
	e.ints(p.last.subProvider, int64(p.last.subDay), p.last.factProvider, int64(p.last.factDay))
	e.uint(uint64(len(st.classes)))
	for _, c := range st.classes {
		e.str(c)
	}
	e.uint(uint64(len(st.seen)))
	for k, d := range st.seen {
		e.int(k.provider)
		e.str(k.class)
		e.int(int64(d))
	}
	e.uint(uint64(len(st.tariffs)))
	for id, t := range st.tariffs {
		e.ints(id, t.provider)
		e.bool(t.exists)
	}
	e.uint(uint64(len(st.accounts)))
	for i := range st.accounts {
		e.account(&st.accounts[i])
	}
	for slot := range p.days {
		e.closedDay(&p.days[slot])
		e.ends(p.ends[slot], st.accounts)
	}
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

func (p *Projector) decode(r io.Reader) error {
	d := &decoder{r: bufio.NewReader(r)}
	st := p.st
	if v := d.uint(); v != snapshotFormat {
		return fmt.Errorf("payload format %d, want %d", v, snapshotFormat)
	}
	if w := d.int(); w != int64(p.window) {
		return fmt.Errorf("taken with a window of %d days, now %d", w, p.window)
	}
	if loc := d.str(); loc != p.loc.String() {
		return fmt.Errorf("taken in time zone %q, now %q", loc, p.loc.String())
	}
	st.started, st.open = d.bool(), Day(d.int())
	for _, m := range []*dayMark{&p.closed, &p.written} {
		m.ok, m.day = d.bool(), Day(d.int())
	}
	p.last.hasSub, p.last.hasFact = d.bool(), d.bool()
	p.last.subProvider, p.last.subDay = d.int(), Day(d.int())
	p.last.factProvider, p.last.factDay = d.int(), Day(d.int())
	for range d.count() {
		st.classes = append(st.classes, d.str())
	}
	for range d.count() {
		k := classKey{provider: d.int(), class: d.str()}
		st.seen[k] = Day(d.int())
	}
	for range d.count() {
		id := d.int()
		st.tariffs[id] = tariff{provider: d.int(), exists: d.bool()}
	}
	n := d.count()
	st.accounts = make([]account, 0, n)
	for i := range n {
		a := d.account()
		st.accounts = append(st.accounts, a)
		st.slot[a.id] = int32(i)
	}
	for slot := range p.days {
		p.days[slot] = d.closedDay()
		p.ends[slot] = d.ends(st.accounts)
	}
	return d.err
}

// encoder writes varints, remembering the first error.
type encoder struct {
	w   *bufio.Writer
	buf [binary.MaxVarintLen64]byte
	err error
}

func (e *encoder) uint(v uint64) {
	if e.err == nil {
		_, e.err = e.w.Write(binary.AppendUvarint(e.buf[:0], v))
	}
}

func (e *encoder) int(v int64) {
	if e.err == nil {
		_, e.err = e.w.Write(binary.AppendVarint(e.buf[:0], v))
	}
}

func (e *encoder) ints(vs ...int64) {
	for _, v := range vs {
		e.int(v)
	}
}

func (e *encoder) bool(b bool) {
	if b {
		e.uint(1)
	} else {
		e.uint(0)
	}
}

func (e *encoder) str(s string) {
	e.uint(uint64(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *encoder) account(a *account) {
	e.ints(a.id, a.provider)
	e.uint(a.viewed)
	e.bool(a.enabled)
	e.bool(a.exists)
	e.subs(a.subs)
	e.uint(uint64(len(a.devices)))
	for _, dv := range a.devices {
		e.int(dv.id)
		e.uint(uint64(dv.class))
	}
}

func (e *encoder) subs(subs []sub) {
	e.uint(uint64(len(subs)))
	for _, s := range subs {
		e.ints(s.id, s.tariff, s.start, s.stop)
	}
}

func (e *encoder) closedDay(cd *closedDay) {
	e.bool(cd.ok)
	e.int(int64(cd.day))
	e.uint(cd.version)
	e.uint(uint64(len(cd.rows)))
	for _, r := range cd.rows {
		e.ints(r.Provider, r.Tariff, r.Enabled, r.EnabledDevices, r.Active, r.Disabled, r.EnabledWithDevices)
	}
}

// Subscription lists a closed day ended with: mostly the account's current
// one, written as a marker.
const (
	endsNone = iota
	endsCurrent
	endsOwn
)

func (e *encoder) ends(ends [][]sub, accounts []account) {
	e.uint(uint64(len(ends)))
	for i, subs := range ends {
		switch {
		case subs == nil:
			e.uint(endsNone)
		case slices.Equal(subs, accounts[i].subs):
			e.uint(endsCurrent)
		default:
			e.uint(endsOwn)
			e.subs(subs)
		}
	}
}

// decoder reads what encoder wrote, remembering the first error.
type decoder struct {
	r   *bufio.Reader
	err error
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	d.err = err
	return v
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	d.err = err
	return v
}

func (d *decoder) bool() bool { return d.uint() == 1 }

// count reads a length, refusing absurd ones (a corrupt file).
func (d *decoder) count() int {
	n := d.uint()
	if n > 1<<31 {
		d.err = cmpErr(d.err, fmt.Errorf("bad length %d", n))
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.count()
	if d.err != nil || n > 1<<20 {
		d.err = cmpErr(d.err, fmt.Errorf("bad string length %d", n))
		return ""
	}
	b := make([]byte, n)
	_, d.err = io.ReadFull(d.r, b)
	return string(b)
}

func cmpErr(prev, err error) error {
	if prev != nil {
		return prev
	}
	return err
}

func (d *decoder) account() account {
	a := account{id: d.int(), provider: d.int(), viewed: d.uint(), enabled: d.bool(), exists: d.bool()}
	a.subs = d.subs()
	for range d.count() {
		a.devices = append(a.devices, device{id: d.int(), class: uint8(d.uint())})
	}
	return a
}

func (d *decoder) subs() []sub {
	n := d.count()
	if n == 0 {
		return nil
	}
	out := make([]sub, 0, min(n, 1024))
	for range n {
		out = append(out, sub{id: d.int(), tariff: d.int(), start: d.int(), stop: d.int()})
	}
	return out
}

func (d *decoder) closedDay() closedDay {
	ok, day, version := d.bool(), Day(d.int()), d.uint()
	rows := map[rowKey]*SubscriptionDay{}
	for range d.count() {
		r := &SubscriptionDay{Day: day, Provider: d.int(), Tariff: d.int(), Enabled: d.int(), EnabledDevices: d.int(),
			Active: d.int(), Disabled: d.int(), EnabledWithDevices: d.int(), Version: version}
		rows[rowKey{r.Provider, r.Tariff}] = r
	}
	cd := keepRows(day, rows, version)
	cd.ok = ok
	return cd
}

func (d *decoder) ends(accounts []account) [][]sub {
	n := d.count()
	if n > len(accounts) {
		d.err = cmpErr(d.err, fmt.Errorf("%d end states for %d accounts", n, len(accounts)))
		return nil
	}
	out := make([][]sub, n)
	for i := range n {
		switch d.uint() {
		case endsCurrent:
			out[i] = accounts[i].subs
		case endsOwn:
			out[i] = d.subs()
		}
	}
	return out
}

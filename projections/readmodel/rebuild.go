package readmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"tvsm/projections"
)

// Blue/green rebuilds. A new model is built from the log beside the live
// one (New, then projections.ReplayTo), and takes over with Adopt inside
// Hold, at the live one's position; Copy and Differences check a live model
// against one rebuilt to the same position.

// Hold runs f while the model applies no events: the runner's Apply waits
// until f returns, readers do not. A rebuild catches its new model up to
// the live one's position, and adopts it, inside Hold.
func (m *Model) Hold(f func() error) error {
	m.hold.Lock()
	defer m.hold.Unlock()
	return f()
}

// Adopt replaces m's state with fresh's, at once for every reader: a
// query answers wholly from the old state or wholly from the new. fresh
// must not be used afterwards. Call it inside Hold, with fresh at m's
// position (see Hold), so that the runner feeding m goes on after the
// events fresh holds; events fresh holds beyond it are applied again, which
// Apply's revisions make harmless.
func (m *Model) Adopt(fresh *Model) {
	fresh.mu.Lock()
	st := fresh.st
	fresh.st = newState()
	fresh.mu.Unlock()
	m.mu.Lock()
	m.st = st
	m.mu.Unlock()
}

// Copy returns a copy of the model as it is now, a consistent cut at its
// position: the state is captured as for a snapshot and loaded into a new
// model, so the copy is also what a restart from a snapshot would serve.
func (m *Model) Copy() (*Model, error) {
	c := m.capture()
	c.sealer = nil // the copy stays in memory
	r, w := io.Pipe()
	go func() { w.CloseWithError(c.encode(w)) }()
	st, err := decodeState(r, nil)
	r.CloseWithError(io.ErrClosedPipe) // unblocks the encoder if decoding stopped early
	if err != nil {
		return nil, fmt.Errorf("readmodel: copy: %w", err)
	}
	st.pos = c.pos
	return &Model{reg: m.reg, ev: m.ev, st: st, sealer: m.snapshotSealer()}, nil
}

// Differences compares the answers of two models (Answers) and reports
// how rebuilt differs from live, as projections.Differences does: at most
// limit lines and the number of answers that differ. Answers are compared
// as values and shown as JSON.
func Differences(live, rebuilt *Model, limit int) (lines []string, total int, err error) {
	want, err := Answers(live)
	if err != nil {
		return nil, 0, err
	}
	got, err := Answers(rebuilt)
	if err != nil {
		return nil, 0, err
	}
	// Answers alternate a label and its value: an item is the pair.
	eq := func(i, j int) bool {
		return want[2*i] == got[2*j] && reflect.DeepEqual(want[2*i+1], got[2*j+1])
	}
	render := func(second bool, i int) string {
		a := want
		if second {
			a = got
		}
		v, err := json.Marshal(a[2*i+1])
		if err != nil {
			v = fmt.Appendf(nil, "%+v", a[2*i+1])
		}
		return fmt.Sprintf("%s %s", a[2*i], v)
	}
	lines, total = projections.Differences(len(want)/2, len(got)/2, eq, render, limit)
	return lines, total, nil
}

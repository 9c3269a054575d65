package dispatch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// snapshotFormat is the first line of the payload; a change of layout gets a
// new one, and an unknown one is treated as a damaged snapshot.
const snapshotFormat = `{"format":"dispatch.v1"}`

// snapSend and snapItem are the stored form of a live send, one JSON line
// per send after the format line.
type snapSend struct {
	ID         int64             `json:"id"`
	Rev        uint64            `json:"rev"`
	Recipients domain.Recipients `json:"recipients"`
	IDs        []int64           `json:"ids"`
	IssuedAt   time.Time         `json:"issued_at"`
	Items      []snapItem        `json:"items"`
}

type snapItem struct {
	Index   int                `json:"index"`
	Kind    domain.CommandKind `json:"kind"`
	Type    domain.MessageType `json:"type,omitempty"`
	Start   time.Time          `json:"start"`
	TTL     time.Time          `json:"ttl,omitzero"`
	Object  json.RawMessage    `json:"object"`
	Claimed []int64            `json:"claimed,omitempty"`
	// Ran: some node recorded the command's send-time round (item.ran).
	Ran bool `json:"ran,omitempty"`
}

// snapshotData is the encoded state and the log position it includes.
type snapshotData struct {
	pos  eventstore.Position
	gen  uint64
	data []byte
}

// encodeSnapshot encodes the state; only the state's owner may call it.
// The position is the runner's applied one, which the state includes (the
// loop applies a batch before the runner advances past it), or the loaded
// snapshot's before the runner has started.
func (d *Dispatcher) encodeSnapshot() snapshotData {
	pos := d.runner.Progress().Position()
	if d.loadedPos.After(pos) {
		pos = d.loadedPos
	}
	var buf bytes.Buffer
	_ = d.state.marshal(&buf) // writing to a buffer cannot fail
	return snapshotData{pos: pos, gen: d.state.gen, data: buf.Bytes()}
}

// marshal writes the format line and one line per live send.
func (st *state) marshal(w io.Writer) error {
	if _, err := io.WriteString(w, snapshotFormat+"\n"); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for _, id := range slices.Sorted(maps.Keys(st.sends)) {
		s := st.sends[id]
		out := snapSend{ID: s.id, Rev: s.rev, Recipients: s.recipients, IDs: s.ids, IssuedAt: s.issuedAt}
		for _, it := range s.items {
			if it == nil {
				continue
			}
			out.Items = append(out.Items, snapItem{
				Index: it.index, Kind: it.kind, Type: it.msgType, Start: it.start, TTL: it.ttl,
				Object: it.object, Claimed: slices.Sorted(maps.Keys(it.claimed)), Ran: it.ran,
			})
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	return nil
}

// unmarshal reads what marshal wrote into an empty state, checking every
// send.
func (st *state) unmarshal(r io.Reader) error {
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil || line != snapshotFormat+"\n" {
		return fmt.Errorf("%w: unknown format line %.60q", projections.ErrCorruptSnapshot, line)
	}
	dec := json.NewDecoder(br)
	for {
		var in snapSend
		err := dec.Decode(&in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		s, err := in.restore()
		if err != nil {
			return fmt.Errorf("send %d: %w", in.ID, err)
		}
		if _, dup := st.sends[s.id]; dup {
			return fmt.Errorf("send %d twice", s.id)
		}
		st.add(s)
	}
}

// restore checks a stored send and rebuilds it.
func (in snapSend) restore() (*sendState, error) {
	if _, err := domain.ParseRecipients(string(in.Recipients)); err != nil || in.ID <= 0 || len(in.Items) == 0 {
		return nil, errors.New("bad id, recipients or items")
	}
	s := &sendState{
		id: in.ID, stream: domain.CommandStream(in.ID), rev: in.Rev, recipients: in.Recipients,
		ids: slices.Compact(slices.Sorted(slices.Values(in.IDs))), issuedAt: in.IssuedAt,
	}
	for _, x := range in.Items {
		if x.Index < 0 || x.Index >= domain.MaxSendCommands || x.Start.IsZero() || !isJSONObject(x.Object) {
			return nil, fmt.Errorf("bad command %d", x.Index)
		}
		if x.Index >= len(s.items) {
			s.items = append(s.items, make([]*item, x.Index+1-len(s.items))...)
		}
		if s.items[x.Index] != nil {
			return nil, fmt.Errorf("command %d twice", x.Index)
		}
		it := &item{index: x.Index, kind: x.Kind, msgType: x.Type, start: x.Start, ttl: x.TTL,
			object: x.Object, claimed: make(map[int64]struct{}, len(x.Claimed)), ran: x.Ran}
		for _, dev := range x.Claimed {
			it.claimed[dev] = struct{}{}
		}
		s.items[x.Index] = it
		s.live++
	}
	return s, nil
}

// isJSONObject reports whether b is a valid JSON object.
func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// loadSnapshot restores the state from DataDir. Without a usable snapshot
// the state starts empty and the runner reads the command streams from the
// beginning of the log, keeping only what is live.
func (d *Dispatcher) loadSnapshot() {
	st := newState()
	pos, err := projections.ReadSnapshot(d.snapPath, st.unmarshal)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.log.Info("no dispatch snapshot; reading command streams from the beginning of the log")
	case err != nil:
		d.log.Warn("dispatch snapshot unusable; reading command streams from the beginning of the log", "path", d.snapPath, "error", err)
	default:
		d.state, d.loadedPos, d.snapPos, d.snapGen = st, pos, pos, st.gen
		d.log.Info("dispatch snapshot loaded", "position", pos.String(), "live_sends", len(st.sends), "live_commands", st.items)
	}
	d.publishGauges()
}

// snapshotJob is the cron job that saves the state while Run runs.
func (d *Dispatcher) snapshotJob(ctx context.Context) func() {
	return func() {
		reply := make(chan snapshotData, 1)
		if err := d.send(ctx, loopMsg{snapshot: reply}); err != nil {
			return
		}
		select {
		case sd, ok := <-reply: // closed when encoding panicked
			if ok {
				_ = d.writeSnapshot(sd)
			}
		case <-ctx.Done():
		}
	}
}

// writeSnapshot writes sd unless nothing changed since the last snapshot.
// A failure is logged and counted: the snapshot is only a start-up cache.
func (d *Dispatcher) writeSnapshot(sd snapshotData) error {
	d.snapMu.Lock()
	defer d.snapMu.Unlock()
	if sd.gen == d.snapGen && !sd.pos.After(d.snapPos) {
		return nil
	}
	err := projections.WriteSnapshot(d.snapPath, sd.pos, func(w io.Writer) error {
		_, err := w.Write(sd.data)
		return err
	})
	if err != nil {
		d.stats.snapshotFailures.Add(1)
		d.log.Warn("dispatch snapshot failed", "path", d.snapPath, "error", err)
		return err
	}
	d.stats.snapshots.Add(1)
	d.snapPos, d.snapGen = sd.pos, sd.gen
	return nil
}

package app

import (
	"context"
	"errors"

	"tvsm/domain"
	"tvsm/eventstore"
)

// readPage is how many events one ReadStream call returns while loading.
const readPage = 512

// loader rebuilds an aggregate's state from its stream, and for a keyed
// command watches the events it reads for the ones an earlier attempt of the
// same command appended.
type loader[S, C any] struct {
	x      *Executor
	stream string
	d      domain.Decider[S, C]
	found  *detection // nil unless the command is keyed
}

// detection collects the events of a keyed command found in the stream:
// the event with the command's first id and the ones right after it that
// carry its following ids.
type detection struct {
	naming eventNaming
	want   eventstore.EventID // id of the next event of the run
	events []domain.Envelope
	pos    eventstore.Position // of the last collected event
	closed bool                // an event after the run was seen
}

func (f *detection) observe(rec eventstore.RecordedEvent, e domain.Event) error {
	if f.closed {
		return nil
	}
	if f.want.IsZero() {
		f.want = f.naming.firstID()
	}
	if rec.ID != f.want {
		if len(f.events) > 0 {
			f.closed = true
		}
		return nil
	}
	m, err := domain.DecodeMetadata(rec.Metadata)
	if err != nil {
		return err
	}
	f.events = append(f.events, domain.Envelope{Event: e, OccurredAt: m.OccurredAt, Actor: m.Actor, RequestID: m.RequestID})
	f.pos = rec.Position
	f.want = eventstore.DeriveEventID(f.naming.name, len(f.events))
	return nil
}

// full reads the whole stream from the store.
func (l *loader[S, C]) full(ctx context.Context) (snapshot, S, error) {
	snap := snapshot{}
	st := l.d.Initial()
	if l.found != nil {
		l.found.events, l.found.closed, l.found.want = nil, false, eventstore.EventID{}
	}
	_, err := l.readFrom(ctx, &snap, &st)
	return snap, st, err
}

// tail folds the events appended after snap into it and reports how many
// there were.
func (l *loader[S, C]) tail(ctx context.Context, snap *snapshot, st *S) (int, error) {
	return l.readFrom(ctx, snap, st)
}

func (l *loader[S, C]) readFrom(ctx context.Context, snap *snapshot, st *S) (int, error) {
	total := 0
	for {
		from := eventstore.Start
		if snap.exists {
			from = eventstore.Exact(snap.rev + 1)
		}
		recs, err := l.x.store.ReadStream(ctx, l.stream, from, readPage)
		if errors.Is(err, eventstore.ErrStreamNotFound) {
			return total, nil
		}
		if err != nil {
			return total, opError("load", l.stream, err)
		}
		for _, rec := range recs {
			e, err := l.x.reg.Decode(rec.Type, rec.Data)
			if err != nil {
				return total, opError("load", l.stream, err)
			}
			if l.found != nil {
				if err := l.found.observe(rec, e); err != nil {
					return total, opError("load", l.stream, err)
				}
			}
			*st = l.d.Evolve(*st, e)
			snap.exists, snap.rev, snap.pos = true, rec.Revision, rec.Position
		}
		snap.state = *st
		total += len(recs)
		if len(recs) < readPage {
			return total, nil
		}
	}
}

// cloneState copies s when its type offers Clone() S, so that an Evolve
// that updates maps or slices in place never touches a state the cache (or
// a concurrent caller) still holds. Pure Evolve functions need no Clone.
func cloneState[S any](s S) S {
	if c, ok := any(s).(interface{ Clone() S }); ok {
		return c.Clone()
	}
	return s
}

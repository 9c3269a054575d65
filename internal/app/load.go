package app

import (
	"context"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
)

// detection collects the events of a keyed command found in the stream:
// the event with the command's first id and the ones right after it that
// carry its following ids.
type detection struct {
	naming eventNaming
	want   eventstore.EventID // id of the next event of the run; zero before the first look
	events []domain.Envelope
	closed bool // an event after the run was seen
}

func (f *detection) reset() { f.events, f.closed, f.want = nil, false, eventstore.EventID{} }

// applied reports whether an earlier attempt of the command applied it.
func (f *detection) applied() bool { return f != nil && len(f.events) > 0 }

func (f *detection) observe(rec eventstore.RecordedEvent, e domain.Event) error {
	if f.closed {
		return nil
	}
	if f.want.IsZero() {
		f.want = f.naming.keyedID(0)
	}
	if rec.ID != f.want {
		if len(f.events) > 0 {
			f.closed = true
		}
		return nil
	}
	env, err := record.Envelope(e, rec)
	if err != nil {
		return err
	}
	f.events = append(f.events, env)
	f.want = f.naming.keyedID(len(f.events))
	return nil
}

// load takes the state to decide on: the cached one, or the initial state
// of a stream just named, both unverified; otherwise the stream read whole.
// A recovering command reads the stream whole: it must see every event id.
func (run *execution[S, C]) load(ctx context.Context) error {
	if !run.nm.recovering {
		if c, ok := run.x.cache.get(run.stream); ok {
			if v, ok := c.state.(S); ok {
				run.snap, run.st = c, cloneState(v)
				return nil
			}
		} else if run.meta.NewStream {
			run.st = run.d.Initial()
			run.snap = snapshot{state: run.st}
			return nil
		}
	}
	return run.reload(ctx)
}

// reload reads the whole stream: afterwards the state is the head's.
func (run *execution[S, C]) reload(ctx context.Context) error {
	run.snap, run.st = snapshot{}, run.d.Initial()
	if run.found != nil {
		run.found.reset()
	}
	if _, err := run.readTail(ctx); err != nil {
		return err
	}
	run.verified = true
	return nil
}

// readTail folds the events appended after the state into it and reports
// whether there were any.
func (run *execution[S, C]) readTail(ctx context.Context) (bool, error) {
	from := run.snap.head()
	st, head, err := record.Fold(ctx, run.x.rec, run.stream, from, run.st, run.evolve)
	if err != nil {
		return false, opError("load", run.stream, err)
	}
	run.st = st
	run.snap.state = st
	run.snap.setHead(head)
	return head != from, nil
}

// evolve folds one event read from the stream, watching it for the events
// of a keyed command.
func (run *execution[S, C]) evolve(st S, e domain.Event, rec eventstore.RecordedEvent) (S, error) {
	if run.found != nil {
		if err := run.found.observe(rec, e); err != nil {
			return st, err
		}
	}
	return run.d.Evolve(st, e), nil
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

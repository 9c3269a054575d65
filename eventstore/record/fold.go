package record

import (
	"context"
	"errors"
	"fmt"

	"tvsm/domain"
	"tvsm/eventstore"
)

// pageSize is how many events one ReadStream call of a read asks for: long
// streams are read in pages rather than all at once.
const pageSize = 512

// Head is how far a reader has got in a stream: the revision and log
// position of the last event it has seen. The zero Head is before the
// stream's first event.
type Head struct {
	// Exists: the stream has events, and Revision and Position are those of
	// the last one seen.
	Exists   bool
	Revision uint64
	Position eventstore.Position
}

// Expect is the expectation of an append that must come right after h:
// Exact(Revision), or NoStream when the stream has no events.
func (h Head) Expect() eventstore.Revision {
	if !h.Exists {
		return eventstore.NoStream
	}
	return eventstore.Exact(h.Revision)
}

// next is the revision of the first event after h.
func (h Head) next() eventstore.Revision {
	if !h.Exists {
		return eventstore.Start
	}
	return eventstore.Exact(h.Revision + 1)
}

// DecodeError is an event of a stream that the registry cannot decode.
type DecodeError struct {
	Stream   string
	Revision uint64
	Err      error
}

func (e *DecodeError) Error() string { return fmt.Sprintf("%s@%d: %v", e.Stream, e.Revision, e.Err) }

// Unwrap returns the registry's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Read calls visit with each event of stream after from, in order, reading
// the stream in pages, and returns the head after the last event visited.
// A stream without events is not an error: the head stays from. An error of
// visit ends the read and is returned as it is.
func Read(ctx context.Context, store eventstore.Store, stream string, from Head, visit func(eventstore.RecordedEvent) error) (Head, error) {
	head := from
	for {
		recs, err := store.ReadStream(ctx, stream, head.next(), pageSize)
		if errors.Is(err, eventstore.ErrStreamNotFound) {
			return head, nil
		}
		if err != nil {
			return head, err
		}
		for _, rec := range recs {
			if err := visit(rec); err != nil {
				return head, err
			}
			head = Head{Exists: true, Revision: rec.Revision, Position: rec.Position}
		}
		if len(recs) < pageSize {
			return head, nil
		}
	}
}

// Fold folds the events of stream after from into st: each is decoded with
// l.Registry and passed, with the event as stored (its id, metadata,
// position), to evolve. It returns the state and the head after the last
// event folded; when the stream has no events after from, st and from. An
// event the registry cannot decode ends the fold with a *DecodeError naming
// the stream and revision; an error of evolve ends it as it is.
func Fold[S any](ctx context.Context, l Log, stream string, from Head, st S, evolve func(S, domain.Event, eventstore.RecordedEvent) (S, error)) (S, Head, error) {
	head, err := Read(ctx, l.Store, stream, from, func(rec eventstore.RecordedEvent) error {
		e, err := l.decode(rec)
		if err != nil {
			return err
		}
		st, err = evolve(st, e, rec)
		return err
	})
	return st, head, err
}

// First returns the first event of stream, decoded, and the event as stored;
// found is false when the stream has no events.
func First(ctx context.Context, l Log, stream string) (e domain.Event, rec eventstore.RecordedEvent, found bool, err error) {
	recs, err := l.Store.ReadStream(ctx, stream, eventstore.Start, 1)
	if errors.Is(err, eventstore.ErrStreamNotFound) || (err == nil && len(recs) == 0) {
		return nil, eventstore.RecordedEvent{}, false, nil
	}
	if err != nil {
		return nil, eventstore.RecordedEvent{}, false, err
	}
	e, err = l.decode(recs[0])
	return e, recs[0], true, err
}

func (l Log) decode(rec eventstore.RecordedEvent) (domain.Event, error) {
	e, err := l.Registry.Decode(rec.Type, rec.Data)
	if err != nil {
		return nil, &DecodeError{Stream: rec.Stream, Revision: rec.Revision, Err: err}
	}
	return e, nil
}

// Envelope returns e with the metadata of rec, the stored event it was
// decoded from.
func Envelope(e domain.Event, rec eventstore.RecordedEvent) (domain.Envelope, error) {
	m, err := domain.DecodeMetadata(rec.Metadata)
	if err != nil {
		return domain.Envelope{}, &DecodeError{Stream: rec.Stream, Revision: rec.Revision, Err: err}
	}
	return domain.Envelope{Event: e, OccurredAt: m.OccurredAt, Actor: m.Actor, RequestID: m.RequestID}, nil
}

package record

import (
	"context"
	"fmt"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Log records domain events in Store, encoded with Registry, resending
// appends under Policy; Fold reads them back through it. A Log is a small
// value: copy it freely.
type Log struct {
	Store    eventstore.Store
	Registry *domain.Registry
	Policy   Policy
}

// Batch is domain events encoded for one append, all carrying one metadata
// encoded once. Make one with Log.Encode.
type Batch struct {
	data      []eventstore.EventData
	events    []domain.Event
	meta      domain.Metadata
	envelopes []domain.Envelope // of a joined batch; others wrap events in meta
}

// Encode encodes events, stamped with meta, and names them with ids. No
// events make an empty batch.
func (l Log) Encode(events []domain.Event, meta domain.Metadata, ids IDs) (Batch, error) {
	if len(events) == 0 {
		return Batch{}, nil
	}
	md, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: meta.OccurredAt, Actor: meta.Actor, RequestID: meta.RequestID})
	if err != nil {
		return Batch{}, err
	}
	return l.encode(events, meta, md, ids)
}

// EncodeLike encodes events with the metadata of like, encoded once for
// both: the parts of one multi-stream append carry the same metadata.
func (l Log) EncodeLike(like Batch, events []domain.Event, ids IDs) (Batch, error) {
	if len(like.data) == 0 {
		return l.Encode(events, like.meta, ids)
	}
	return l.encode(events, like.meta, like.data[0].Metadata, ids)
}

func (l Log) encode(events []domain.Event, meta domain.Metadata, md []byte, ids IDs) (Batch, error) {
	data := make([]eventstore.EventData, len(events))
	for i, e := range events {
		typ, body, err := l.Registry.Encode(e)
		if err != nil {
			return Batch{}, err
		}
		data[i] = eventstore.EventData{Type: typ, Data: body, Metadata: md}
	}
	b := Batch{data: data, events: events, meta: meta}
	b.Name(ids)
	return b, nil
}

// Join returns one batch of the events of parts, in order, each keeping its
// own metadata and ids: an append of events with different metadata.
func Join(parts ...Batch) Batch {
	var j Batch
	for _, p := range parts {
		j.data = append(j.data, p.data...)
		j.envelopes = append(j.envelopes, p.Envelopes()...)
	}
	return j
}

// Name names the events of b with ids (the zero IDs leaves them as they
// are). A caller whose ids depend on the encoded events (a hash of their
// data) encodes with the zero IDs, then names them.
func (b *Batch) Name(ids IDs) {
	if ids.scheme == unnamed {
		return
	}
	for i := range b.data {
		b.data[i].ID = ids.ID(i)
	}
}

// Len is the number of events in b.
func (b Batch) Len() int { return len(b.data) }

// Data is what the store appends. The caller must not change it.
func (b Batch) Data() []eventstore.EventData { return b.data }

// Envelopes returns b's events with their metadata.
func (b Batch) Envelopes() []domain.Envelope {
	if b.envelopes != nil || len(b.events) == 0 {
		return b.envelopes
	}
	return b.meta.Wrap(b.events...)
}

// Slice returns the events i to j (exclusive) of b as a batch of their own.
func (b Batch) Slice(i, j int) Batch {
	out := Batch{data: b.data[i:j:j]}
	if b.envelopes != nil {
		out.envelopes = b.envelopes[i:j:j]
	} else {
		out.events, out.meta = b.events[i:j:j], b.meta
	}
	return out
}

// Append appends b to stream if its revision satisfies expect, and sends the
// identical append again while its outcome is unknown (see Policy).
func (l Log) Append(ctx context.Context, stream string, expect eventstore.Revision, b Batch) (eventstore.AppendResult, error) {
	var failures int
	return l.AppendCounting(ctx, &failures, stream, expect, b)
}

// AppendCounting is Append for an operation that counts its failures in
// *failures, which it shares with the caller's own count of failures (the
// lost races it retries), so that Policy.MaxAttempts bounds them together:
// each failed send adds one, and no send is resent once *failures reaches
// it.
func (l Log) AppendCounting(ctx context.Context, failures *int, stream string, expect eventstore.Revision, b Batch) (eventstore.AppendResult, error) {
	var res eventstore.AppendResult
	err := l.Policy.resend(ctx, failures, func(ctx context.Context) (err error) {
		res, err = l.Store.Append(ctx, stream, expect, b.data...)
		return err
	})
	return res, err
}

// Record encodes events with meta, names them with ids and appends them
// (Encode, then Append).
func (l Log) Record(ctx context.Context, stream string, expect eventstore.Revision, events []domain.Event, meta domain.Metadata, ids IDs) (eventstore.AppendResult, error) {
	b, err := l.Encode(events, meta, ids)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	return l.Append(ctx, stream, expect, b)
}

// AppendMulti appends every part or none in one atomic step
// (eventstore.MultiAppender), resending the identical call while its
// outcome is unknown. It fails with ErrInvalidAppend when the store cannot
// append to several streams at once.
func (l Log) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	multi, ok := l.Store.(eventstore.MultiAppender)
	if !ok {
		return nil, fmt.Errorf("record: %w: the store cannot append to several streams at once", eventstore.ErrInvalidAppend)
	}
	var res []eventstore.AppendResult
	var failures int
	err := l.Policy.resend(ctx, &failures, func(ctx context.Context) (err error) {
		res, err = multi.AppendMulti(ctx, parts...)
		return err
	})
	return res, err
}

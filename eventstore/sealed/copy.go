package sealed

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"tvsm/domain"
	"tvsm/eventstore"
)

// Copy appends every event of from, in log order, to the empty store to,
// sealing the personal values an older version wrote in plain text: the
// offline rewrite of a store written before sealing. The events keep their
// ids, revisions and metadata, and (on a store with dense positions, as
// the embedded one) their positions, so snapshots and checkpoints stay
// valid. rename gives an event's stream its new name (a name that held a
// personal value); an erased subject's values are written as erased,
// there being no key to seal them under. progress, when set, is told how
// many events were copied after each append. Each append is one group of
// consecutive events, split where a stream repeats.
func (k *Keyring) Copy(ctx context.Context, from eventstore.Store, to eventstore.MultiAppender,
	rename func(stream string) string, progress func(copied uint64)) (uint64, error) {
	sub, err := from.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		return 0, err
	}
	defer sub.Close()
	var copied uint64
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			return copied, err
		}
		var parts []eventstore.StreamAppend
		index := map[string]int{} // stream → its part in parts
		flush := func() error {
			if len(parts) == 0 {
				return nil
			}
			if _, err := to.AppendMulti(ctx, parts...); err != nil {
				return err
			}
			for _, p := range parts {
				copied += uint64(len(p.Events))
			}
			parts, index = parts[:0], map[string]int{}
			if progress != nil {
				progress(copied)
			}
			return nil
		}
		for _, rec := range b.Events {
			stream := rename(rec.Stream)
			data, err := k.sealOrRedact(ctx, stream, rec.Type, rec.Data)
			if err != nil {
				return copied, fmt.Errorf("%s@%d: %w", rec.Stream, rec.Revision, err)
			}
			e := eventstore.EventData{ID: rec.ID, Type: rec.Type, Data: data, Metadata: rec.Metadata}
			i, seen := index[stream]
			if seen && i != len(parts)-1 {
				// The stream's part is not the last: appending to it would
				// put this event before the events of the parts after it.
				if err := flush(); err != nil {
					return copied, err
				}
				seen = false
			}
			if seen {
				parts[i].Events = append(parts[i].Events, e)
				continue
			}
			expect := eventstore.NoStream
			if rec.Revision > 0 {
				expect = eventstore.Exact(rec.Revision - 1)
			}
			index[stream] = len(parts)
			parts = append(parts, eventstore.StreamAppend{Stream: stream, Expect: expect, Events: []eventstore.EventData{e}})
		}
		if err := flush(); err != nil {
			return copied, err
		}
		if b.CaughtUp {
			return copied, nil
		}
	}
}

// sealOrRedact seals data's personal values; those of an erased subject,
// which has no key left, are replaced as erased values read.
func (k *Keyring) sealOrRedact(ctx context.Context, stream, typ string, data []byte) ([]byte, error) {
	if mayBeSealed(data) {
		return data, nil // sealed already (written by this version)
	}
	out, err := k.seal(ctx, stream, typ, data)
	if !errors.Is(err, ErrErased) {
		return out, err
	}
	p, _ := domain.PersonalDataOf(typ)
	ms, err := members(data, nil)
	if err != nil {
		return nil, err
	}
	return redact(data, ms, p), nil
}

// VerifyCopy reads from and to side by side and checks that to holds
// every event of from, in order, at the same position, with the same id,
// type and metadata, in its renamed stream, and with the same data once
// opened (an erased subject's values as erased): what Copy promises. It
// returns how many events it compared.
func (k *Keyring) VerifyCopy(ctx context.Context, from, to eventstore.Store, rename func(string) string) (uint64, error) {
	old, err := newCursor(ctx, from)
	if err != nil {
		return 0, err
	}
	defer old.sub.Close()
	cur, err := newCursor(ctx, Wrap(to, k))
	if err != nil {
		return 0, err
	}
	defer cur.sub.Close()
	var n uint64
	for {
		o, more, err := old.next(ctx)
		if err != nil {
			return n, err
		}
		c, moreCopy, err := cur.next(ctx)
		if err != nil {
			return n, err
		}
		switch {
		case !more && !moreCopy:
			return n, nil
		case more != moreCopy:
			return n, fmt.Errorf("sealed: after %d events, one store ends and the other does not", n)
		}
		want, err := k.readsAs(ctx, o)
		if err != nil {
			return n, err
		}
		switch {
		case c.Position != o.Position || c.ID != o.ID || c.Type != o.Type || c.Revision != o.Revision || c.Stream != rename(o.Stream):
			return n, fmt.Errorf("sealed: event %d differs: %s@%d %s at %v in the store, %s@%d %s at %v in the copy",
				n, o.Stream, o.Revision, o.Type, o.Position, c.Stream, c.Revision, c.Type, c.Position)
		case !bytes.Equal(c.Metadata, o.Metadata) || !bytes.Equal(c.Data, want):
			return n, fmt.Errorf("sealed: %s@%d reads otherwise in the copy", o.Stream, o.Revision)
		}
		n++
	}
}

// cursor walks a store's log one event at a time.
type cursor struct {
	sub  eventstore.Subscription
	buf  []eventstore.RecordedEvent
	done bool
}

func newCursor(ctx context.Context, store eventstore.Store) (*cursor, error) {
	sub, err := store.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		return nil, err
	}
	return &cursor{sub: sub}, nil
}

// next returns the next event; more is false at the head of the log.
func (c *cursor) next(ctx context.Context) (e eventstore.RecordedEvent, more bool, err error) {
	for len(c.buf) == 0 {
		if c.done {
			return e, false, nil
		}
		b, err := c.sub.Recv(ctx)
		if err != nil {
			return e, false, err
		}
		c.buf, c.done = b.Events, b.CaughtUp
	}
	e, c.buf = c.buf[0], c.buf[1:]
	return e, true, nil
}

// readsAs is what an event of the old store reads as through the seal:
// sealed values opened, an erased subject's values erased.
func (k *Keyring) readsAs(ctx context.Context, rec eventstore.RecordedEvent) ([]byte, error) {
	if mayBeSealed(rec.Data) {
		data, _, err := k.open(ctx, rec.Stream, rec.Type, rec.Data)
		return data, err
	}
	data, _, err := k.redactPlainErased(ctx, rec.Type, rec.Data)
	return data, err
}

// redactPlainErased is the data an unsealed event reads as: its personal
// values erased when the key store says its subject was erased.
func (k *Keyring) redactPlainErased(ctx context.Context, typ string, data []byte) ([]byte, bool, error) {
	p, ok := domain.PersonalDataOf(typ)
	if !ok || mayBeSealed(data) {
		return data, false, nil
	}
	ms, err := members(data, nil)
	if err != nil {
		return data, false, nil
	}
	subject, personal, err := locate(data, ms, p)
	if err != nil || personal == 0 || subject <= 0 {
		return data, false, nil
	}
	if _, err := k.store.Load(ctx, subject); !errors.Is(err, ErrErased) {
		return data, false, nil
	}
	out, err := k.sealOrRedact(ctx, "", typ, data)
	return out, true, err
}

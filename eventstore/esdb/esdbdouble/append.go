package esdbdouble

// expectation is an append's expected stream revision.
type expectation struct {
	kind expectKind
	rev  uint64 // for expectExact
}

type expectKind uint8

const (
	expectAny expectKind = iota
	expectNoStream
	expectStreamExists
	expectExact
)

// appendResult is the decision on an append.
type appendResult struct {
	// wrong: the append was refused as EventStoreDB refuses it, with a
	// wrong expected version; current is the stream's revision then.
	wrong   bool
	current int64 // -1: no stream
	// Otherwise rev and pos are the revision and position of the last event
	// of the append (written now, or earlier for an idempotent repeat);
	// empty is set when the append had no events (rev is then the stream's
	// revision, current < 0 when it has none, and there is no position).
	rev   uint64
	pos   uint64
	empty bool
	// wait is the count of events that must be durable before answering.
	wait int
	// deleted: refused because the stream is tombstoned (or, for some
	// expectations, soft-deleted), answered with a stream-deleted error.
	deleted bool
}

// decide checks an append of evs to stream with expectation exp and, if
// it goes ahead, writes it. It follows EventStoreDB's rules (the server's
// IndexWriter.CheckCommit):
//
//   - Any or StreamExists (the latter fails on a stream without events):
//     the event ids are looked up in the cache of recent ids. If the first
//     is not there (or is in another stream), the events are appended. If
//     all are there in this stream, the append is an idempotent repeat,
//     answered with the stored events' place. If only some are, the append
//     fails with a wrong expected version.
//   - An exact revision, or NoStream (revision -1), below the stream's
//     revision: the stored events from the expected revision on are
//     compared with the append's. All the same: an idempotent repeat. The
//     first different: wrong expected version. A later one different (or
//     missing): wrong expected version.
//   - Above the stream's revision: wrong expected version.
//   - Equal: the events are appended, whatever their ids (an id may occur
//     twice in a stream, and in any number of streams).
//
// Before all that, a tombstoned stream, and the metadata stream of one,
// refuses every append as deleted. A soft-deleted stream refuses
// StreamExists as deleted, takes NoStream as its current revision (unless
// the append repeats the stream's first events), and is recreated by the
// append: its revisions go on, and a new metadata event makes reads start
// at the first appended event. An append to the metadata stream of a
// soft-deleted stream recreates that stream too (see undelete).
//
// The caller holds l.mu.
func (l *eventLog) decide(stream string, exp expectation, evs []*event) (appendResult, error) {
	if gone, wait := l.tombstoned(stream); gone {
		return appendResult{deleted: true, wait: wait}, nil
	}
	idx := l.streams[stream]
	cur := int64(len(idx)) - 1
	m, metaAt := l.metadataOf(stream, len(l.events))
	soft := m.truncateBefore == deletedStream
	wrong := appendResult{wrong: true, current: cur}
	switch exp.kind {
	case expectStreamExists:
		if soft {
			return appendResult{deleted: true, wait: metaAt + 1}, nil
		}
		if cur < 0 {
			return wrong, nil
		}
		fallthrough
	case expectAny:
		for i, e := range evs {
			info, ok := l.recent.get(e.id)
			if !ok || info.stream != stream {
				if i == 0 {
					return l.commit(stream, cur, evs, soft)
				}
				return wrong, nil
			}
		}
		if len(evs) == 0 {
			return l.commit(stream, cur, evs, soft)
		}
		last, _ := l.recent.get(evs[len(evs)-1].id)
		return l.repeat(idx, last.rev), nil
	}
	expected := int64(-1)
	if exp.kind == expectExact {
		expected = int64(exp.rev)
	}
	switch {
	case expected > cur:
		return wrong, nil
	case expected == cur:
		return l.commit(stream, cur, evs, soft)
	}
	if len(evs) == 0 {
		return wrong, nil
	}
	for i, e := range evs {
		rev := expected + 1 + int64(i)
		if rev > cur || l.events[idx[rev]].id != e.id {
			if i == 0 && exp.kind == expectNoStream && soft {
				return l.commit(stream, cur, evs, true)
			}
			return wrong, nil
		}
	}
	return l.repeat(idx, uint64(expected)+uint64(len(evs))), nil
}

// repeat answers an idempotent repeat whose last event is revision rev of
// the stream with event indexes idx.
func (l *eventLog) repeat(idx []int, rev uint64) appendResult {
	i := idx[rev]
	return appendResult{rev: rev, pos: l.events[i].pos, wait: i + 1}
}

// commit writes evs after the stream's current revision cur; recreate
// (the stream is soft-deleted) also writes the metadata that makes its
// reads start at the first of them.
func (l *eventLog) commit(stream string, cur int64, evs []*event, recreate bool) (appendResult, error) {
	if len(evs) == 0 {
		res := appendResult{empty: true, current: cur, wait: l.durable}
		if cur >= 0 {
			res.rev = uint64(cur)
		}
		return res, nil
	}
	for i, e := range evs {
		e.stream = stream
		e.rev = uint64(cur + 1 + int64(i))
	}
	written := evs
	if m := l.undelete(stream, cur, evs, recreate); m != nil {
		written = append(evs[:len(evs):len(evs)], m)
	}
	n, err := l.write(written)
	if err != nil {
		return appendResult{}, err
	}
	for _, e := range evs {
		l.recent.put(e.id, idInfo{stream: stream, rev: e.rev})
	}
	last := evs[len(evs)-1]
	return appendResult{rev: last.rev, pos: last.pos, wait: n}, nil
}

// undelete returns the metadata event with which the server recreates a
// soft-deleted stream after evs are appended to stream after revision cur
// (StorageWriterService.cs in https://github.com/EventStore/EventStore),
// or nil when there is none:
//
//   - evs recreate stream (recreate is set): its last metadata, with "$tb"
//     set to the revision of the first of evs;
//   - evs are metadata of a soft-deleted stream: the last of them, with
//     "$tb" set to the revision after that stream's last event.
//
// As the server, it writes none when the metadata is not a JSON object
// (the stream then stays deleted). The caller holds l.mu.
func (l *eventLog) undelete(stream string, cur int64, evs []*event, recreate bool) *event {
	created := evs[0].created
	if recreate {
		meta := metastream(stream)
		i := l.lastOf(meta, len(l.events))
		if i < 0 {
			return nil
		}
		data, ok := withTruncateBefore(l.events[i].data, cur+1)
		if !ok {
			return nil
		}
		return metadataEvent(stream, uint64(len(l.streams[meta])), data, created)
	}
	orig, ok := isMetastream(stream)
	if !ok {
		return nil
	}
	if m, _ := l.metadataOf(orig, len(l.events)); m.truncateBefore != deletedStream {
		return nil
	}
	data, ok := withTruncateBefore(evs[len(evs)-1].data, int64(len(l.streams[orig])))
	if !ok {
		return nil
	}
	return metadataEvent(orig, uint64(cur+1)+uint64(len(evs)), data, created)
}

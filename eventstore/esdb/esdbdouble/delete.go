package esdbdouble

import (
	"context"
	"fmt"
	"math"
	"strconv"

	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Deletes are written to the log as EventStoreDB writes them to its own,
// so that they are durable, replayed on start, and seen in $all as a real
// server shows them:
//
//   - A tombstone (hard delete) is an event of the stream itself, of type
//     "$streamDeleted", at revision deletedStream, without data. It is in
//     $all but not in the stream's index: the stream reads as deleted.
//   - A soft delete is a "$metadata" event of the stream's metadata stream
//     ("$$" + name) whose data is only a "$tb" (truncate before) of
//     deletedStream: the metadata the stream had before is dropped. The
//     stream then reads as not found. An append recreates it: its
//     revisions go on, and the double writes metadata (that of the delete,
//     or whatever was set since) with "$tb" set to the first new revision,
//     from which reads then start. Setting metadata recreates it too, from
//     the revision after its last: the double writes the metadata set
//     again, with that "$tb".
//
// The stream's events stay in the log and in $all either way: EventStoreDB
// removes them only when an operator scavenges, which the double does not.
const (
	tombstoneType = "$streamDeleted"
	metadataType  = "$metadata"
	// deletedStream is EventStoreDB's EventNumber.DeletedStream: the
	// revision of a tombstone, and the "$tb" of a soft-deleted stream.
	deletedStream = math.MaxInt64
)

func (e *event) isTombstone() bool { return e.typ == tombstoneType && e.rev == deletedStream }

// softDeleteData is the metadata a soft delete writes, in place of the
// stream's metadata before (StorageWriterService.cs in
// https://github.com/EventStore/EventStore).
var softDeleteData = fmt.Appendf(nil, `{"$tb":%d}`, deletedStream)

// Delete implements the Delete call: EventStoreDB's soft delete.
func (st *streams) Delete(ctx context.Context, req *api.DeleteReq) (*api.DeleteResp, error) {
	o := req.GetOptions()
	var exp expectation
	switch v := o.GetExpectedStreamRevision().(type) {
	case *api.DeleteReq_Options_Any:
		exp.kind = expectAny
	case *api.DeleteReq_Options_NoStream:
		exp.kind = expectNoStream
	case *api.DeleteReq_Options_StreamExists:
		exp.kind = expectStreamExists
	case *api.DeleteReq_Options_Revision:
		exp = expectation{kind: expectExact, rev: v.Revision}
	default:
		return nil, status.Error(codes.InvalidArgument, "delete without an expected stream revision")
	}
	pos, err := st.delete(ctx, string(o.GetStreamIdentifier().GetStreamName()), exp, false)
	if err != nil {
		return nil, err
	}
	return &api.DeleteResp{PositionOption: &api.DeleteResp_Position_{Position: &api.DeleteResp_Position{
		CommitPosition: pos, PreparePosition: pos,
	}}}, nil
}

// Tombstone implements the Tombstone call: EventStoreDB's hard delete.
func (st *streams) Tombstone(ctx context.Context, req *api.TombstoneReq) (*api.TombstoneResp, error) {
	o := req.GetOptions()
	var exp expectation
	switch v := o.GetExpectedStreamRevision().(type) {
	case *api.TombstoneReq_Options_Any:
		exp.kind = expectAny
	case *api.TombstoneReq_Options_NoStream:
		exp.kind = expectNoStream
	case *api.TombstoneReq_Options_StreamExists:
		exp.kind = expectStreamExists
	case *api.TombstoneReq_Options_Revision:
		exp = expectation{kind: expectExact, rev: v.Revision}
	default:
		return nil, status.Error(codes.InvalidArgument, "tombstone without an expected stream revision")
	}
	pos, err := st.delete(ctx, string(o.GetStreamIdentifier().GetStreamName()), exp, true)
	if err != nil {
		return nil, err
	}
	// The client reads the position unchecked: a real server always
	// sends one for a write it made, and so does the double.
	return &api.TombstoneResp{PositionOption: &api.TombstoneResp_Position_{Position: &api.TombstoneResp_Position{
		CommitPosition: pos, PreparePosition: pos,
	}}}, nil
}

// delete decides and writes a delete, hard (tombstone) or soft, and
// returns its position once it is durable.
func (st *streams) delete(ctx context.Context, stream string, exp expectation, hard bool) (uint64, error) {
	if err := checkStreamName(stream); err != nil {
		return 0, err
	}
	created := st.s.opts.Clock().UnixNano() / 100
	l := st.s.log
	l.mu.Lock()
	res, err := l.decideDelete(stream, exp, hard, created)
	l.mu.Unlock()
	if err != nil {
		return 0, status.Error(codes.Unavailable, err.Error())
	}
	if err := l.waitDurable(res.wait); err != nil {
		return 0, status.Error(codes.Unavailable, err.Error())
	}
	trailer := func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) }
	switch {
	case res.deleted:
		return 0, streamDeletedError(trailer, stream)
	case res.wrong:
		return 0, deleteWrongExpectedVersion(trailer, stream, exp, res.current)
	}
	return res.pos, nil
}

// decideDelete checks a delete of stream with expectation exp as
// EventStoreDB checks it (the expectation as for an append of one event
// with a new id; then a soft delete of a stream that has never had events
// fails with a wrong expected version, whatever the expectation) and, if
// it goes ahead, writes the tombstone or the soft delete's metadata. A
// tombstoned stream refuses it as deleted, as a soft-deleted one refuses
// StreamExists. The caller holds l.mu.
func (l *eventLog) decideDelete(stream string, exp expectation, hard bool, created int64) (appendResult, error) {
	if gone, wait := l.tombstoned(stream); gone {
		return appendResult{deleted: true, wait: wait}, nil
	}
	cur := int64(len(l.streams[stream])) - 1
	m, metaAt := l.metadataOf(stream, len(l.events))
	soft := m.truncateBefore == deletedStream
	known := cur >= 0 || metaAt >= 0
	wrong := appendResult{wrong: true, current: cur}
	switch exp.kind {
	case expectStreamExists:
		if soft {
			return appendResult{deleted: true, wait: metaAt + 1}, nil
		}
		if !known {
			return wrong, nil
		}
	case expectNoStream, expectExact:
		expected := int64(-1)
		if exp.kind == expectExact {
			expected = int64(exp.rev)
		}
		// The delete's event id is new: below the current revision only a
		// soft-deleted stream's NoStream passes, as for an append.
		if expected != cur && !(expected < cur && exp.kind == expectNoStream && soft) {
			return wrong, nil
		}
	}
	var e *event
	if hard {
		e = &event{
			stream: stream, rev: deletedStream, id: uuid.New(),
			typ: tombstoneType, contentType: "application/octet-stream", created: created,
		}
	} else {
		if cur < 0 && metaAt < 0 {
			return wrong, nil
		}
		meta := metastream(stream)
		e = metadataEvent(stream, uint64(len(l.streams[meta])), softDeleteData, created)
	}
	n, err := l.write([]*event{e})
	if err != nil {
		return appendResult{}, err
	}
	return appendResult{rev: e.rev, pos: e.pos, wait: n}, nil
}

// streamDeletedError is EventStoreDB's answer to a read of, an append to,
// or a delete of a tombstoned stream: FailedPrecondition, with the
// trailers from which the client makes its StreamDeleted error (it reads
// "stream-name" unchecked).
func streamDeletedError(setTrailer func(metadata.MD), stream string) error {
	setTrailer(metadata.Pairs("exception", "stream-deleted", "stream-name", stream))
	return status.Errorf(codes.FailedPrecondition, "Event stream '%s' is deleted.", stream)
}

// deleteWrongExpectedVersion is EventStoreDB's answer to a delete whose
// expectation fails: an error, unlike an append's, with the expected
// version as the server numbers it (any -2, no stream -1, stream exists
// -4) and the actual one (-1: no stream).
func deleteWrongExpectedVersion(setTrailer func(metadata.MD), stream string, exp expectation, current int64) error {
	var expected int64
	switch exp.kind {
	case expectAny:
		expected = -2
	case expectNoStream:
		expected = -1
	case expectStreamExists:
		expected = -4
	default:
		expected = int64(exp.rev)
	}
	setTrailer(metadata.Pairs(
		"exception", "wrong-expected-version", "stream-name", stream,
		"expected-version", strconv.FormatInt(expected, 10), "actual-version", strconv.FormatInt(current, 10),
	))
	return status.Errorf(codes.FailedPrecondition,
		"Delete failed due to WrongExpectedVersion. Stream: %s, Expected version: %d, Actual version: %d", stream, expected, current)
}

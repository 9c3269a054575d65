package esdbdouble_test

import (
	"errors"
	"math"
	"testing"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"tvsm/eventstore/esdb/esdbdouble"
)

func (d *double) tombstone(stream string, expect client.ExpectedRevision) (*client.DeleteResult, error) {
	return d.c.TombstoneStream(d.ctx, stream, client.TombstoneStreamOptions{ExpectedRevision: expect})
}

func (d *double) softDelete(stream string, expect client.ExpectedRevision) (*client.DeleteResult, error) {
	return d.c.DeleteStream(d.ctx, stream, client.DeleteStreamOptions{ExpectedRevision: expect})
}

// readErr reads stream and returns the error the read ends with.
func (d *double) readErr(stream string) error {
	d.t.Helper()
	rs, err := d.c.ReadStream(d.ctx, stream, client.ReadStreamOptions{}, 100)
	if err != nil {
		return err
	}
	_, err = drain(rs)
	return err
}

func errorCode(err error) (client.ErrorCode, bool) {
	var e *client.Error
	if !errors.As(err, &e) {
		return 0, false
	}
	return e.Code(), true
}

func requireCode(t *testing.T, what string, err error, want client.ErrorCode) {
	t.Helper()
	if code, ok := errorCode(err); !ok || code != want {
		t.Fatalf("%s: err %v, want the client's error code %d", what, err, want)
	}
}

// requireTombstoned checks what the client gets from a tombstoned stream.
func (d *double) requireTombstoned(stream string) {
	d.t.Helper()
	requireCode(d.t, "read of "+stream, d.readErr(stream), client.ErrorCodeStreamDeleted)
	for _, expect := range []client.ExpectedRevision{client.Any{}, client.NoStream{}, client.StreamExists{}, client.Revision(2)} {
		_, err := d.append(stream, expect, events("after-"+stream, 1)...)
		requireCode(d.t, "append to "+stream, err, client.ErrorCodeStreamDeleted)
	}
	_, err := d.tombstone(stream, client.Any{})
	requireCode(d.t, "second tombstone of "+stream, err, client.ErrorCodeStreamDeleted)
	_, err = d.softDelete(stream, client.Any{})
	requireCode(d.t, "soft delete of tombstoned "+stream, err, client.ErrorCodeStreamDeleted)
}

// TestTombstone: a tombstoned stream, with events or without, is refused
// for good, also after a restart; its events and the tombstone stay in $all.
func TestTombstone(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	stored := d.mustAppend("s", client.NoStream{}, events("s", 3)...)
	res, err := d.tombstone("s", client.Any{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Position.Commit <= stored.CommitPosition {
		t.Fatalf("tombstone at %v, not after the stream's last event at %d", res.Position, stored.CommitPosition)
	}
	if _, err := d.tombstone("never", client.Any{}); err != nil {
		t.Fatalf("tombstone of a stream without events: %v", err)
	}
	d.mustAppend("other", client.NoStream{}, events("other", 1)...)
	d.requireTombstoned("s")
	d.requireTombstoned("never")

	all := d.readAll(client.ReadAllOptions{}, 100)
	if len(all) != 6 {
		t.Fatalf("$all holds %d events, want 3 of s, its tombstone, the other tombstone, 1 of other", len(all))
	}
	for i, e := range all[:3] {
		if e.StreamID != "s" || e.EventNumber != uint64(i) || string(e.Data) == "" {
			t.Fatalf("$all event %d: %s rev %d: want s's events, data and all", i, e.StreamID, e.EventNumber)
		}
	}
	if tomb := all[3]; tomb.StreamID != "s" || tomb.EventType != "$streamDeleted" || tomb.EventNumber != math.MaxInt64 || tomb.Position != res.Position {
		t.Fatalf("$all after the events: %s %s rev %d at %v; want the tombstone of s at %v", tomb.StreamID, tomb.EventType, tomb.EventNumber, tomb.Position, res.Position)
	}

	addr := d.srv.Addr()
	d.stop()
	d.restart(addr, esdbdouble.Options{})
	d.requireTombstoned("s")
	d.requireTombstoned("never")
	if n := len(d.read("other")); n != 1 {
		t.Fatalf("other holds %d events after the restart, want 1", n)
	}
	if n := len(d.readAll(client.ReadAllOptions{}, 100)); n != 6 {
		t.Fatalf("$all holds %d events after the restart, want 6", n)
	}
}

// TestStreamDeletedOnTheWire: the answer is a FailedPrecondition error
// with the trailers EventStoreDB sends, for reads and appends alike.
func TestStreamDeletedOnTheWire(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	if _, err := d.tombstone("s", client.Any{}); err != nil {
		t.Fatal(err)
	}
	raw := rawClient(t, d.srv.Addr())
	check := func(what string, err error, md metadata.MD) {
		t.Helper()
		if status.Code(err) != codes.FailedPrecondition || len(md.Get("exception")) != 1 || md.Get("exception")[0] != "stream-deleted" ||
			len(md.Get("stream-name")) != 1 || md.Get("stream-name")[0] != "s" {
			t.Fatalf("%s: %v, trailers %v; want FailedPrecondition, exception stream-deleted, stream-name s", what, err, md)
		}
	}

	var md metadata.MD
	rc, err := raw.Read(d.ctx, &api.ReadReq{Options: &api.ReadReq_Options{
		StreamOption: &api.ReadReq_Options_Stream{Stream: &api.ReadReq_Options_StreamOptions{
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte("s")},
			RevisionOption:   &api.ReadReq_Options_StreamOptions_Start{Start: &shared.Empty{}},
		}},
		CountOption:  &api.ReadReq_Options_Count{Count: 10},
		FilterOption: &api.ReadReq_Options_NoFilter{NoFilter: &shared.Empty{}},
		UuidOption:   &api.ReadReq_Options_UUIDOption{Content: &api.ReadReq_Options_UUIDOption_String_{String_: &shared.Empty{}}},
	}}, grpc.Trailer(&md))
	if err == nil {
		_, err = rc.Recv()
	}
	check("read", err, md)

	md = nil
	ac, err := raw.Append(d.ctx, grpc.Trailer(&md))
	if err != nil {
		t.Fatal(err)
	}
	_ = ac.Send(&api.AppendReq{Content: &api.AppendReq_Options_{Options: &api.AppendReq_Options{
		StreamIdentifier:       &shared.StreamIdentifier{StreamName: []byte("s")},
		ExpectedStreamRevision: &api.AppendReq_Options_Any{Any: &shared.Empty{}},
	}}})
	_, err = ac.CloseAndRecv()
	check("append", err, md)

	md = nil
	_, err = raw.Tombstone(d.ctx, &api.TombstoneReq{Options: &api.TombstoneReq_Options{
		StreamIdentifier:       &shared.StreamIdentifier{StreamName: []byte("s")},
		ExpectedStreamRevision: &api.TombstoneReq_Options_Any{Any: &shared.Empty{}},
	}}, grpc.Trailer(&md))
	check("tombstone", err, md)
}

// TestDeleteExpectedRevision: deletes check their expectation as appends
// do, and a failed one writes nothing.
func TestDeleteExpectedRevision(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	d.mustAppend("s", client.NoStream{}, events("s", 2)...)
	for _, expect := range []client.ExpectedRevision{client.NoStream{}, client.Revision(0), client.Revision(5)} {
		_, err := d.tombstone("s", expect)
		if code, ok := errorCode(err); err == nil || ok && code == client.ErrorCodeStreamDeleted {
			t.Fatalf("tombstone of s (at 1) expecting %v: %v, want a wrong expected version", expect, err)
		}
		if _, err := d.softDelete("s", expect); err == nil {
			t.Fatalf("soft delete of s (at 1) expecting %v succeeded", expect)
		}
	}
	if _, err := d.tombstone("missing", client.StreamExists{}); err == nil {
		t.Fatal("tombstone of a missing stream expecting it to exist succeeded")
	}
	if n := len(d.read("s")); n != 2 {
		t.Fatalf("s holds %d events after refused deletes", n)
	}
	if d.readErr("missing") == nil || len(d.readAll(client.ReadAllOptions{}, 100)) != 2 {
		t.Fatal("a refused delete wrote something")
	}
	if _, err := d.tombstone("s", client.Revision(1)); err != nil {
		t.Fatalf("tombstone at the stream's revision: %v", err)
	}
	d.requireTombstoned("s")
}

// TestSoftDelete: a soft-deleted stream reads as not found; appending
// recreates it with its revisions going on, and reads start after the
// delete, also after a restart. A stream that never had events cannot be
// soft-deleted.
func TestSoftDelete(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	d.mustAppend("s", client.NoStream{}, events("s", 3)...)
	if _, err := d.softDelete("s", client.Any{}); err != nil {
		t.Fatal(err)
	}
	requireCode(t, "read of a soft-deleted stream", d.readErr("s"), client.ErrorCodeResourceNotFound)
	_, err := d.softDelete("missing", client.Any{})
	if code, ok := errorCode(err); err == nil || ok && code == client.ErrorCodeStreamDeleted {
		t.Fatalf("soft delete of a stream that never had events: %v, want a wrong expected version", err)
	}
	_, err = d.append("s", client.StreamExists{}, events("t", 1)...)
	requireCode(t, "append expecting the soft-deleted stream to exist", err, client.ErrorCodeStreamDeleted)
	// A repeat of the first append is still recognised.
	if r := d.mustAppend("s", client.NoStream{}, events("s", 3)...); r.NextExpectedVersion != 2 {
		t.Fatalf("repeat of the first append: next expected %d, want 2", r.NextExpectedVersion)
	}
	requireCode(t, "read after the repeat", d.readErr("s"), client.ErrorCodeResourceNotFound)

	again := events("again", 1)
	if r := d.mustAppend("s", client.NoStream{}, again...); r.NextExpectedVersion != 3 {
		t.Fatalf("append recreating the stream: next expected %d, want 3 (revisions go on)", r.NextExpectedVersion)
	}
	requireRevisions := func(what string, want ...uint64) {
		t.Helper()
		got := d.read("s")
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want revisions %v", what, len(got), want)
		}
		for i, e := range got {
			if e.EventNumber != want[i] {
				t.Fatalf("%s: event %d at revision %d, want %v", what, i, e.EventNumber, want)
			}
		}
	}
	requireRevisions("recreated stream", 3)
	back, err := d.c.ReadStream(d.ctx, "s", client.ReadStreamOptions{Direction: client.Backwards, From: client.End{}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := drain(back); err != nil || len(evs) != 1 || evs[0].EventID != again[0].EventID {
		t.Fatalf("backwards read of the recreated stream: %d events, %v", len(evs), err)
	}

	addr := d.srv.Addr()
	d.stop()
	d.restart(addr, esdbdouble.Options{})
	requireRevisions("recreated stream after a restart", 3)
	d.mustAppend("s", client.Revision(3), events("more", 1)...)
	requireRevisions("appended to after a restart", 3, 4)

	// Deleted again, then recreated with Any.
	if _, err := d.softDelete("s", client.Revision(4)); err != nil {
		t.Fatal(err)
	}
	requireCode(t, "read after the second soft delete", d.readErr("s"), client.ErrorCodeResourceNotFound)
	if r := d.mustAppend("s", client.Any{}, events("last", 1)...); r.NextExpectedVersion != 5 {
		t.Fatalf("append with Any recreating the stream: next expected %d, want 5", r.NextExpectedVersion)
	}
	requireRevisions("recreated with Any", 5)

	// The metadata is in $all, under the metadata stream.
	var metas int
	for _, e := range d.readAll(client.ReadAllOptions{}, 100) {
		if e.StreamID == "$$s" && e.EventType == "$metadata" {
			metas++
		}
	}
	if metas != 4 { // delete, recreate, delete, recreate
		t.Fatalf("$all holds %d metadata events of s, want 4", metas)
	}

	// A soft-deleted stream can be tombstoned.
	if _, err := d.tombstone("s", client.Any{}); err != nil {
		t.Fatal(err)
	}
	d.requireTombstoned("s")
}

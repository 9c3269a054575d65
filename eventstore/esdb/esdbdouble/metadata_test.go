package esdbdouble_test

import (
	"fmt"
	"math"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"tvsm/eventstore/esdb/esdbdouble"
)

func (d *double) setMetadata(stream string, m client.StreamMetadata) *client.WriteResult {
	d.t.Helper()
	r, err := d.c.SetStreamMetadata(d.ctx, stream, client.AppendToStreamOptions{}, m)
	if err != nil {
		d.t.Fatalf("set metadata of %s: %v", stream, err)
	}
	return r
}

func (d *double) metadata(stream string) client.StreamMetadata {
	d.t.Helper()
	m, err := d.c.GetStreamMetadata(d.ctx, stream, client.ReadStreamOptions{})
	if err != nil {
		d.t.Fatalf("get metadata of %s: %v", stream, err)
	}
	return *m
}

// readRevisions returns the revisions a read of stream shows, forwards
// from from (or backwards from the end) for up to n events.
func (d *double) readRevisions(stream string, opts client.ReadStreamOptions, n uint64) []uint64 {
	d.t.Helper()
	rs, err := d.c.ReadStream(d.ctx, stream, opts, n)
	if err != nil {
		d.t.Fatal(err)
	}
	evs, err := drain(rs)
	if err != nil {
		d.t.Fatalf("read %s: %v", stream, err)
	}
	revs := []uint64{}
	for _, e := range evs {
		revs = append(revs, e.EventNumber)
	}
	return revs
}

func requireRevs(t *testing.T, what string, got []uint64, want ...uint64) {
	t.Helper()
	if want == nil {
		want = []uint64{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: revisions %v, want %v", what, got, want)
	}
}

var (
	forwards  = client.ReadStreamOptions{}
	backwards = client.ReadStreamOptions{Direction: client.Backwards, From: client.End{}}
)

// TestStreamMetadataRoundTrip: metadata set with the client reads back as
// set, the last setting wins, and the metadata stream shows only its last
// event, as EventStoreDB keeps metadata streams at a $maxCount of 1.
func TestStreamMetadataRoundTrip(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	d.mustAppend("s", client.NoStream{}, events("s", 1)...)

	var m client.StreamMetadata
	m.SetMaxCount(10)
	m.SetMaxAge(time.Hour)
	m.SetTruncateBefore(0)
	m.SetCacheControl(time.Minute)
	var acl client.Acl
	acl.AddReadRoles("admin")
	acl.AddMetaWriteRoles("$admins") // one role each: the client cannot read a list back
	m.SetAcl(acl)
	m.AddCustomProperty("owner", "billing")
	if r := d.setMetadata("s", m); r.NextExpectedVersion != 0 {
		t.Fatalf("first metadata: next expected %d, want 0", r.NextExpectedVersion)
	}
	if got := d.metadata("s"); !reflect.DeepEqual(got, m) {
		t.Fatalf("metadata read back %+v, want %+v", got, m)
	}

	var second client.StreamMetadata
	second.SetMaxCount(3)
	if r := d.setMetadata("s", second); r.NextExpectedVersion != 1 {
		t.Fatalf("second metadata: next expected %d, want 1", r.NextExpectedVersion)
	}
	if got := d.metadata("s"); !reflect.DeepEqual(got, second) {
		t.Fatalf("metadata after a second setting %+v, want %+v", got, second)
	}
	requireRevs(t, "metadata stream forwards", d.readRevisions("$$s", forwards, 10), 1)
	requireRevs(t, "metadata stream backwards", d.readRevisions("$$s", backwards, 10), 1)
	requireRevs(t, "metadata stream from revision 0", d.readRevisions("$$s", client.ReadStreamOptions{From: client.Revision(0)}, 1), 1)

	// Expected revisions hold for metadata streams as for any stream.
	_, err := d.c.SetStreamMetadata(d.ctx, "s", client.AppendToStreamOptions{ExpectedRevision: client.Revision(0)}, m)
	requireWrongVersion(t, "metadata at a stale revision", err)
	_, err = d.c.SetStreamMetadata(d.ctx, "fresh", client.AppendToStreamOptions{ExpectedRevision: client.StreamExists{}}, m)
	requireWrongVersion(t, "metadata expecting a metadata stream that does not exist", err)
}

// TestMaxCountAndTruncateBefore: reads of a stream show only the last
// $maxCount events and none below $tb, both ways, also after a restart;
// $all keeps every event.
func TestMaxCountAndTruncateBefore(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	d.mustAppend("s", client.NoStream{}, events("s", 6)...)

	var m client.StreamMetadata
	m.SetMaxCount(3)
	d.setMetadata("s", m)
	requireRevs(t, "max count 3", d.readRevisions("s", forwards, 10), 3, 4, 5)
	requireRevs(t, "max count 3 backwards", d.readRevisions("s", backwards, 10), 5, 4, 3)
	requireRevs(t, "max count 3 from revision 1, one event", d.readRevisions("s", client.ReadStreamOptions{From: client.Revision(1)}, 1), 3)
	requireRevs(t, "max count 3 backwards from revision 4", d.readRevisions("s", client.ReadStreamOptions{Direction: client.Backwards, From: client.Revision(4)}, 10), 4, 3)

	m = client.StreamMetadata{}
	m.SetTruncateBefore(2)
	m.SetMaxCount(3)
	d.setMetadata("s", m)
	d.mustAppend("s", client.Revision(5), events("t", 2)...) // revisions 6, 7
	requireRevs(t, "max count 3 and $tb 2 after two more", d.readRevisions("s", forwards, 10), 5, 6, 7)
	m = client.StreamMetadata{}
	m.SetTruncateBefore(4)
	d.setMetadata("s", m)
	requireRevs(t, "$tb 4", d.readRevisions("s", forwards, 10), 4, 5, 6, 7)

	// Truncated past the end: the stream is there, with nothing to show.
	m.SetTruncateBefore(100)
	d.setMetadata("s", m)
	requireRevs(t, "$tb past the end", d.readRevisions("s", forwards, 10))
	requireRevs(t, "$tb past the end, backwards", d.readRevisions("s", backwards, 10))
	// ... and new events past the truncation show.
	addr := d.srv.Addr()
	d.stop()
	d.restart(addr, esdbdouble.Options{})
	requireRevs(t, "$tb past the end after a restart", d.readRevisions("s", forwards, 10))
	m.SetTruncateBefore(7)
	d.setMetadata("s", m)
	requireRevs(t, "$tb 7 after a restart", d.readRevisions("s", forwards, 10), 7)

	n := 0
	for _, e := range d.readAll(client.ReadAllOptions{}, 1000) {
		if e.StreamID == "s" {
			n++
		}
	}
	if n != 8 {
		t.Fatalf("$all holds %d events of s, want all 8", n)
	}
}

// clock is a settable clock for the double.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) now() time.Time              { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration)     { c.ns.Add(int64(d)) }
func (c *clock) options() esdbdouble.Options { return esdbdouble.Options{Clock: c.now} }

// TestMaxAge: reads show only the events younger than $maxAge, reckoned
// at the time of the read: the events after the newest one too old.
func TestMaxAge(t *testing.T) {
	c := newClock()
	d := start(t, c.options())
	d.mustAppend("s", client.NoStream{}, events("a", 2)...) // at 0 s
	c.advance(10 * time.Second)
	d.mustAppend("s", client.Revision(1), events("b", 1)...) // at 10 s
	c.advance(10 * time.Second)
	d.mustAppend("s", client.Revision(2), events("c", 1)...) // at 20 s

	var m client.StreamMetadata
	m.SetMaxAge(15 * time.Second)
	d.setMetadata("s", m)
	requireRevs(t, "at 20 s, max age 15 s", d.readRevisions("s", forwards, 10), 2, 3)
	requireRevs(t, "backwards", d.readRevisions("s", backwards, 10), 3, 2)
	c.advance(6 * time.Second) // 26 s
	requireRevs(t, "at 26 s", d.readRevisions("s", forwards, 10), 3)
	c.advance(10 * time.Second) // 36 s
	requireRevs(t, "at 36 s: all too old, the stream still there", d.readRevisions("s", forwards, 10))

	m.SetMaxAge(time.Hour)
	d.setMetadata("s", m)
	requireRevs(t, "max age an hour", d.readRevisions("s", forwards, 10), 0, 1, 2, 3)
}

// TestMetadataTheServerCannotReadIsNone: metadata the server cannot read
// has no effect at all, and members below their least value are ignored
// one by one.
func TestMetadataTheServerCannotReadIsNone(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	raw := rawClient(t, d.srv.Addr())
	appendRaw := func(stream, contentType, data string) {
		t.Helper()
		if err := rawAppend(d, raw, stream, contentType, data); err != nil {
			t.Fatalf("append %s to %s: %v", data, stream, err)
		}
	}
	d.mustAppend("s", client.NoStream{}, events("s", 4)...)
	for _, c := range []struct{ contentType, data string }{
		{"application/octet-stream", `{"$tb":2}`},
		{"application/json", `[{"$tb":2}]`},
		{"application/json", `{"$tb":2,"$maxCount":"1"}`},
		{"application/json", `{"$tb":2,"$maxCount":1.0}`},
		{"application/json", `{"$tb":2,"$maxAge":1e3}`},
		{"application/json", `{"$tb":99999999999999999999}`},
		{"application/json", `{"$tb":2,"$maxAge":9223372036854}`}, // beyond a TimeSpan
		{"application/json", `{"$tb":2,"$tmp":"yes"}`},
		{"application/json", `{"$tb":2,"$acl":{"$r":1}}`},
		{"application/json", `{"$tb":2,"$acl":{"$read":"admin"}}`},
		{"application/json", `{"$tb":2,"$cacheControl":null}`},
		{"application/json", `{"$tb":2`},
	} {
		appendRaw("$$s", c.contentType, c.data)
		requireRevs(t, c.contentType+" "+c.data, d.readRevisions("s", forwards, 10), 0, 1, 2, 3)
	}
	appendRaw("$$s", "application/json", `{"$tb":-1,"$maxCount":0,"$maxAge":0,"custom":{"$tb":3}}`)
	requireRevs(t, "values below their least", d.readRevisions("s", forwards, 10), 0, 1, 2, 3)
	appendRaw("$$s", "application/json", `{"$tb":1,"$maxCount":0,"$acl":{"$r":["a","b"],"$mw":"c"},"$tmp":false}`)
	requireRevs(t, "$tb 1 beside an ignored $maxCount", d.readRevisions("s", forwards, 10), 1, 2, 3)
}

// rawAppend appends one event over raw gRPC (which, unlike the client, gets
// the answer to an append refused before all was sent).
func rawAppend(d *double, raw api.StreamsClient, stream, contentType, data string) error {
	call, err := raw.Append(d.ctx)
	if err != nil {
		return err
	}
	_ = call.Send(&api.AppendReq{Content: &api.AppendReq_Options_{Options: &api.AppendReq_Options{
		StreamIdentifier:       &shared.StreamIdentifier{StreamName: []byte(stream)},
		ExpectedStreamRevision: &api.AppendReq_Options_Any{Any: &shared.Empty{}},
	}}})
	_ = call.Send(&api.AppendReq{Content: &api.AppendReq_ProposedMessage_{ProposedMessage: &api.AppendReq_ProposedMessage{
		Id:       &shared.UUID{Value: &shared.UUID_String_{String_: uuid.NewString()}},
		Metadata: map[string]string{"type": "$metadata", "content-type": contentType},
		Data:     []byte(data),
	}}})
	_, err = call.CloseAndRecv()
	return err
}

// TestMetadataStreamsOfSystemStreamsRefused: the metadata of user streams
// is every user's to write; that of system streams, and deletes of
// metadata streams, are refused as EventStoreDB refuses a non-admin.
func TestMetadataStreamsOfSystemStreamsRefused(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	raw := rawClient(t, d.srv.Addr())
	for _, stream := range []string{"$$$settings", "$$", "$$$$s"} {
		if err := rawAppend(d, raw, stream, "application/json", "{}"); status.Code(err) != codes.PermissionDenied {
			t.Errorf("append to %q: %v, want permission denied", stream, err)
		}
	}
	d.mustAppend("s", client.NoStream{}, events("s", 1)...)
	d.setMetadata("s", client.StreamMetadata{})
	_, err := d.softDelete("$$s", client.Any{})
	requireCode(t, "soft delete of a metadata stream", err, client.ErrorCodeAccessDenied)
	_, err = d.tombstone("$$s", client.Any{})
	requireCode(t, "tombstone of a metadata stream", err, client.ErrorCodeAccessDenied)
}

// TestSoftDeleteAndMetadata: a soft delete replaces the stream's metadata
// with only "$tb"; setting metadata on a soft-deleted stream recreates it
// from the revision after its last, keeping what was set; a stream
// tombstoned takes its metadata stream with it.
func TestSoftDeleteAndMetadata(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	d.mustAppend("s", client.NoStream{}, events("s", 3)...)
	var m client.StreamMetadata
	m.SetMaxCount(10)
	m.AddCustomProperty("k", "v")
	d.setMetadata("s", m)
	if _, err := d.softDelete("s", client.Any{}); err != nil {
		t.Fatal(err)
	}
	// Read raw: the client reads numbers as float64, which cannot hold
	// 2^63-1.
	if meta := d.read("$$s"); len(meta) != 1 || string(meta[0].Data) != fmt.Sprintf(`{"$tb":%d}`, math.MaxInt64) {
		t.Fatalf("metadata stream after a soft delete: %d events, last %q; want only $tb 2^63-1", len(meta), meta[len(meta)-1].Data)
	}

	// Setting metadata recreates the stream, empty, from revision 3.
	d.setMetadata("s", m)
	want := m
	want.SetTruncateBefore(3)
	if got := d.metadata("s"); !reflect.DeepEqual(got, want) {
		t.Fatalf("metadata set on the soft-deleted stream reads %+v, want %+v", got, want)
	}
	requireRevs(t, "recreated by metadata", d.readRevisions("s", forwards, 10))
	d.mustAppend("s", client.Revision(2), events("t", 1)...)
	requireRevs(t, "appended after", d.readRevisions("s", forwards, 10), 3)

	// Recreating by an append keeps the metadata of the time of the append.
	if _, err := d.softDelete("s", client.Revision(3)); err != nil {
		t.Fatal(err)
	}
	d.mustAppend("s", client.Any{}, events("u", 1)...)
	want = client.StreamMetadata{}
	want.SetTruncateBefore(4)
	if got := d.metadata("s"); !reflect.DeepEqual(got, want) {
		t.Fatalf("metadata after recreating by an append %+v, want %+v", got, want)
	}

	if _, err := d.tombstone("s", client.Any{}); err != nil {
		t.Fatal(err)
	}
	requireCode(t, "read of the metadata stream of a tombstoned stream", d.readErr("$$s"), client.ErrorCodeStreamDeleted)
	_, err := d.c.SetStreamMetadata(d.ctx, "s", client.AppendToStreamOptions{}, m)
	requireCode(t, "metadata set on a tombstoned stream", err, client.ErrorCodeStreamDeleted)
}

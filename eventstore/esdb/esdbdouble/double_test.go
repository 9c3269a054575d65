package esdbdouble_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/serverfeatures"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"tvsm/eventstore/esdb/esdbdouble"
)

// double is a protocol double in dir with an EventStoreDB client on it.
type double struct {
	t   *testing.T
	dir string
	srv *esdbdouble.Server
	c   *client.Client
	ctx context.Context
}

func start(t *testing.T, opts esdbdouble.Options) *double {
	t.Helper()
	d := &double{t: t, dir: t.TempDir(), ctx: t.Context()}
	d.restart("127.0.0.1:0", opts)
	return d
}

// restart starts the double (again) on its directory at addr, with a new
// client.
func (d *double) restart(addr string, opts esdbdouble.Options) {
	d.t.Helper()
	srv, err := esdbdouble.Start(d.dir, addr, opts)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = srv.Close() })
	cfg, err := client.ParseConnectionString(srv.URL())
	if err != nil {
		d.t.Fatal(err)
	}
	cfg.Logger = client.NoopLogging()
	c, err := client.NewClient(cfg)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = c.Close() })
	d.srv, d.c = srv, c
}

// stop stops the double as a crash would (its client stays, failing).
func (d *double) stop() {
	d.t.Helper()
	if err := d.srv.Close(); err != nil {
		d.t.Fatal(err)
	}
}

// events returns n events named key-0.. key-(n-1), with fixed ids.
func events(key string, n int) []client.EventData {
	out := make([]client.EventData, n)
	for i := range out {
		out[i] = client.EventData{
			EventID:     uuid.NewSHA1(uuid.NameSpaceOID, []byte(key+"-"+strconv.Itoa(i))),
			EventType:   "Thing.v1",
			ContentType: client.ContentTypeJson,
			Data:        fmt.Appendf(nil, `{"key":%q,"i":%d}`, key, i),
			Metadata:    []byte(`{"m":1}`),
		}
	}
	return out
}

func (d *double) append(stream string, expect client.ExpectedRevision, evs ...client.EventData) (*client.WriteResult, error) {
	return d.c.AppendToStream(d.ctx, stream, client.AppendToStreamOptions{ExpectedRevision: expect}, evs...)
}

func (d *double) mustAppend(stream string, expect client.ExpectedRevision, evs ...client.EventData) *client.WriteResult {
	d.t.Helper()
	r, err := d.append(stream, expect, evs...)
	if err != nil {
		d.t.Fatalf("append to %s: %v", stream, err)
	}
	return r
}

// read returns the events of stream, nil when it does not exist.
func (d *double) read(stream string) []*client.RecordedEvent {
	d.t.Helper()
	rs, err := d.c.ReadStream(d.ctx, stream, client.ReadStreamOptions{}, 1<<20)
	if err != nil {
		d.t.Fatal(err)
	}
	evs, err := drain(rs)
	var e *client.Error
	if errors.As(err, &e) && e.Code() == client.ErrorCodeResourceNotFound {
		return nil
	}
	if err != nil {
		d.t.Fatal(err)
	}
	return evs
}

// drain reads rs to its end and closes it.
func drain(rs *client.ReadStream) ([]*client.RecordedEvent, error) {
	defer rs.Close()
	var out []*client.RecordedEvent
	for {
		ev, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev.Event)
	}
}

func requireWrongVersion(t *testing.T, what string, err error) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Code() != client.ErrorCodeWrongExpectedVersion {
		t.Fatalf("%s: err %v, want a wrong expected version", what, err)
	}
}

func ids(evs []*client.RecordedEvent) []uuid.UUID {
	out := make([]uuid.UUID, len(evs))
	for i, e := range evs {
		out[i] = e.EventID
	}
	return out
}

// TestIdempotencyIsPerStreamAndRevision checks EventStoreDB's rule: a
// repeat is recognised by the same ids at the same expected revision;
// the same ids elsewhere are appended again.
func TestIdempotencyIsPerStreamAndRevision(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	evs := events("a", 2)
	first := d.mustAppend("s", client.NoStream{}, evs...)

	// Repeats with the same expectation, or Any: acknowledged, not stored.
	for _, expect := range []client.ExpectedRevision{client.NoStream{}, client.Any{}, client.StreamExists{}} {
		r := d.mustAppend("s", expect, evs...)
		if *r != *first {
			t.Fatalf("repeat with %T: %+v, want the original %+v", expect, r, first)
		}
	}
	// The tail of the append where it is: a repeat too.
	if r := d.mustAppend("s", client.Revision(0), evs[1]); r.NextExpectedVersion != 1 {
		t.Fatalf("repeat of the second event: next expected %d, want 1", r.NextExpectedVersion)
	}
	// Partial repeats fail.
	_, err := d.append("s", client.NoStream{}, append(events("a", 2), events("b", 1)...)...)
	requireWrongVersion(t, "repeat plus a new event", err)
	_, err = d.append("s", client.Any{}, events("a", 2)[1], events("b", 1)[0])
	requireWrongVersion(t, "second event plus a new one, any", err)
	// A wrong revision with other ids fails.
	_, err = d.append("s", client.Revision(0), events("c", 1)...)
	requireWrongVersion(t, "stale revision", err)
	if n := len(d.read("s")); n != 2 {
		t.Fatalf("stream holds %d events after repeats, want 2", n)
	}

	// The same ids at the end of the stream, at its revision: appended
	// again. And in another stream.
	d.mustAppend("s", client.Revision(1), evs...)
	d.mustAppend("other", client.NoStream{}, evs...)
	if got := ids(d.read("s")); len(got) != 4 || got[2] != evs[0].EventID || got[3] != evs[1].EventID {
		t.Fatalf("stream s ids %v, want the two events twice", got)
	}
	if n := len(d.read("other")); n != 2 {
		t.Fatalf("other holds %d events, want 2", n)
	}
}

// TestAnyIdempotencyIsBestEffort: appends with Any are checked against a
// cache of recent ids that starts empty on every start, so a repeat after
// a restart, or after the cache forgot, is appended again. A repeat at an
// exact revision is recognised from the log itself.
func TestAnyIdempotencyIsBestEffort(t *testing.T) {
	d := start(t, esdbdouble.Options{RecentIDs: 2})
	a, b := events("a", 1), events("b", 2)
	d.mustAppend("s", client.Any{}, a...)
	d.mustAppend("s", client.Any{}, b...) // pushes a out of a cache of 2
	d.mustAppend("s", client.Any{}, a...)
	if n := len(d.read("s")); n != 4 {
		t.Fatalf("%d events, want 4: the forgotten id appended again", n)
	}

	addr := d.srv.Addr()
	d.stop()
	d.restart(addr, esdbdouble.Options{})
	d.mustAppend("s", client.Any{}, b...)
	if n := len(d.read("s")); n != 6 {
		t.Fatalf("%d events, want 6: after a restart Any repeats are appended", n)
	}
	// Exact revisions: recognised from the stored stream.
	r := d.mustAppend("s", client.Revision(0), b...)
	if r.NextExpectedVersion != 2 {
		t.Fatalf("repeat at revision 0: next expected %d, want 2", r.NextExpectedVersion)
	}
	if n := len(d.read("s")); n != 6 {
		t.Fatalf("%d events after an exact repeat, want 6", n)
	}
}

// TestRefusesWhatEventStoreDBRefuses sends appends an anonymous client
// gets refused. They go over raw gRPC: like EventStoreDB, the double
// answers as soon as it knows, and the client, still sending its events
// then, may see only the end of the stream instead of the answer.
func TestRefusesWhatEventStoreDBRefuses(t *testing.T) {
	d := start(t, esdbdouble.Options{MaxAppendSize: 1000})
	raw := rawClient(t, d.srv.Addr())
	proposed := func(md map[string]string, data []byte) *api.AppendReq {
		return &api.AppendReq{Content: &api.AppendReq_ProposedMessage_{ProposedMessage: &api.AppendReq_ProposedMessage{
			Id:       &shared.UUID{Value: &shared.UUID_String_{String_: uuid.NewString()}},
			Metadata: md, Data: data,
		}}}
	}
	ok := map[string]string{"type": "X.v1", "content-type": "application/json"}
	for _, c := range []struct {
		what   string
		stream string
		events []*api.AppendReq
		want   codes.Code
	}{
		{"system stream", "$system", []*api.AppendReq{proposed(ok, []byte("{}"))}, codes.PermissionDenied},
		{"over the maximum size", "big", []*api.AppendReq{proposed(ok, make([]byte, 600)), proposed(ok, make([]byte, 600))}, codes.InvalidArgument},
		{"no type", "raw", []*api.AppendReq{proposed(map[string]string{"content-type": "application/json"}, []byte("{}"))}, codes.InvalidArgument},
		{"no content type", "raw", []*api.AppendReq{proposed(map[string]string{"type": "X.v1"}, []byte("{}"))}, codes.InvalidArgument},
	} {
		call, err := raw.Append(d.ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = call.Send(&api.AppendReq{Content: &api.AppendReq_Options_{Options: &api.AppendReq_Options{
			StreamIdentifier:       &shared.StreamIdentifier{StreamName: []byte(c.stream)},
			ExpectedStreamRevision: &api.AppendReq_Options_Any{Any: &shared.Empty{}},
		}}})
		for _, e := range c.events {
			_ = call.Send(e)
		}
		if _, err := call.CloseAndRecv(); status.Code(err) != c.want {
			t.Errorf("%s: %v, want %v", c.what, err, c.want)
		}
	}
	for _, stream := range []string{"big", "raw"} {
		if d.read(stream) != nil {
			t.Errorf("a refused append to %s was stored", stream)
		}
	}
}

func rawClient(t *testing.T, addr string) api.StreamsClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return api.NewStreamsClient(cc)
}

// TestServerFeatures: the client asks for the server's version and
// methods when it connects. The double announces DefaultServerVersion, or
// the version it is told to, and lists only the methods it serves; without
// ServerFeatures it answers Unimplemented, as servers before 21.10, which
// the client takes for version 0.0.0.
func TestServerFeatures(t *testing.T) {
	version := func(d *double) client.ServerVersion {
		t.Helper()
		d.mustAppend("s", client.Any{}, events("s", 1)...) // connects
		v, err := d.c.GetServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		return *v
	}
	if v := version(start(t, esdbdouble.Options{})); v != (client.ServerVersion{Major: 24, Minor: 10, Patch: 0}) {
		t.Fatalf("default: the client sees version %+v, want 24.10.0", v)
	}
	if v := version(start(t, esdbdouble.Options{ServerVersion: "22.10.3"})); v != (client.ServerVersion{Major: 22, Minor: 10, Patch: 3}) {
		t.Fatalf("told 22.10.3: the client sees version %+v", v)
	}
	old := start(t, esdbdouble.Options{NoServerFeatures: true})
	if v := version(old); v != (client.ServerVersion{}) {
		t.Fatalf("without ServerFeatures: the client sees version %+v, want 0.0.0", v)
	}
	if _, err := featuresClient(t, old.srv.Addr()).GetSupportedMethods(old.ctx, &shared.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("GetSupportedMethods without ServerFeatures: %v, want Unimplemented", err)
	}

	d := start(t, esdbdouble.Options{})
	got, err := featuresClient(t, d.srv.Addr()).GetSupportedMethods(d.ctx, &shared.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]bool{}
	for _, m := range got.GetMethods() {
		methods[m.GetServiceName()+"/"+m.GetMethodName()] = true
	}
	for _, m := range []string{"read", "append", "delete", "tombstone"} {
		if !methods["event_store.client.streams.streams/"+m] {
			t.Errorf("methods %v lack streams %s", methods, m)
		}
	}
	if methods["event_store.client.streams.streams/batchappend"] {
		t.Errorf("methods list batchappend, which the double does not serve")
	}
	if got.GetEventStoreServerVersion() != esdbdouble.DefaultServerVersion {
		t.Errorf("version %q", got.GetEventStoreServerVersion())
	}

	for _, bad := range []string{"24.10", "v24.10.0", "24.10.0-rc1", "24..0"} {
		if srv, err := esdbdouble.Start(t.TempDir(), "127.0.0.1:0", esdbdouble.Options{ServerVersion: bad}); err == nil {
			srv.Close()
			t.Errorf("Start announcing %q: no error, want one (the client cannot parse it)", bad)
		}
	}
}

func featuresClient(t *testing.T, addr string) serverfeatures.ServerFeaturesClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return serverfeatures.NewServerFeaturesClient(cc)
}

// TestEventsCarryCreated checks the system metadata of read events.
func TestEventsCarryCreated(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	before := time.Now()
	d.mustAppend("s", client.NoStream{}, events("a", 2)...)
	for _, e := range d.read("s") {
		if e.CreatedDate.Before(before.Add(-time.Second)) || e.CreatedDate.After(time.Now().Add(time.Second)) {
			t.Errorf("created %v, want about now", e.CreatedDate)
		}
		if e.SystemMetadata["type"] != "Thing.v1" || e.SystemMetadata["content-type"] != "application/json" || e.SystemMetadata["created"] == "" {
			t.Errorf("system metadata %v", e.SystemMetadata)
		}
	}
}

// TestReadAllDirections: forwards from a position includes the event
// there, backwards starts before it; positions elsewhere are refused.
func TestReadAllDirections(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	d.mustAppend("a", client.NoStream{}, events("a", 3)...)
	all := d.readAll(client.ReadAllOptions{}, 100)
	if len(all) != 3 {
		t.Fatalf("$all holds %d events", len(all))
	}
	p := all[1].Position
	fwd := d.readAll(client.ReadAllOptions{From: p}, 100)
	back := d.readAll(client.ReadAllOptions{From: p, Direction: client.Backwards}, 100)
	if len(fwd) != 2 || fwd[0].EventID != all[1].EventID || len(back) != 1 || back[0].EventID != all[0].EventID {
		t.Fatalf("from %v: forwards %v, backwards %v", p, ids(fwd), ids(back))
	}
	end := d.readAll(client.ReadAllOptions{From: client.End{}, Direction: client.Backwards}, 1)
	if len(end) != 1 || end[0].EventID != all[2].EventID {
		t.Fatalf("backwards from the end: %v", ids(end))
	}
	if !(all[0].Position.Commit < all[1].Position.Commit && all[1].Position.Commit+1 < all[2].Position.Commit) {
		t.Fatalf("positions %v %v %v: want increasing byte offsets", all[0].Position, all[1].Position, all[2].Position)
	}
	rs, err := d.c.ReadAll(d.ctx, client.ReadAllOptions{From: client.Position{Commit: p.Commit + 1, Prepare: p.Prepare + 1}}, 10)
	if err == nil {
		_, err = rs.Recv()
		rs.Close()
	}
	if err == nil {
		t.Fatal("read from a position inside a record succeeded")
	}
}

func (d *double) readAll(opts client.ReadAllOptions, n uint64) []*client.RecordedEvent {
	d.t.Helper()
	rs, err := d.c.ReadAll(d.ctx, opts, n)
	if err != nil {
		d.t.Fatal(err)
	}
	evs, err := drain(rs)
	if err != nil {
		d.t.Fatal(err)
	}
	return evs
}

// subscriptionLog is what a subscription delivered, in order.
type subscriptionLog struct {
	events      []*client.RecordedEvent
	checkpoints []client.Position
	caughtUp    int
	fellBehind  int
}

// collect receives from sub until done reports true (or fails the test
// after 10 s).
func collect(t *testing.T, sub *client.Subscription, log *subscriptionLog, done func(*subscriptionLog) bool) {
	t.Helper()
	got := make(chan *client.SubscriptionEvent)
	timeout := time.After(10 * time.Second)
	for !done(log) {
		go func() { got <- sub.Recv() }()
		select {
		case ev := <-got:
			switch {
			case ev.EventAppeared != nil:
				log.events = append(log.events, ev.EventAppeared.Event)
			case ev.CheckPointReached != nil:
				log.checkpoints = append(log.checkpoints, *ev.CheckPointReached)
			case ev.CaughtUp != nil:
				log.caughtUp++
			case ev.FellBehind != nil:
				log.fellBehind++
			case ev.SubscriptionDropped != nil:
				t.Fatalf("subscription dropped: %v", ev.SubscriptionDropped.Error)
			}
		case <-timeout:
			t.Fatalf("timed out: %d events, %d checkpoints, caught up %d times", len(log.events), len(log.checkpoints), log.caughtUp)
		}
	}
}

// TestSubscriptionFromPositionIsExclusive: a subscription from an event's
// position starts after it, catches up, says so, then goes live.
func TestSubscriptionFromPositionIsExclusive(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	d.mustAppend("a", client.NoStream{}, events("a", 3)...)
	all := d.readAll(client.ReadAllOptions{}, 10)
	sub, err := d.c.SubscribeToAll(d.ctx, client.SubscribeToAllOptions{From: all[0].Position})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var log subscriptionLog
	collect(t, sub, &log, func(l *subscriptionLog) bool { return l.caughtUp == 1 })
	if got := ids(log.events); len(got) != 2 || got[0] != all[1].EventID || got[1] != all[2].EventID {
		t.Fatalf("catch-up after the first event: %v", got)
	}
	live := events("live", 1)
	d.mustAppend("b", client.NoStream{}, live...)
	collect(t, sub, &log, func(l *subscriptionLog) bool { return len(l.events) == 3 })
	if log.events[2].EventID != live[0].EventID || len(log.checkpoints) != 0 {
		t.Fatalf("live event %v, checkpoints %v (an unfiltered subscription gets none)", log.events[2].EventID, log.checkpoints)
	}
}

// TestFilteredSubscriptionCheckpoints: a filtered subscription gets the
// matching events and a checkpoint every multiplier × window events looked
// at, not more often.
func TestFilteredSubscriptionCheckpoints(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	for i := range 25 {
		stream := fmt.Sprintf("other-%d", i)
		if i%5 == 0 {
			stream = fmt.Sprintf("order-%d", i)
		}
		d.mustAppend(stream, client.NoStream{}, events(stream, 1)...)
	}
	sub, err := d.c.SubscribeToAll(d.ctx, client.SubscribeToAllOptions{
		From:   client.Start{},
		Filter: &client.SubscriptionFilter{Type: client.StreamFilterType, Prefixes: []string{"order-"}},
		// Checkpoints every 2 × 4 = 8 events looked at.
		MaxSearchWindow: 4, CheckpointInterval: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var log subscriptionLog
	collect(t, sub, &log, func(l *subscriptionLog) bool { return l.caughtUp == 1 })
	if len(log.events) != 5 {
		t.Fatalf("%d events of order- streams, want 5", len(log.events))
	}
	all := d.readAll(client.ReadAllOptions{}, 100)
	want := []client.Position{all[7].Position, all[15].Position, all[23].Position}
	if fmt.Sprint(log.checkpoints) != fmt.Sprint(want) {
		t.Fatalf("checkpoints %v, want %v (every 8th event)", log.checkpoints, want)
	}

	// Event-type filter, by regular expression.
	d.mustAppend("x", client.NoStream{}, client.EventData{EventID: uuid.New(), EventType: "Special.v1", ContentType: client.ContentTypeJson, Data: []byte("{}")})
	sub2, err := d.c.SubscribeToAll(d.ctx, client.SubscribeToAllOptions{
		From: client.Start{}, Filter: &client.SubscriptionFilter{Type: client.EventFilterType, Regex: "^Spec"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	var log2 subscriptionLog
	collect(t, sub2, &log2, func(l *subscriptionLog) bool { return l.caughtUp == 1 })
	if len(log2.events) != 1 || log2.events[0].EventType != "Special.v1" {
		t.Fatalf("type filter delivered %d events", len(log2.events))
	}
}

// TestLiveSubscriberFallsBehind: a live subscriber far behind is told
// FellBehind, then gets everything and CaughtUp again.
func TestLiveSubscriberFallsBehind(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	sub, err := d.c.SubscribeToAll(d.ctx, client.SubscribeToAllOptions{From: client.Start{}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var log subscriptionLog
	collect(t, sub, &log, func(l *subscriptionLog) bool { return l.caughtUp == 1 })
	d.mustAppend("bulk", client.NoStream{}, events("bulk", 5000)...)
	collect(t, sub, &log, func(l *subscriptionLog) bool { return len(l.events) == 5000 && l.caughtUp == 2 })
	if log.fellBehind != 1 {
		t.Fatalf("FellBehind %d times, want 1", log.fellBehind)
	}
}

// TestDurableAcrossRestart stops the double, truncates garbage onto its
// log as a crash mid-append would leave it, and starts it again: every
// acknowledged event is there, revisions and positions go on.
func TestDurableAcrossRestart(t *testing.T) {
	d := start(t, esdbdouble.Options{})
	r1 := d.mustAppend("s", client.NoStream{}, events("a", 3)...)
	d.mustAppend("t", client.NoStream{}, events("b", 1)...)
	addr := d.srv.Addr()
	d.stop()

	path := filepath.Join(d.dir, "events.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 1, 0, 9, 9}); err != nil { // a record cut short
		t.Fatal(err)
	}
	f.Close()

	d.restart(addr, esdbdouble.Options{})
	if got := ids(d.read("s")); len(got) != 3 || got[2] != events("a", 3)[2].EventID {
		t.Fatalf("after restart: %v", got)
	}
	r := d.mustAppend("s", client.Revision(2), events("c", 1)...)
	if r.NextExpectedVersion != 3 || r.CommitPosition <= r1.CommitPosition {
		t.Fatalf("append after restart: %+v (before: %+v)", r, r1)
	}
	// Exact repeats are recognised after the restart.
	if r := d.mustAppend("s", client.NoStream{}, events("a", 3)...); *r != *r1 {
		t.Fatalf("repeat after restart: %+v, want %+v", r, r1)
	}

	// A damaged record before the end is not cut off silently.
	d.stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len("tvsm esdbdouble1")+12] ^= 0xff
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
	if srv, err := esdbdouble.Start(d.dir, "127.0.0.1:0", esdbdouble.Options{}); err == nil {
		srv.Close()
		t.Fatal("a log with a damaged record opened")
	}
}

package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"tvsm/eventstore"
)

var appendReadTests = []test{
	{"SingleEvent", testSingleEvent},
	{"MultipleEvents", testMultipleEvents},
	{"Payloads", testPayloads},
	{"ReadFromRevisionWithMax", testReadFromRevisionWithMax},
	{"ReadPastEnd", testReadPastEnd},
	{"ReadMissingStream", testReadMissingStream},
	{"StreamNamesSharingPrefixes", testStreamNamesSharingPrefixes},
}

func testSingleEvent(e *env) {
	stream := e.stream("single")
	ev := e.event("single", "Thing.v1")
	before := time.Now()
	res := e.mustAppend(stream, eventstore.NoStream, ev)
	after := time.Now()

	got := e.read(stream, eventstore.Start, 0)
	e.checkRecorded(got, stream, 0, []eventstore.EventData{ev}, before, after)
	if res.NextExpected != 0 {
		e.t.Errorf("AppendResult.NextExpected %d, want 0", res.NextExpected)
	}
	if res.Position != got[0].Position {
		e.t.Errorf("AppendResult.Position %v, want the event's %v", res.Position, got[0].Position)
	}
}

func testMultipleEvents(e *env) {
	stream := e.stream("multi")
	first := e.events("first", "Thing.v1", 5)
	before := time.Now()
	res1 := e.mustAppend(stream, eventstore.NoStream, first...)
	second := e.events("second", "Other.v1", 3)
	res2 := e.mustAppend(stream, eventstore.Exact(res1.NextExpected), second...)
	after := time.Now()

	got := e.read(stream, eventstore.Start, 0)
	e.checkRecorded(got, stream, 0, append(first, second...), before, after)
	if res1.NextExpected != 4 || res1.Position != got[4].Position {
		e.t.Errorf("first AppendResult %+v, want NextExpected 4 and Position %v", res1, got[4].Position)
	}
	if res2.NextExpected != 7 || res2.Position != got[7].Position {
		e.t.Errorf("second AppendResult %+v, want NextExpected 7 and Position %v", res2, got[7].Position)
	}
}

// testPayloads checks that data and metadata come back byte for byte: every
// byte value, empty and nil, and a large payload.
func testPayloads(e *env) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	reversed := bytes.Clone(all)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	large := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	evs := []eventstore.EventData{
		{ID: eventstore.DeriveEventID(e.ns+"payload", 0), Type: "Binary.v1", Data: all, Metadata: reversed},
		{ID: eventstore.DeriveEventID(e.ns+"payload", 1), Type: "Empty.v1", Data: []byte{}, Metadata: nil},
		{ID: eventstore.DeriveEventID(e.ns+"payload", 2), Type: "Nil.v1"},
		{ID: eventstore.DeriveEventID(e.ns+"payload", 3), Type: "Large.v1", Data: large, Metadata: []byte(`{"size":65536}`)},
		{ID: eventstore.DeriveEventID(e.ns+"payload", 4), Type: "Unicode.v1 ✓", Data: []byte(`{"name":"Иван ✓"}`), Metadata: []byte("ü")},
	}
	stream := e.stream("payloads")
	before := time.Now()
	e.mustAppend(stream, eventstore.NoStream, evs...)
	after := time.Now()
	e.checkRecorded(e.read(stream, eventstore.Start, 0), stream, 0, evs, before, after)
}

func testReadFromRevisionWithMax(e *env) {
	stream := e.stream("paged")
	e.mustAppend(stream, eventstore.NoStream, e.events("paged", "Paged.v1", 10)...)
	all := e.read(stream, eventstore.Start, 0)
	if len(all) != 10 {
		e.t.Fatalf("ReadStream(all): %d events, want 10", len(all))
	}
	cases := []struct {
		from     uint64
		max      int
		from2, n int // expected: all[from2 : from2+n]
	}{
		{0, 0, 0, 10},
		{0, -1, 0, 10},
		{0, 1, 0, 1},
		{0, 10, 0, 10},
		{0, 100, 0, 10},
		{3, 0, 3, 7},
		{3, 4, 3, 4},
		{8, 5, 8, 2},
		{9, 0, 9, 1},
	}
	for _, c := range cases {
		got := e.read(stream, eventstore.Exact(c.from), c.max)
		requireSameEvents(e.t, fmt.Sprintf("ReadStream(from %d, max %d)", c.from, c.max), got, all[c.from2:c.from2+c.n])
	}
}

func testReadPastEnd(e *env) {
	stream := e.stream("short")
	e.mustAppend(stream, eventstore.NoStream, e.events("short", "Short.v1", 3)...)
	for _, from := range []uint64{3, 4, 100} {
		got, err := e.store.ReadStream(e.ctx, stream, eventstore.Exact(from), 0)
		if err != nil || len(got) != 0 {
			e.t.Errorf("ReadStream(existing stream of 3, from %d): %d events, err %v; want none and no error", from, len(got), err)
		}
	}
}

func testReadMissingStream(e *env) {
	stream := e.stream("missing")
	for _, from := range []eventstore.Revision{eventstore.Start, eventstore.Exact(5)} {
		for _, max := range []int{0, 1} {
			got, err := e.store.ReadStream(e.ctx, stream, from, max)
			if !errors.Is(err, eventstore.ErrStreamNotFound) {
				e.t.Errorf("ReadStream(missing, from %v, max %d): %d events, err %v; want ErrStreamNotFound", from, max, len(got), err)
			}
		}
	}
}

// testStreamNamesSharingPrefixes guards against key encodings where one
// stream's name is a prefix of another's.
func testStreamNamesSharingPrefixes(e *env) {
	names := []string{"s", "s1", "s10", "s-1", "s-", "s/1", "s 1", "sé", "s~", "S"}
	want := make(map[string][]eventstore.EventData)
	for i, n := range names {
		stream := e.stream(n)
		evs := e.events(fmt.Sprintf("prefix-%d", i), "Prefix.v1", i%3+1)
		e.mustAppend(stream, eventstore.NoStream, evs...)
		want[stream] = evs
	}
	for _, n := range names {
		stream := e.stream(n)
		got := e.read(stream, eventstore.Start, 0)
		e.checkRecorded(got, stream, 0, want[stream], time.Time{}, time.Now())
	}
	e.requireNoStream(e.stream("s0"))
	e.requireNoStream(strings.TrimSuffix(e.ns, "-"))
}

var expectedRevisionTests = []test{
	{"Any", testExpectAny},
	{"NoStream", testExpectNoStream},
	{"StreamExists", testExpectStreamExists},
	{"Exact", testExpectExact},
	{"FailedAppendWritesNothing", testFailedAppendWritesNothing},
}

func testExpectAny(e *env) {
	stream := e.stream("any")
	r1 := e.mustAppend(stream, eventstore.Any, e.event("any-1", "Any.v1"))
	r2 := e.mustAppend(stream, eventstore.Any, e.events("any-2", "Any.v1", 2)...)
	if r1.NextExpected != 0 || r2.NextExpected != 2 {
		e.t.Errorf("NextExpected %d then %d, want 0 then 2", r1.NextExpected, r2.NextExpected)
	}
	if !r2.Position.After(r1.Position) {
		e.t.Errorf("second append's Position %v not after the first's %v", r2.Position, r1.Position)
	}
	e.checkRecorded(e.read(stream, eventstore.Start, 0), stream, 0,
		append([]eventstore.EventData{e.event("any-1", "Any.v1")}, e.events("any-2", "Any.v1", 2)...), time.Time{}, time.Now())
}

func testExpectNoStream(e *env) {
	stream := e.stream("nostream")
	ev := e.event("ns-1", "NoStream.v1")
	if r := e.mustAppend(stream, eventstore.NoStream, ev); r.NextExpected != 0 {
		e.t.Errorf("NextExpected %d, want 0", r.NextExpected)
	}
	_, err := e.store.Append(e.ctx, stream, eventstore.NoStream, e.event("ns-2", "NoStream.v1"))
	requireWrongRevision(e.t, err, stream, eventstore.NoStream, eventstore.Exact(0))
	e.checkRecorded(e.read(stream, eventstore.Start, 0), stream, 0, []eventstore.EventData{ev}, time.Time{}, time.Now())
}

func testExpectStreamExists(e *env) {
	stream := e.stream("exists")
	_, err := e.store.Append(e.ctx, stream, eventstore.StreamExists, e.event("ex-0", "Exists.v1"))
	requireWrongRevision(e.t, err, stream, eventstore.StreamExists, eventstore.NoStream)
	e.requireNoStream(stream)

	first := e.event("ex-1", "Exists.v1")
	e.mustAppend(stream, eventstore.NoStream, first)
	second := e.event("ex-2", "Exists.v1")
	if r := e.mustAppend(stream, eventstore.StreamExists, second); r.NextExpected != 1 {
		e.t.Errorf("NextExpected %d, want 1", r.NextExpected)
	}
	e.checkRecorded(e.read(stream, eventstore.Start, 0), stream, 0, []eventstore.EventData{first, second}, time.Time{}, time.Now())
}

func testExpectExact(e *env) {
	stream := e.stream("exact")
	_, err := e.store.Append(e.ctx, stream, eventstore.Exact(0), e.event("exact-x", "Exact.v1"))
	requireWrongRevision(e.t, err, stream, eventstore.Exact(0), eventstore.NoStream)
	e.requireNoStream(stream)

	evs := e.events("exact-1", "Exact.v1", 3)
	e.mustAppend(stream, eventstore.NoStream, evs...)
	more := e.event("exact-2", "Exact.v1")
	if r := e.mustAppend(stream, eventstore.Exact(2), more); r.NextExpected != 3 {
		e.t.Errorf("NextExpected %d, want 3", r.NextExpected)
	}
	for _, stale := range []uint64{0, 2, 4, 100} {
		_, err := e.store.Append(e.ctx, stream, eventstore.Exact(stale), e.event(fmt.Sprintf("exact-stale-%d", stale), "Exact.v1"))
		requireWrongRevision(e.t, err, stream, eventstore.Exact(stale), eventstore.Exact(3))
	}
	e.checkRecorded(e.read(stream, eventstore.Start, 0), stream, 0, append(evs, more), time.Time{}, time.Now())
}

// testFailedAppendWritesNothing makes appends fail in every way an
// expectation can, then checks the streams and the global log: a sentinel
// appended last must directly follow the successful events.
func testFailedAppendWritesNothing(e *env) {
	existing, missing, sentinelStream := e.stream("existing"), e.stream("missing"), e.stream("sentinel")
	ok := e.events("ok", "Ok.v1", 2)
	e.mustAppend(existing, eventstore.NoStream, ok...)
	want := e.read(existing, eventstore.Start, 0)

	failing := []struct {
		stream string
		expect eventstore.Revision
		actual eventstore.Revision
	}{
		{existing, eventstore.NoStream, eventstore.Exact(1)},
		{existing, eventstore.Exact(0), eventstore.Exact(1)},
		{existing, eventstore.Exact(7), eventstore.Exact(1)},
		{missing, eventstore.StreamExists, eventstore.NoStream},
		{missing, eventstore.Exact(0), eventstore.NoStream},
	}
	for i, f := range failing {
		_, err := e.store.Append(e.ctx, f.stream, f.expect, e.events(fmt.Sprintf("failing-%d", i), "Failing.v1", 3)...)
		requireWrongRevision(e.t, err, f.stream, f.expect, f.actual)
	}
	e.requireStream(existing, want)
	e.requireNoStream(missing)

	sentinel := e.event("sentinel", "Sentinel.v1")
	e.mustAppend(sentinelStream, eventstore.NoStream, sentinel)
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns}})
	r.waitFor(sentinel.ID, waitTimeout)
	want = append(want, e.read(sentinelStream, eventstore.Start, 0)...)
	requireSameEvents(e.t, "subscription", r.events, want)
}

// invalidAppendTests returns one test per kind of malformed append. Each
// must fail with ErrInvalidAppend and write nothing.
func invalidAppendTests() []test {
	type invalid struct {
		name   string
		stream func(e *env) string
		events func(e *env) []eventstore.EventData
	}
	valid := func(e *env) []eventstore.EventData { return e.events("valid", "Valid.v1", 2) }
	named := func(name string) func(e *env) string {
		return func(e *env) string { return e.stream(name) }
	}
	cases := []invalid{
		{"EmptyStreamName", func(*env) string { return "" }, valid},
		{"SystemStream", func(e *env) string { return "$" + e.stream("system") }, valid},
		{"NULInStreamName", func(e *env) string { return e.stream("nul\x00name") }, valid},
		{"StreamNameTooLong", func(e *env) string { return e.stream(strings.Repeat("x", 1025)) }, valid},
		{"NoEvents", named("noevents"), func(*env) []eventstore.EventData { return nil }},
		{"ZeroID", named("zeroid"), func(e *env) []eventstore.EventData {
			evs := valid(e)
			evs[1].ID = eventstore.EventID{}
			return evs
		}},
		{"EmptyType", named("emptytype"), func(e *env) []eventstore.EventData {
			evs := valid(e)
			evs[1].Type = ""
			return evs
		}},
		{"RepeatedID", named("repeated"), func(e *env) []eventstore.EventData {
			evs := valid(e)
			evs[1].ID = evs[0].ID
			return evs
		}},
	}
	tests := make([]test, 0, len(cases))
	for _, c := range cases {
		tests = append(tests, test{c.name, func(e *env) {
			stream, evs := c.stream(e), c.events(e)
			for _, expect := range []eventstore.Revision{eventstore.Any, eventstore.NoStream} {
				_, err := e.store.Append(e.ctx, stream, expect, evs...)
				if !errors.Is(err, eventstore.ErrInvalidAppend) {
					e.t.Fatalf("Append(%q, %v, %d events): err %v, want ErrInvalidAppend", stream, expect, len(evs), err)
				}
			}
			if eventstore.ValidateStreamName(stream) == nil {
				e.requireNoStream(stream)
			}
			// The IDs of a rejected append were not stored: a valid append
			// with them succeeds.
			if len(evs) > 0 && !evs[0].ID.IsZero() {
				e.mustAppend(e.stream("after-invalid"), eventstore.NoStream, valid(e)...)
			}
		}})
	}
	return tests
}

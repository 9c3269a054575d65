package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"tvsm/eventstore"
)

// multiAppendTests check eventstore.MultiAppender; Run adds them when
// Features.MultiAppend is set.
func multiAppendTests(f Features) []test {
	tests := []test{
		{"TwoStreams", testMultiTwoStreams},
		{"PartsInGivenOrder", testMultiPartsInGivenOrder},
		{"FailedExpectationWritesNothing", testMultiFailedExpectation},
		{"Retry", testMultiRetry},
		{"ConcurrentRetries", testMultiConcurrentRetries},
		{"PartialRetry", testMultiPartialRetry},
		{"ConcurrentReservation", testMultiConcurrentReservation},
		{"LiveSubscription", testMultiLiveSubscription},
	}
	tests = append(tests, invalidMultiAppendTests()...)
	if f.Reopen != nil {
		tests = append(tests, test{"SurvivesReopen", testMultiSurvivesReopen})
	}
	return tests
}

// multi returns the store as a MultiAppender, which Features.MultiAppend
// promises.
func (e *env) multi() eventstore.MultiAppender {
	e.t.Helper()
	m, ok := e.store.(eventstore.MultiAppender)
	if !ok {
		e.t.Fatalf("Features.MultiAppend is set, but %T does not implement eventstore.MultiAppender", e.store)
	}
	return m
}

// part is a part of a multi-stream append: n new events keyed key, to the
// test's stream called name.
func (e *env) part(name string, expect eventstore.Revision, key string, n int) eventstore.StreamAppend {
	return eventstore.StreamAppend{Stream: e.stream(name), Expect: expect, Events: e.events(key, "Multi.v1", n)}
}

// mustAppendMulti appends and fails the test on error.
func (e *env) mustAppendMulti(parts ...eventstore.StreamAppend) []eventstore.AppendResult {
	e.t.Helper()
	res, err := e.multi().AppendMulti(e.ctx, parts...)
	if err != nil {
		e.t.Fatalf("AppendMulti(%s): %v", describeParts(parts), err)
	}
	if len(res) != len(parts) {
		e.t.Fatalf("AppendMulti(%s): %d results for %d parts", describeParts(parts), len(res), len(parts))
	}
	return res
}

func describeParts(parts []eventstore.StreamAppend) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprintf("%q expect %v, %d events", p.Stream, p.Expect, len(p.Events))
	}
	return strings.Join(s, "; ")
}

// checkMulti checks a multi-stream append that landed: each part's events
// in its stream from revision firsts[i], recorded within [before, after],
// each part's result, and all events in one run of the global log, part
// after part. It returns the appended events in log order.
func (e *env) checkMulti(parts []eventstore.StreamAppend, res []eventstore.AppendResult, firsts []uint64, before, after time.Time) []eventstore.RecordedEvent {
	e.t.Helper()
	var all []eventstore.RecordedEvent
	for i, p := range parts {
		got := e.read(p.Stream, eventstore.Exact(firsts[i]), len(p.Events))
		e.checkRecorded(got, p.Stream, firsts[i], p.Events, before, after)
		last := got[len(got)-1]
		if want := (eventstore.AppendResult{NextExpected: last.Revision, Position: last.Position}); res[i] != want {
			e.t.Errorf("part %d (%q): result %+v, want %+v (its last event)", i, p.Stream, res[i], want)
		}
		all = append(all, got...)
	}
	for i := 1; i < len(all); i++ {
		if !all[i].Position.After(all[i-1].Position) {
			e.t.Fatalf("event %d (%s) at %v is not after event %d (%s) at %v: parts not stored in the order given",
				i, all[i].Stream, all[i].Position, i-1, all[i-1].Stream, all[i-1].Position)
		}
		if e.f.DensePositions && all[i].Position.Commit != all[i-1].Position.Commit+1 {
			e.t.Fatalf("event %d (%s) at %v does not directly follow event %d at %v",
				i, all[i].Stream, all[i].Position, i-1, all[i-1].Position)
		}
	}
	e.requireOneRun(all)
	return all
}

// requireOneRun reads the whole log through an unfiltered subscription and
// checks that want's events are in it one after another, nobody's event
// between them.
func (e *env) requireOneRun(want []eventstore.RecordedEvent) {
	e.t.Helper()
	sub, err := e.store.SubscribeAll(e.ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		e.t.Fatalf("SubscribeAll: %v", err)
	}
	defer sub.Close()
	deadline := time.Now().Add(waitTimeout)
	run := 0 // how many of want were delivered so far, in a row
	for run < len(want) {
		b, err := recvWithin(e.ctx, sub, time.Until(deadline))
		if err != nil {
			e.t.Fatalf("reading the log for the %d events of a multi-stream append (found %d in a row): %v", len(want), run, err)
		}
		for _, ev := range b.Events {
			switch {
			case run < len(want) && ev.ID == want[run].ID:
				if d := diffEvent(ev, want[run]); d != "" {
					e.t.Fatalf("log event %v: %s", ev.ID, d)
				}
				run++
			case run > 0 && run < len(want):
				e.t.Fatalf("the log has %s rev %d (%v) between events %d and %d of one multi-stream append",
					ev.Stream, ev.Revision, ev.Position, run-1, run)
			}
		}
		if b.CaughtUp && run < len(want) {
			e.t.Fatalf("the log holds only %d of the %d events of a multi-stream append in a row", run, len(want))
		}
	}
}

func testMultiTwoStreams(e *env) {
	e.mustAppend(e.stream("other"), eventstore.NoStream, e.event("other", "Other.v1"))
	e.mustAppend(e.stream("account"), eventstore.NoStream, e.event("created", "Created.v1"))
	parts := []eventstore.StreamAppend{
		e.part("account", eventstore.Exact(0), "account", 2),
		e.part("login-x", eventstore.NoStream, "login", 1),
	}
	before := time.Now()
	res := e.mustAppendMulti(parts...)
	e.checkMulti(parts, res, []uint64{1, 0}, before, time.Now())
}

// testMultiPartsInGivenOrder appends three parts in an order other than
// the one their streams were created in and with every kind of expectation.
func testMultiPartsInGivenOrder(e *env) {
	e.mustAppend(e.stream("a"), eventstore.NoStream, e.events("a", "A.v1", 2)...)
	e.mustAppend(e.stream("b"), eventstore.NoStream, e.event("b", "B.v1"))
	parts := []eventstore.StreamAppend{
		e.part("c", eventstore.NoStream, "c", 1),
		e.part("b", eventstore.StreamExists, "b2", 3),
		e.part("a", eventstore.Exact(1), "a2", 2),
		e.part("d", eventstore.Any, "d", 1),
	}
	before := time.Now()
	res := e.mustAppendMulti(parts...)
	e.checkMulti(parts, res, []uint64{0, 1, 2, 0}, before, time.Now())

	// And once more on the same streams.
	again := []eventstore.StreamAppend{
		e.part("a", eventstore.Exact(res[2].NextExpected), "a3", 1),
		e.part("d", eventstore.Exact(res[3].NextExpected), "d2", 2),
	}
	before = time.Now()
	res = e.mustAppendMulti(again...)
	e.checkMulti(again, res, []uint64{4, 1}, before, time.Now())
}

// testMultiFailedExpectation fails one part's expectation, in every place
// of the parts: nothing of any part is written, the events' IDs stay free,
// and the log goes on as if the appends had not been tried.
func testMultiFailedExpectation(e *env) {
	taken := e.stream("login-taken")
	e.mustAppend(taken, eventstore.NoStream, e.event("taken", "Reserved.v1"))
	want := e.read(taken, eventstore.Start, 0)

	cases := []struct {
		parts  []eventstore.StreamAppend
		failed int // index of the failing part
		actual eventstore.Revision
	}{
		{[]eventstore.StreamAppend{e.part("account-1", eventstore.NoStream, "f1-a", 2), e.part("login-taken", eventstore.NoStream, "f1-l", 1)}, 1, eventstore.Exact(0)},
		{[]eventstore.StreamAppend{e.part("login-taken", eventstore.Exact(5), "f2-l", 1), e.part("account-2", eventstore.NoStream, "f2-a", 2)}, 0, eventstore.Exact(0)},
		{[]eventstore.StreamAppend{e.part("account-3", eventstore.Any, "f3-a", 1), e.part("missing", eventstore.StreamExists, "f3-m", 1)}, 1, eventstore.NoStream},
		{[]eventstore.StreamAppend{
			e.part("account-4", eventstore.NoStream, "f4-a", 1), e.part("missing", eventstore.Exact(0), "f4-m", 2), e.part("account-5", eventstore.Any, "f4-b", 1),
		}, 1, eventstore.NoStream},
	}
	for _, c := range cases {
		_, err := e.multi().AppendMulti(e.ctx, c.parts...)
		f := c.parts[c.failed]
		requireWrongRevision(e.t, err, f.Stream, f.Expect, c.actual)
	}
	e.requireStream(taken, want)
	for _, name := range []string{"account-1", "account-2", "account-3", "account-4", "account-5", "missing"} {
		e.requireNoStream(e.stream(name))
	}

	// The log goes on right after the taken reservation: a sentinel follows
	// it, and the events of the failed appends are new when appended alone.
	sentinel := e.event("sentinel", "Sentinel.v1")
	res := e.mustAppend(e.stream("sentinel"), eventstore.NoStream, sentinel)
	if e.f.DensePositions && !e.f.Shared && res.Position.Commit != want[0].Position.Commit+1 {
		e.t.Fatalf("sentinel at %v, want right after the reservation at %v: the failed appends took positions", res.Position, want[0].Position)
	}
	r := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns}})
	r.waitFor(sentinel.ID, waitTimeout)
	requireSameEvents(e.t, "subscription", r.events, append(want, e.read(e.stream("sentinel"), eventstore.Start, 0)...))
	first := cases[0].parts[0]
	if again := e.mustAppend(first.Stream, eventstore.NoStream, first.Events...); !again.Position.After(res.Position) {
		e.t.Fatalf("events of a failed multi-stream append, appended alone, land at %v, before the sentinel at %v", again.Position, res.Position)
	}
}

// testMultiRetry repeats a multi-stream append: with the same expectations,
// with Any, and after later appends to its streams. Each is a no-op
// answered with the original results.
func testMultiRetry(e *env) {
	parts := []eventstore.StreamAppend{
		e.part("login-x", eventstore.NoStream, "login", 1),
		e.part("account", eventstore.NoStream, "account", 3),
	}
	res := e.mustAppendMulti(parts...)
	streams := []string{parts[0].Stream, parts[1].Stream}
	log := e.readAll(streams...)

	e.requireMultiRetry(parts, res)
	e.requireMultiRetry(parts, res)
	anyParts := slices.Clone(parts)
	for i := range anyParts {
		anyParts[i].Expect = eventstore.Any
	}
	e.requireMultiRetry(anyParts, res)
	e.requireLog(streams, log)

	e.mustAppend(parts[1].Stream, eventstore.Exact(res[1].NextExpected), e.event("later", "Later.v1"))
	log = e.readAll(streams...)
	e.requireMultiRetry(parts, res)
	e.requireMultiRetry(anyParts, res)
	e.requireLog(streams, log)
}

func (e *env) requireMultiRetry(parts []eventstore.StreamAppend, want []eventstore.AppendResult) {
	e.t.Helper()
	got, err := e.multi().AppendMulti(e.ctx, parts...)
	if err != nil {
		e.t.Fatalf("retry of AppendMulti(%s): %v; want the original results", describeParts(parts), err)
	}
	if !slices.Equal(got, want) {
		e.t.Fatalf("retry of AppendMulti(%s): results %+v, want the original %+v", describeParts(parts), got, want)
	}
}

// appendMultiAtOnce sends the multi-stream appends from one goroutine each,
// released together, and returns their results and errors.
func (e *env) appendMultiAtOnce(appends [][]eventstore.StreamAppend) ([][]eventstore.AppendResult, []error) {
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		results = make([][]eventstore.AppendResult, len(appends))
		errs    = make([]error, len(appends))
	)
	m := e.multi()
	for i, parts := range appends {
		wg.Go(func() {
			<-start
			results[i], errs[i] = m.AppendMulti(e.ctx, parts...)
		})
	}
	close(start)
	wg.Wait()
	return results, errs
}

// testMultiConcurrentRetries sends the same multi-stream append from 16
// goroutines at once: all get the same results and the events are stored
// once.
func testMultiConcurrentRetries(e *env) {
	const senders = 16
	parts := []eventstore.StreamAppend{
		e.part("login-x", eventstore.NoStream, "login", 1),
		e.part("account", eventstore.NoStream, "account", 2),
	}
	before := time.Now()
	results, errs := e.appendMultiAtOnce(slices.Repeat([][]eventstore.StreamAppend{parts}, senders))
	after := time.Now()
	for s := range senders {
		if errs[s] != nil {
			e.t.Fatalf("sender %d: %v; want success (a retry)", s, errs[s])
		}
		if !slices.Equal(results[s], results[0]) {
			e.t.Fatalf("sender %d got %+v, sender 0 got %+v", s, results[s], results[0])
		}
	}
	all := e.checkMulti(parts, results[0], []uint64{0, 0}, before, after)
	e.requireLog([]string{parts[0].Stream, parts[1].Stream}, all)
}

// testMultiPartialRetry sends multi-stream appends of which some parts are
// stored appends and others are new: not a retry, so they fail with
// ErrDuplicateEventID and write nothing. Whether the stored parts were
// stored together does not matter.
func testMultiPartialRetry(e *env) {
	login := e.part("login-x", eventstore.NoStream, "login", 1)
	account := e.part("account", eventstore.NoStream, "account", 2)
	res := e.mustAppendMulti(login, account)
	solo := e.part("solo", eventstore.NoStream, "solo", 2)
	soloRes := e.mustAppend(solo.Stream, solo.Expect, solo.Events...)
	streams := []string{login.Stream, account.Stream, solo.Stream}
	log := e.readAll(streams...)

	fresh := func(i int) eventstore.StreamAppend {
		return e.part(fmt.Sprintf("new-%d", i), eventstore.NoStream, fmt.Sprintf("new-%d", i), 1)
	}
	cases := [][]eventstore.StreamAppend{
		{account, fresh(0)},
		{fresh(1), login},
		{solo, fresh(2)},
		{login, account, fresh(3)},
		{login, solo, fresh(4)},
	}
	for i, parts := range cases {
		_, err := e.multi().AppendMulti(e.ctx, parts...)
		if !errors.Is(err, eventstore.ErrDuplicateEventID) {
			e.t.Fatalf("case %d: AppendMulti(%s) of stored and new parts: err %v, want ErrDuplicateEventID", i, describeParts(parts), err)
		}
	}
	for i := range len(cases) {
		e.requireNoStream(e.stream(fmt.Sprintf("new-%d", i)))
		streams = append(streams, e.stream(fmt.Sprintf("new-%d", i)))
	}
	// Parts that are all stored appends, though not stored together, are
	// a retry all the same.
	e.requireMultiRetry([]eventstore.StreamAppend{solo, login}, []eventstore.AppendResult{soloRes, res[0]})
	e.requireLog(streams, log)
}

// testMultiConcurrentReservation has 16 goroutines at once take the same
// reservation stream together with an account stream of their own (half of
// them naming the reservation first), round after round: exactly one wins
// each round, and the losers wrote nothing.
func testMultiConcurrentReservation(e *env) {
	const writers, rounds = 16, 5
	for round := range rounds {
		login := fmt.Sprintf("login-%d", round)
		parts := make([][]eventstore.StreamAppend, writers)
		for w := range writers {
			parts[w] = []eventstore.StreamAppend{
				e.part(login, eventstore.NoStream, fmt.Sprintf("%s-by-%d", login, w), 1),
				e.part(fmt.Sprintf("account-%d-%d", round, w), eventstore.NoStream, fmt.Sprintf("account-%d-%d", round, w), 2),
			}
			if w%2 == 1 { // the reservation second: its failure must undo the account
				slices.Reverse(parts[w])
			}
		}
		results, errs := e.appendMultiAtOnce(parts)

		winner := -1
		for w, err := range errs {
			if err == nil {
				if winner >= 0 {
					e.t.Fatalf("round %d: writers %d and %d both took %s with NoStream", round, winner, w, login)
				}
				winner = w
				continue
			}
			requireWrongRevision(e.t, err, e.stream(login), eventstore.NoStream, eventstore.Exact(0))
		}
		if winner < 0 {
			e.t.Fatalf("round %d: no writer succeeded", round)
		}
		e.checkMulti(parts[winner], results[winner], []uint64{0, 0}, time.Time{}, time.Now())
		for w := range writers {
			if w != winner {
				e.requireNoStream(e.stream(fmt.Sprintf("account-%d-%d", round, w)))
			}
		}
	}
}

// testMultiLiveSubscription appends to several streams at once while
// subscriptions are live: all parts arrive, in order, and a filter selects
// among them by stream.
func testMultiLiveSubscription(e *env) {
	e.mustAppend(e.stream("stored"), eventstore.NoStream, e.events("stored", "Stored.v1", 2)...)
	all := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.ns}})
	logins := e.subscribe(eventstore.Beginning, eventstore.Filter{StreamPrefixes: []string{e.stream("login-")}})
	all.waitCaughtUp()
	logins.waitCaughtUp()

	var streams []string
	for i := range 3 {
		parts := []eventstore.StreamAppend{
			e.part(fmt.Sprintf("account-%d", i), eventstore.NoStream, fmt.Sprintf("account-%d", i), i+1),
			e.part(fmt.Sprintf("login-%d", i), eventstore.NoStream, fmt.Sprintf("login-%d", i), 1),
		}
		e.mustAppendMulti(parts...)
		all.waitFor(parts[1].Events[0].ID, liveTimeout)
		logins.waitFor(parts[1].Events[0].ID, liveTimeout)
		streams = append(streams, parts[0].Stream, parts[1].Stream)
	}
	requireSameEvents(e.t, "subscription to the test's streams", all.events, e.readAll(append(streams, e.stream("stored"))...))
	requireSameEvents(e.t, "subscription to the login streams", logins.events,
		e.readAll(e.stream("login-0"), e.stream("login-1"), e.stream("login-2")))
}

// testMultiSurvivesReopen reopens the store after a multi-stream append:
// both parts are there, a retry is still a no-op, and the closed store
// refuses multi-stream appends.
func testMultiSurvivesReopen(e *env) {
	parts := []eventstore.StreamAppend{
		e.part("login-x", eventstore.NoStream, "login", 1),
		e.part("account", eventstore.NoStream, "account", 2),
	}
	res := e.mustAppendMulti(parts...)
	streams := []string{parts[0].Stream, parts[1].Stream}
	log := e.readAll(streams...)
	old := e.multi()
	e.reopen()

	_, err := old.AppendMulti(e.ctx, e.part("late-1", eventstore.Any, "late-1", 1), e.part("late-2", eventstore.Any, "late-2", 1))
	if !errors.Is(err, eventstore.ErrClosed) {
		e.t.Errorf("AppendMulti on a closed store: err %v, want ErrClosed", err)
	}
	e.requireMultiRetry(parts, res)
	e.requireLog(append(streams, e.stream("late-1"), e.stream("late-2")), log)
}

// invalidMultiAppendTests returns one test per kind of malformed
// multi-stream append: each fails with ErrInvalidAppend and writes nothing,
// not even its valid first part.
func invalidMultiAppendTests() []test {
	valid := func(e *env) eventstore.StreamAppend { return e.part("valid", eventstore.NoStream, "valid", 2) }
	second := func(change func(e *env, p *eventstore.StreamAppend)) func(e *env) []eventstore.StreamAppend {
		return func(e *env) []eventstore.StreamAppend {
			p := e.part("second", eventstore.Any, "second", 2)
			change(e, &p)
			return []eventstore.StreamAppend{valid(e), p}
		}
	}
	cases := []struct {
		name  string
		parts func(e *env) []eventstore.StreamAppend
	}{
		{"NoParts", func(*env) []eventstore.StreamAppend { return nil }},
		{"PartWithoutEvents", second(func(_ *env, p *eventstore.StreamAppend) { p.Events = nil })},
		{"SameStreamTwice", second(func(e *env, p *eventstore.StreamAppend) { p.Stream = e.stream("valid") })},
		{"EmptyStreamName", second(func(_ *env, p *eventstore.StreamAppend) { p.Stream = "" })},
		{"SystemStream", second(func(_ *env, p *eventstore.StreamAppend) { p.Stream = "$" + p.Stream })},
		{"NULInStreamName", second(func(_ *env, p *eventstore.StreamAppend) { p.Stream += "\x00" })},
		{"StreamNameTooLong", second(func(_ *env, p *eventstore.StreamAppend) { p.Stream += strings.Repeat("x", 1025) })},
		{"ZeroID", second(func(_ *env, p *eventstore.StreamAppend) { p.Events[1].ID = eventstore.EventID{} })},
		{"EmptyType", second(func(_ *env, p *eventstore.StreamAppend) { p.Events[1].Type = "" })},
		{"RepeatedIDInPart", second(func(_ *env, p *eventstore.StreamAppend) { p.Events[1].ID = p.Events[0].ID })},
		{"SameIDInTwoParts", second(func(e *env, p *eventstore.StreamAppend) { p.Events[1].ID = valid(e).Events[0].ID })},
	}
	tests := make([]test, 0, len(cases))
	for _, c := range cases {
		tests = append(tests, test{"Invalid" + c.name, func(e *env) {
			parts := c.parts(e)
			if _, err := e.multi().AppendMulti(e.ctx, parts...); !errors.Is(err, eventstore.ErrInvalidAppend) {
				e.t.Fatalf("AppendMulti(%s): err %v, want ErrInvalidAppend", describeParts(parts), err)
			}
			e.requireNoStream(e.stream("valid"))
			e.requireNoStream(e.stream("second"))
			// The valid part's IDs were not stored: appended alone, it is new.
			v := valid(e)
			e.checkMulti([]eventstore.StreamAppend{v}, e.mustAppendMulti(v), []uint64{0}, time.Time{}, time.Now())
		}})
	}
	return tests
}

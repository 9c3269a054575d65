package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// matches reports whether go test's -run pattern selects test name: each
// slash-separated part of the pattern must match the name's part at that
// level, as go test splits them.
func matches(pattern, name string) bool {
	pats, parts := strings.Split(pattern, "/"), strings.Split(name, "/")
	for i, p := range parts {
		if i < len(pats) && !regexp.MustCompile(pats[i]).MatchString(p) {
			return false
		}
	}
	return true
}

func TestRunPatternSelectsExactlyTheNames(t *testing.T) {
	p := runPattern(selected)
	for _, name := range selected {
		if !matches(p, name) {
			t.Errorf("pattern %q does not select %s", p, name)
		}
	}
	for _, other := range []string{
		"TestPersistentSubscriptions",
		"TestStreams/AppendTests/appendToSystemStreamWithIncorrectCredentials",
		"TestStreams/ReadStreamTests/readStreamEventsForwardsFromZeroPosition",
		"TestStreams/SubscriptionTests/subscriptionAllFilterX",
		"TestStreams/AuthenticationTests/callInsecureWithoutCredentials",
		"TestStreamsX/DeleteTests/canDeleteStream",
	} {
		if matches(p, other) {
			t.Errorf("pattern %q selects %s", p, other)
		}
	}
	if got := runPattern([]string{"TestA/b.c"}); got != `^(TestA)$/^(b\.c)$` {
		t.Errorf("runPattern quotes %q", got)
	}
}

const goTestJSON = `{"Action":"run","Test":"TestStreams"}
{"Action":"run","Test":"TestStreams/G"}
{"Action":"run","Test":"TestStreams/G/ok"}
{"Action":"pass","Test":"TestStreams/G/ok","Elapsed":0.5}
{"Action":"run","Test":"TestStreams/G/bad"}
{"Action":"output","Test":"TestStreams/G/bad","Output":"    x_test.go:1: want 1, got 2\n"}
{"Action":"fail","Test":"TestStreams/G/bad","Elapsed":0}
{"Action":"run","Test":"TestStreams/G/skipped"}
{"Action":"skip","Test":"TestStreams/G/skipped","Elapsed":0}
{"Action":"run","Test":"TestStreams/G/extra"}
{"Action":"pass","Test":"TestStreams/G/extra","Elapsed":0}
{"Action":"output","Test":"TestStreams/G","Output":"=== RUN   TestStreams/G/extra\n"}
{"Action":"output","Test":"TestStreams/G","Output":"panic: runtime error: nil pointer dereference\n"}
{"Action":"fail","Test":"TestStreams/G","Elapsed":0.5}
{"Action":"fail","Test":"TestStreams","Elapsed":0.5}
{"Action":"fail","Elapsed":0.6}
`

// TestReportCountsWhatDidNotPass: a selected test that failed, skipped or
// did not run counts as failed, with the failure's output; a test that
// ran without being selected is named; what a failed parent printed itself
// (a subtest's panic) is shown.
func TestReportCountsWhatDidNotPass(t *testing.T) {
	var out strings.Builder
	res, err := readResults(strings.NewReader(goTestJSON), &out, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"TestStreams/G/ok", "TestStreams/G/bad", "TestStreams/G/skipped", "TestStreams/G/gone"}
	if failed := res.report(&out, want, time.Second); failed != 3 {
		t.Errorf("failed %d, want 3 (bad, skipped, gone)", failed)
	}
	for _, line := range []string{
		"PASS TestStreams/G/ok (0.50s)",
		"FAIL TestStreams/G/bad\n    x_test.go:1: want 1, got 2",
		"SKIP TestStreams/G/skipped",
		"MISSING TestStreams/G/gone",
		"also ran: TestStreams/G/extra: pass",
		"FAIL TestStreams/G, outside its subtests:\npanic: runtime error: nil pointer dereference\n",
		"esdb-client-tests: 1 passed, 3 failed in 1s",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, out.String())
		}
	}
}

// TestReportFailsABuildFailure: a package that fails without running a
// test (it did not build) fails the run with its output.
func TestReportFailsABuildFailure(t *testing.T) {
	var out strings.Builder
	res, err := readResults(strings.NewReader(`# github.com/x/esdb_test
esdb/x_test.go:3:2: undefined: CreateThing
{"Action":"output","Output":"FAIL\tgithub.com/x/esdb [build failed]\n"}
{"Action":"fail","Elapsed":0}
`), &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if failed := res.report(&out, nil, time.Second); failed != 1 {
		t.Errorf("failed %d, want 1", failed)
	}
	for _, line := range []string{"undefined: CreateThing", "[build failed]", "0 passed, 1 failed"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, out.String())
		}
	}
}

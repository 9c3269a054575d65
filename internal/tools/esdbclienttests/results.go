package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
)

// selected are the client's tests of what the double serves, by their
// full names; all must pass. The client's other tests are left out, each
// for a reason docs/eventstore.md lists: they need EventStoreDB's test data
// set (a Docker image), TLS and users, a cluster, persistent subscriptions,
// projections, subscriptions to one stream, or no server at all.
var selected = []string{
	"TestStreams/AppendTests/appendToStreamSingleEventNoStream",
	"TestStreams/AppendTests/appendWithInvalidStreamRevision",
	"TestStreams/AppendTests/metadataOperation",
	"TestStreams/ReadStreamTests/readStreamReturnsEOFAfterCompletion",
	"TestStreams/ReadStreamTests/readStreamNotFound",
	"TestStreams/ReadStreamTests/readStreamWithMaxAge",
	"TestStreams/SubscriptionTests/subscriptionAllFilter",
	"TestStreams/DeleteTests/canDeleteStream",
	"TestStreams/DeleteTests/canTombstoneStream",
	"TestStreams/DeleteTests/detectStreamDeleted",
	"TestStreams/ConnectionTests/closeConnection",
}

// runPattern is the -run pattern selecting exactly names, which must all
// have the same depth: per level, the names at that level, anchored. (It
// also selects a name at one level under a parent of another name, which
// the client's tests do not have: their subtest names are unique.)
func runPattern(names []string) string {
	var levels [][]string
	for _, n := range names {
		for i, part := range strings.Split(n, "/") {
			if i == len(levels) {
				levels = append(levels, nil)
			}
			if !slices.Contains(levels[i], part) {
				levels[i] = append(levels[i], part)
			}
		}
	}
	parts := make([]string, len(levels))
	for i, level := range levels {
		quoted := make([]string, len(level))
		for j, p := range level {
			quoted[j] = regexp.QuoteMeta(p)
		}
		parts[i] = "^(" + strings.Join(quoted, "|") + ")$"
	}
	return strings.Join(parts, "/")
}

// testEvent is a line of go test -json.
type testEvent struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// results is what go test reported, per test ("" for the package).
type results struct {
	order   []string
	outcome map[string]string // pass, fail, skip; "" while running
	elapsed map[string]float64
	output  map[string]*strings.Builder
}

// readResults reads go test -json from r; with verbose it prints every
// output line as it comes.
func readResults(r io.Reader, w io.Writer, verbose bool) (*results, error) {
	res := &results{outcome: map[string]string{}, elapsed: map[string]float64{}, output: map[string]*strings.Builder{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e testEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// go test prints build failures as plain text.
			fmt.Fprintln(w, sc.Text())
			continue
		}
		if _, seen := res.output[e.Test]; !seen {
			res.order = append(res.order, e.Test)
			res.output[e.Test] = &strings.Builder{}
		}
		switch e.Action {
		case "output":
			res.output[e.Test].WriteString(e.Output)
			if verbose {
				fmt.Fprint(w, e.Output)
			}
		case "pass", "fail", "skip":
			res.outcome[e.Test] = e.Action
			res.elapsed[e.Test] = e.Elapsed
		}
	}
	return res, sc.Err()
}

// report prints a line per test of want and the output of those that did
// not pass, a line per other test that ran, and a closing count; it
// returns how many of want did not pass (missing, skipped or failed).
func (res *results) report(w io.Writer, want []string, took time.Duration) int {
	failed := 0
	for _, name := range want {
		switch res.outcome[name] {
		case "pass":
			fmt.Fprintf(w, "PASS %s (%.2fs)\n", name, res.elapsed[name])
		case "":
			failed++
			fmt.Fprintf(w, "MISSING %s: it did not run (the test binary ended before it, or this client version renamed it)\n", name)
		default:
			failed++
			fmt.Fprintf(w, "%s %s\n%s", strings.ToUpper(res.outcome[name]), name, res.output[name])
		}
	}
	for _, name := range res.order {
		if name == "" || slices.Contains(want, name) {
			continue
		}
		if res.hasSubtests(name) {
			// A panic in a subtest is reported under its parent.
			if own := res.ownOutput(name); res.outcome[name] == "fail" && own != "" {
				fmt.Fprintf(w, "FAIL %s, outside its subtests:\n%s", name, own)
			}
			continue
		}
		fmt.Fprintf(w, "also ran: %s: %s\n", name, res.outcome[name])
		if res.outcome[name] == "fail" {
			failed++
			fmt.Fprint(w, res.output[name])
		}
	}
	if res.outcome[""] == "fail" {
		// What the package printed outside its tests: a build error, or a
		// panic that ended the test binary.
		fmt.Fprint(w, res.output[""])
		if failed == 0 {
			failed++
		}
	}
	fmt.Fprintf(w, "esdb-client-tests: %d passed, %d failed in %v\n", len(want)-min(failed, len(want)), failed, took.Round(time.Second))
	return failed
}

func (res *results) hasSubtests(name string) bool {
	for _, other := range res.order {
		if strings.HasPrefix(other, name+"/") {
			return true
		}
	}
	return false
}

// ownOutput is what test name printed besides go test's lines on its
// subtests ("=== RUN", "--- PASS" and the like).
func (res *results) ownOutput(name string) string {
	var own strings.Builder
	for _, line := range strings.SplitAfter(res.output[name].String(), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "=== ") || strings.HasPrefix(trimmed, "--- ") {
			continue
		}
		own.WriteString(line)
	}
	return own.String()
}

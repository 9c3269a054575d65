package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// testKey names a test in a package.
type testKey struct{ pkg, test string }

// report turns go test -json events into go test's usual output and keeps
// the counts for the summary.
type report struct {
	out io.Writer
	// output holds each running test's output until it ends: printed if
	// it fails, its reason kept if it skips, dropped if it passes.
	output          map[testKey][]string
	passed, failed  int
	skipped         map[string][]testKey // by reason
	skipOrder       []string             // reasons in the order first seen
	slowest         []timing
	failedBuilds    int
	failedPackages  []string
	printedPackages map[string]bool
}

type timing struct {
	key     testKey
	elapsed time.Duration
}

// slowestKept is how many of the slowest top-level tests the summary names.
const slowestKept = 5

func newReport(out io.Writer) *report {
	return &report{out: out, output: map[testKey][]string{}, skipped: map[string][]testKey{}, printedPackages: map[string]bool{}}
}

// read consumes events until r ends. A line that is not an event (go test
// prints a few things before its tests run) is printed as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(r.out, "%s\n", line)
			continue
		}
		r.handle(e)
	}
	return sc.Err()
}

func (r *report) handle(e event) {
	key := testKey{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.out, e.Output)
	case e.Action == "build-fail":
		r.failedBuilds++
	case e.Test == "" && e.Action == "output":
		// The package's own lines: "ok  \tpkg\t1.2s", "FAIL\tpkg", a
		// panic outside any test. The bare PASS a package ends with is
		// noise without -v. Before the FAIL it ends with, the output of
		// the tests that never ended (a panic, a timeout) tells why.
		if strings.HasPrefix(e.Output, "FAIL") {
			r.printRunning(e.Package)
		}
		if e.Output != "PASS\n" {
			fmt.Fprint(r.out, e.Output)
		}
	case e.Test == "" && e.Action == "fail":
		r.failedPackages = append(r.failedPackages, e.Package)
		r.printRunning(e.Package)
		r.forget(e.Package)
	case e.Test == "" && (e.Action == "pass" || e.Action == "skip"):
		r.forget(e.Package)
	case e.Test == "":
	case e.Action == "output":
		r.output[key] = append(r.output[key], e.Output)
	case e.Action == "pass":
		r.passed++
		r.time(key, e.Elapsed)
		delete(r.output, key)
	case e.Action == "fail":
		r.failed++
		r.time(key, e.Elapsed)
		r.print(key)
		delete(r.output, key)
	case e.Action == "skip":
		reason := skipReason(r.output[key])
		if _, seen := r.skipped[reason]; !seen {
			r.skipOrder = append(r.skipOrder, reason)
		}
		r.skipped[reason] = append(r.skipped[reason], key)
		delete(r.output, key)
	}
}

// print writes a test's output as go test without -v would: without the
// lines that only mark a test running, paused or continued.
func (r *report) print(k testKey) {
	for _, line := range r.output[k] {
		if isProgressLine(line) {
			continue
		}
		fmt.Fprint(r.out, line)
	}
}

func isProgressLine(line string) bool {
	for _, p := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(strings.TrimLeft(line, " "), p) {
			return true
		}
	}
	return false
}

// printRunning prints, and forgets, the output of the tests of pkg that
// have not ended.
func (r *report) printRunning(pkg string) {
	var keys []testKey
	for k := range r.output {
		if k.pkg == pkg {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b testKey) int { return strings.Compare(a.test, b.test) })
	for _, k := range keys {
		r.print(k)
		delete(r.output, k)
	}
}

func (r *report) forget(pkg string) {
	for k := range r.output {
		if k.pkg == pkg {
			delete(r.output, k)
		}
	}
}

// time keeps the slowest top-level tests.
func (r *report) time(k testKey, elapsed float64) {
	if strings.Contains(k.test, "/") {
		return
	}
	r.slowest = append(r.slowest, timing{k, time.Duration(elapsed * float64(time.Second))})
	slices.SortStableFunc(r.slowest, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })
	if len(r.slowest) > slowestKept {
		r.slowest = r.slowest[:slowestKept]
	}
}

// fileLine is the "name_test.go:42: " prefix of a t.Log or t.Skip line.
var fileLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// skipReason is what a skipped test said, from its output: the first line
// that t.Skip printed, without its file and line, or "no reason given".
func skipReason(output []string) string {
	for _, line := range output {
		if isProgressLine(line) || strings.HasPrefix(strings.TrimSpace(line), "--- SKIP") {
			continue
		}
		if loc := fileLine.FindStringIndex(line); loc != nil {
			if reason := strings.TrimSpace(line[loc[1]:]); reason != "" {
				return reason
			}
		}
	}
	return "no reason given"
}

// summary prints the counts, the skips by reason, and the slowest tests.
func (r *report) summary(took time.Duration) {
	skipped := 0
	for _, keys := range r.skipped {
		skipped += len(keys)
	}
	fmt.Fprintf(r.out, "\ntests: %d passed, %d failed, %d skipped (subtests counted) in %s", r.passed, r.failed, skipped, took.Round(time.Second))
	if r.failedBuilds > 0 {
		fmt.Fprintf(r.out, "; %d packages did not build", r.failedBuilds)
	}
	if len(r.failedPackages) > 0 {
		fmt.Fprintf(r.out, "; failed: %s", strings.Join(r.failedPackages, ", "))
	}
	fmt.Fprintln(r.out)
	if skipped > 0 {
		parts := make([]string, 0, len(r.skipOrder))
		for _, reason := range r.skipOrder {
			parts = append(parts, fmt.Sprintf("%d %s", len(r.skipped[reason]), quoteReason(reason, r.skipped[reason])))
		}
		fmt.Fprintf(r.out, "skipped: %s\n", strings.Join(parts, "; "))
	}
	if len(r.slowest) > 0 {
		parts := make([]string, 0, len(r.slowest))
		for _, s := range r.slowest {
			parts = append(parts, fmt.Sprintf("%s %s %.1fs", s.key.pkg, s.key.test, s.elapsed.Seconds()))
		}
		fmt.Fprintf(r.out, "slowest: %s\n", strings.Join(parts, ", "))
	}
}

// quoteReason names a group of skipped tests by their reason, and by the
// test itself when the group has one.
func quoteReason(reason string, keys []testKey) string {
	if len(keys) == 1 {
		return fmt.Sprintf("(%s %s): %q", keys[0].pkg, keys[0].test, reason)
	}
	return fmt.Sprintf("%q", reason)
}

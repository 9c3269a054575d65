package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stream renders events as go test -json prints them.
func stream(t *testing.T, events ...event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func out(pkg, test, text string) event {
	return event{Action: "output", Package: pkg, Test: test, Output: text}
}

// Given a run with a pass, a failure, skips for two reasons and a package
// that panicked, the report prints the package lines and what failed, as
// go test does, then counts them and groups the skips by reason.
func TestReport(t *testing.T) {
	const a, b, c = "m/a", "m/b", "m/c"
	in := stream(t,
		event{Action: "start", Package: a},
		event{Action: "run", Package: a, Test: "TestPass"},
		out(a, "TestPass", "=== RUN   TestPass\n"),
		out(a, "TestPass", "    a_test.go:10: a log line of a passing test\n"),
		out(a, "TestPass", "--- PASS: TestPass (2.50s)\n"),
		event{Action: "pass", Package: a, Test: "TestPass", Elapsed: 2.5},
		event{Action: "run", Package: a, Test: "TestCH"},
		out(a, "TestCH", "=== RUN   TestCH\n"),
		out(a, "TestCH", "    shared.go:106: clickhouse-server not found\n"),
		out(a, "TestCH", "--- SKIP: TestCH (0.00s)\n"),
		event{Action: "skip", Package: a, Test: "TestCH"},
		event{Action: "run", Package: a, Test: "TestCH2"},
		out(a, "TestCH2", "=== RUN   TestCH2\n"),
		out(a, "TestCH2", "--- SKIP: TestCH2 (0.00s)\n"),
		out(a, "TestCH2", "    shared.go:106: clickhouse-server not found\n"),
		event{Action: "skip", Package: a, Test: "TestCH2"},
		out(a, "", "PASS\n"),
		out(a, "", "ok  \tm/a\t3.1s\n"),
		event{Action: "pass", Package: a, Elapsed: 3.1},

		event{Action: "run", Package: b, Test: "TestFail"},
		out(b, "TestFail", "=== RUN   TestFail\n"),
		event{Action: "run", Package: b, Test: "TestFail/sub"},
		out(b, "TestFail/sub", "=== RUN   TestFail/sub\n"),
		out(b, "TestFail/sub", "    b_test.go:7: got 1, want 2\n"),
		out(b, "TestFail/sub", "    --- FAIL: TestFail/sub (0.10s)\n"),
		event{Action: "fail", Package: b, Test: "TestFail/sub", Elapsed: 0.1},
		out(b, "TestFail", "--- FAIL: TestFail (0.20s)\n"),
		event{Action: "fail", Package: b, Test: "TestFail", Elapsed: 0.2},
		event{Action: "run", Package: b, Test: "TestNoReason"},
		out(b, "TestNoReason", "=== RUN   TestNoReason\n"),
		out(b, "TestNoReason", "--- SKIP: TestNoReason (0.00s)\n"),
		event{Action: "skip", Package: b, Test: "TestNoReason"},
		out(b, "", "FAIL\n"),
		out(b, "", "FAIL\tm/b\t0.5s\n"),
		event{Action: "fail", Package: b, Elapsed: 0.5},

		event{Action: "run", Package: c, Test: "TestPanics"},
		out(c, "TestPanics", "=== RUN   TestPanics\n"),
		out(c, "TestPanics", "panic: boom\n"),
		out(c, "", "FAIL\tm/c\t0.1s\n"),
		event{Action: "fail", Package: c, Elapsed: 0.1},
	)
	var got bytes.Buffer
	r := newReport(&got)
	if err := r.read(strings.NewReader("go: downloading example.com/x v1.0.0\n" + in)); err != nil {
		t.Fatal(err)
	}
	r.summary(90 * time.Second)
	want := `go: downloading example.com/x v1.0.0
ok  	m/a	3.1s
    b_test.go:7: got 1, want 2
    --- FAIL: TestFail/sub (0.10s)
--- FAIL: TestFail (0.20s)
FAIL
FAIL	m/b	0.5s
panic: boom
FAIL	m/c	0.1s

tests: 1 passed, 2 failed, 3 skipped (subtests counted) in 1m30s; failed: m/b, m/c
skipped: 2 "clickhouse-server not found"; 1 (m/b TestNoReason): "no reason given"
slowest: m/a TestPass 2.5s, m/b TestFail 0.2s
`
	if got.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", got.String(), want)
	}
}

// The command runs go test on real packages and exits with its code: 0 for
// a passing package, 1 for a failing one, the summary printed either way.
func TestRunGoTest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/sample\n\ngo 1.22\n")
	write("sample_test.go", `package sample

import (
	"os"
	"testing"
)

func TestPasses(t *testing.T) {}

func TestSkips(t *testing.T) { t.Skip("no server here") }

func TestFailsWhenAsked(t *testing.T) {
	if os.Getenv("SAMPLE_FAIL") != "" {
		t.Fatal("asked to fail")
	}
}
`)
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("go is not on PATH")
	}
	t.Chdir(dir)
	for _, c := range []struct {
		fail string
		code int
		want []string
	}{
		{"", 0, []string{"ok  \texample.com/sample", "tests: 2 passed, 0 failed, 1 skipped", `skipped: 1 (example.com/sample TestSkips): "no server here"`}},
		{"1", 1, []string{"sample_test.go:14: asked to fail", "--- FAIL: TestFailsWhenAsked", "tests: 1 passed, 1 failed, 1 skipped"}},
	} {
		t.Setenv("SAMPLE_FAIL", c.fail)
		var stdout, stderr bytes.Buffer
		code := run([]string{"-count=1", "."}, &stdout, &stderr)
		if code != c.code {
			t.Errorf("SAMPLE_FAIL=%q: exit %d, want %d\n%s%s", c.fail, code, c.code, stdout.String(), stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("SAMPLE_FAIL=%q: output lacks %q:\n%s", c.fail, w, stdout.String())
			}
		}
	}
}

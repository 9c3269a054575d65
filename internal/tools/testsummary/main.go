// Command testsummary runs go test with -json and the arguments it is given
// (make test runs it as `go run ./internal/tools/testsummary -race -count=1
// ./...`). It prints what a plain go test prints: a line per package and
// the output of every failed test; then one line counting the tests and one
// line saying which were skipped and why, grouped by reason, so that tests
// skipped for want of ClickHouse or Chromium are seen, not silent. It exits
// with go test's exit code.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, append([]string{"test", "-json"}, args...)...)
	// go test passes the interrupt on to the test binaries itself; give it
	// the time to print what failed.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	r := newReport(stdout)
	readErr := r.read(events)
	waitErr := cmd.Wait()
	r.summary(time.Since(start))
	if readErr != nil {
		fmt.Fprintln(stderr, "testsummary: reading go test's output:", readErr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		return exit.ExitCode()
	case waitErr != nil:
		fmt.Fprintln(stderr, "testsummary:", waitErr)
		return 2
	case readErr != nil || r.failed > 0:
		return 1
	}
	return 0
}

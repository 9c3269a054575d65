// Command esdbclienttests runs EventStore-Client-Go's own integration tests
// against tvsm's protocol double of EventStoreDB (make esdb-client-tests).
//
// The client's tests start EventStoreDB in Docker. This command copies the
// client module that go.mod pins out of the module cache into a temporary
// directory, puts harness/containers_test.go in place of the file that
// starts containers (so that the tests get the double's address instead),
// starts the double on a free loopback port, and runs go test there with
// -run selecting the tests of what the double serves (see selected). Every
// selected test must pass; one that is missing or skipped fails the run,
// so that a renamed test in a new client release is noticed. The copy, the
// double and its log are removed at the end.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"tvsm/eventstore/esdb/esdbdouble"
)

// clientModule is the module whose tests run; its version is go.mod's.
const clientModule = "github.com/EventStore/EventStore-Client-Go/v4"

// harness replaces esdb/containers_test.go in the copy; the build tag keeps
// it out of tvsm's own builds.
//
//go:embed harness/containers_test.go
var harness []byte

const harnessTag = "tvsm_esdb_double"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("esdbclienttests", flag.ContinueOnError)
	fl.SetOutput(stderr)
	timeout := fl.Duration("timeout", 5*time.Minute, "go test's -timeout")
	verbose := fl.Bool("v", false, "print every test's output")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "esdbclienttests:", err)
		return 2
	}

	mod, err := download(ctx, goCmd)
	if err != nil {
		return fail(err)
	}
	work, err := os.MkdirTemp("", "esdbclienttests-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "client")
	if err := copyTree(mod.Dir, src); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(src, "esdb", "containers_test.go"), harness, 0o644); err != nil {
		return fail(err)
	}

	srv, err := esdbdouble.Start(filepath.Join(work, "double"), "127.0.0.1:0", esdbdouble.Options{
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "%s %s's tests against the protocol double (EventStoreDB %s) at %s\n",
		clientModule, mod.Version, esdbdouble.DefaultServerVersion, srv.Addr())

	cmd := exec.CommandContext(ctx, goCmd, "test", "-json", "-count=1", "-tags", harnessTag,
		"-timeout", timeout.String(), "-run", runPattern(selected), "./esdb")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "TVSM_ESDB_DOUBLE_ADDR="+srv.Addr(), "EVENTSTORE_INSECURE=true", "GOWORK=off")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	res, readErr := readResults(events, stdout, *verbose)
	waitErr := cmd.Wait()
	if readErr != nil {
		return fail(fmt.Errorf("reading go test's output: %w", readErr))
	}
	failed := res.report(stdout, selected, time.Since(start))
	var exit *exec.ExitError
	switch {
	case waitErr != nil && !errors.As(waitErr, &exit):
		return fail(waitErr)
	case failed > 0 || waitErr != nil:
		return 1
	}
	return 0
}

// module is what go mod download says of a module.
type module struct {
	Version string
	Dir     string
}

// download makes sure the client module of go.mod is in the module cache
// and returns where.
func download(ctx context.Context, goCmd string) (module, error) {
	out, err := exec.CommandContext(ctx, goCmd, "mod", "download", "-json", clientModule).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(exit.Stderr))
		}
		return module{}, fmt.Errorf("go mod download %s: %w", clientModule, err)
	}
	var m module
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return module{}, fmt.Errorf("go mod download %s: no directory in %q", clientModule, out)
	}
	return m, nil
}

// copyTree copies the files under from to to, writable (the module cache
// is read-only).
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

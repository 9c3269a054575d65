package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/esdb/esdbdouble"
)

// onESDBEnv, set to 1, makes newEnv give every test the esdb backend on a
// protocol double of its own.
const onESDBEnv = "TVSM_APP_TESTS_ON_ESDB"

func onESDB() bool { return os.Getenv(onESDBEnv) == "1" }

// TestOnEventStoreDB runs this package's tests again, in a child process,
// on the esdb backend against the protocol double: login reservations, id
// blocks, idempotency records and retries must hold on a store without
// atomic multi-stream appends, whose event ids count only within a stream
// and whose positions are sparse. Tests that need what only the embedded
// and in-memory stores give skip themselves there, saying why.
func TestOnEventStoreDB(t *testing.T) {
	if onESDB() {
		t.Skip("already on EventStoreDB")
	}
	if testing.Short() {
		t.Skip("runs the package's tests again")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^Test", "-test.count", "1")
	cmd.Env = append(os.Environ(), onESDBEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the package's tests on EventStoreDB failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// newESDBEnv is an env on the esdb backend and a protocol double of its own.
func newESDBEnv(t testing.TB) *env {
	t.Helper()
	srv, err := esdbdouble.Start(t.TempDir(), "127.0.0.1:0", esdbdouble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s, err := esdb.Open(context.Background(), srv.URL(), esdb.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return newEnvOn(t, s)
}

// TestResendAfterServerRestartStoresOnce: the acknowledgement of an append
// is lost because EventStoreDB restarted right after storing it. A restarted
// server has forgotten the ids it checks appends with "any revision"
// against; the executor's resend still stores nothing twice, because it
// repeats the same ids at the same expected revision, which the server
// checks against the stream itself.
func TestResendAfterServerRestartStoresOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := esdbdouble.Start(dir, "127.0.0.1:0", esdbdouble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr()
	t.Cleanup(func() { _ = srv.Close() })
	s, err := esdb.Open(context.Background(), srv.URL(), esdb.Options{
		Logger: slog.New(slog.DiscardHandler), ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	e := newEnvOn(t, s)

	fs := &faultyStore{Store: s}
	restarted := false
	fs.after = func(_ string, events []eventstore.EventData) error {
		if restarted || events[0].Type != counterAddedType {
			return nil
		}
		restarted = true
		if err := srv.Close(); err != nil {
			return err
		}
		if srv, err = esdbdouble.Start(dir, addr, esdbdouble.Options{}); err != nil {
			t.Errorf("restart: %v", err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		return errors.New("connection reset")
	}
	x := e.executor(fs, Options{MaxAttempts: 100, RetryDelay: 10 * time.Millisecond})
	mustExec(t, x, "counter-1", create{Name: "a"})
	res := mustExec(t, x, "counter-1", add{N: 2})
	if recs := e.read("counter-1"); len(recs) != 2 || res.State.Total != 2 {
		t.Fatalf("%d events, total %d; want create and one add", len(recs), res.State.Total)
	}
	if appends, _ := fs.counts(); appends < 3 {
		t.Fatalf("%d appends: the lost acknowledgement was not resent", appends)
	}
}

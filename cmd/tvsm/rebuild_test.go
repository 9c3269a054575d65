package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/eventstore/sealed"
	"tvsm/internal/wiring/node"
	"tvsm/projections"
	"tvsm/projections/readmodel"
	"tvsm/projections/stats"
	statsembedded "tvsm/projections/stats/embedded"
	"tvsm/projections/stats/statstest"
)

// catchUp runs h over store from position from until it has applied the
// whole log.
func catchUp(ctx context.Context, store eventstore.Store, reg *domain.Registry, h projections.Handler, from eventstore.Position) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	caughtUp := make(chan struct{})
	r := projections.NewRunner(store, reg, h, projections.SnapshotCheckpoints{Position: from}, projections.RunnerOptions{
		Logger: slog.New(slog.DiscardHandler), OnCaughtUp: func() { close(caughtUp) },
	})
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	select {
	case <-caughtUp:
		cancel()
		<-ran
		return nil
	case err := <-ran:
		return fmt.Errorf("projection %s stopped before catching up: %w", h.Name(), err)
	case <-ctx.Done():
		return fmt.Errorf("projection %s did not catch up: %w", h.Name(), ctx.Err())
	}
}

// nodeState is what a stopped node left in its data directory, restored
// as a node restores it on start (snapshot, then the log's tail), beside
// projections rebuilt from the whole log.
type nodeState struct {
	store eventstore.Store // the node's log, read through its seal
	keys  *sealed.Keyring
	reg   *domain.Registry
}

// openNodeState opens the event store a stopped node left in dir, with
// its keys (DATA/keys, under the master key beside dir), as the node reads
// it.
func openNodeState(t *testing.T, dir string) *nodeState {
	t.Helper()
	store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	master, err := sealed.LoadMasterKey(node.DefaultMasterKeyFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := sealed.OpenFileKeys(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	ring := sealed.NewKeyring(keys, master)
	return &nodeState{store: sealed.Wrap(store, ring), keys: ring, reg: node.NewRegistry()}
}

// readModelMatchesRebuild compares the read model the node serves after
// its restarts (its snapshot, caught up with the log) with one rebuilt
// from the log, query by query.
func (s *nodeState) readModelMatchesRebuild(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	served := readmodel.New(s.reg)
	served.SealSnapshots(s.keys)
	from, err := served.LoadSnapshot(filepath.Join(dir, "readmodel.snapshot"))
	if err != nil {
		t.Fatalf("the node's read model snapshot: %v", err)
	}
	if err := catchUp(ctx, s.store, s.reg, served, from); err != nil {
		t.Fatal(err)
	}
	rebuilt := readmodel.New(s.reg)
	if err := catchUp(ctx, s.store, s.reg, rebuilt, eventstore.Beginning); err != nil {
		t.Fatal(err)
	}
	if err := readmodel.Compare(rebuilt, served); err != nil {
		t.Fatalf("the read model after the restarts differs from a rebuild: %v", err)
	}
	t.Logf("read model equals a rebuild from the log (%d events; snapshot at %v)", served.Position().Commit, from)
}

// statsMatchRebuild compares the statistics the node wrote (facts, with the
// projector snapshot named statsName in dir, caught up with the log) with
// statistics rebuilt from the log into a fresh embedded store, over the
// days of r, today included: both close today, as they will at midnight.
func (s *nodeState) statsMatchRebuild(t *testing.T, dir string, facts stats.FactStore, statsName string, r stats.Range) {
	t.Helper()
	ctx := context.Background()
	midnight := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	now := midnight.Add(stats.DefaultGrace + time.Second)
	served, err := stats.NewProjector(facts, stats.ProjectorOptions{SnapshotPath: filepath.Join(dir, "stats-"+statsName+".snapshot")})
	if err != nil {
		t.Fatal(err)
	}
	from, err := served.Restore(ctx)
	if err != nil {
		t.Fatalf("restore the node's statistics: %v", err)
	}
	fresh, err := statsembedded.Open(t.TempDir(), statsembedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	rebuilt, err := stats.NewProjector(fresh, stats.ProjectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    *stats.Projector
		from eventstore.Position
	}{{served, from}, {rebuilt, eventstore.Beginning}} {
		if err := catchUp(ctx, s.store, s.reg, c.p, c.from); err != nil {
			t.Fatal(err)
		}
		// What the node's scheduler does once midnight has passed.
		if err := c.p.CloseDue(ctx, now); err != nil {
			t.Fatal(err)
		}
		if err := c.p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want, err := statstest.Dump(ctx, fresh, r, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := statstest.Dump(ctx, facts, r, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("statistics differ from a rebuild from the log:\n got:\n%s\nwant:\n%s", got, want)
	}
	if want == "" {
		t.Fatal("the rebuild has no statistics to compare")
	}
	t.Logf("statistics (%s) equal a rebuild from the log: %d lines of facts", statsName, strings.Count(want, "\n"))
}

// openEmbeddedFacts opens the embedded statistics a stopped node left in
// dir.
func openEmbeddedFacts(t *testing.T, dir string) *statsembedded.Store {
	t.Helper()
	facts, err := statsembedded.Open(filepath.Join(dir, "stats"), statsembedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { facts.Close() })
	return facts
}

// verifyLive runs `tvsm rebuild TARGET --verify`, the binary as operators
// run it (its own process), against the running node of r for the read
// model and the statistics: each must report no difference and exit 0.
func (r *faultRun) verifyLive() {
	r.t.Helper()
	for _, target := range []string{"readmodel", "stats"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "rebuild", target, "--verify", "--url", "http://"+r.addr, "--user", "root")
		cmd.Env = append(cleanEnv(), runMainEnv+"=1", "TVSM_ADMIN_PASSWORD="+faultPassword)
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			r.t.Errorf("tvsm rebuild %s --verify on the live node exited %d:\n%s", target, exit.ExitCode(), out)
		case err != nil:
			r.t.Errorf("tvsm rebuild %s --verify: %v\n%s", target, err, out)
		case !strings.Contains(string(out), "no difference"):
			r.t.Errorf("tvsm rebuild %s --verify on the live node exited 0 without saying so:\n%s", target, out)
		default:
			r.t.Logf("tvsm rebuild %s --verify on the live node:\n%s", target, out)
		}
	}
}

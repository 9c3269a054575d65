package node

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tvsm/eventstore/embedded"
)

func TestCleanupUnwindsNewestFirstOnce(t *testing.T) {
	// Given three parts pushed in order
	var c cleanup
	var undone []string
	for _, part := range []string{"runner", "stats", "gateway"} {
		c.push(func() { undone = append(undone, part) })
	}
	// When the cleanup unwinds twice
	c.unwind()
	c.unwind()
	// Then each part was undone once, newest first
	if want := []string{"gateway", "stats", "runner"}; !slices.Equal(undone, want) {
		t.Fatalf("undone %v, want %v", undone, want)
	}
}

func TestCleanupReentrantUnwindUndoesEachOnce(t *testing.T) {
	// Given an undo function that unwinds the cleanup again (as Close
	// called from a failing undo would)
	var c cleanup
	calls := 0
	c.push(func() { calls++ })
	c.push(func() { c.unwind() })
	// When it unwinds
	c.unwind()
	// Then the older part still ran once
	if calls != 1 {
		t.Fatalf("older part undone %d times, want 1", calls)
	}
}

// testOptions are the options of a node in dir that starts fast and logs
// nothing.
func testOptions(dir string) Options {
	return Options{
		DataDir: filepath.Join(dir, "node"), Logger: slog.New(slog.DiscardHandler),
		AdminPassword: "s3cret-root", BcryptCost: bcrypt.MinCost, NodeName: "test",
	}
}

func openStore(t *testing.T, dir string) *embedded.Store {
	t.Helper()
	store, err := embedded.Open(filepath.Join(dir, "events"), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// warmGoroutineBaseline starts and closes a node on store, so the store's
// own long-lived goroutines exist, and returns the number of goroutines
// then running.
func warmGoroutineBaseline(t *testing.T, store *embedded.Store, dir string) int {
	t.Helper()
	n, err := Start(context.Background(), store, testOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return settledGoroutines()
}

// settledGoroutines lets the goroutines that are ending end, until the
// count holds still for a tenth of a second, and returns it.
func settledGoroutines() int {
	count := runtime.NumGoroutine()
	for still := 0; still < 10; {
		time.Sleep(10 * time.Millisecond)
		if now := runtime.NumGoroutine(); now != count {
			count, still = now, 0
			continue
		}
		still++
	}
	return count
}

// waitGoroutines waits until at most limit goroutines run, and fails the
// test with their stacks if that takes too long.
func waitGoroutines(t *testing.T, limit int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > limit {
		if time.Now().After(deadline) {
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Fatalf("%d goroutines still run, want at most %d:\n%s", runtime.NumGoroutine(), limit, stacks.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A failure after any step undoes every step before it: no goroutine of
// the node is left, and the embedded statistics store is closed (the next
// start in the same directory could not open it otherwise).
func TestFailedStartUndoesEveryStartedStep(t *testing.T) {
	dir := t.TempDir()
	store := openStore(t, dir)
	warmGoroutineBaseline(t, store, dir)
	errInjected := errors.New("injected")
	fail := step{"injected failure", func(context.Context, Options) error { return errInjected }}

	all := (&Node{}).steps()
	for k := 1; k <= len(all); k++ {
		t.Run("after "+all[k-1].name, func(t *testing.T) {
			// (t.Run runs this in a goroutine of its own, so the baseline
			// is counted here.)
			baseline := settledGoroutines()
			// Given a node whose steps up to k succeed and the next fails
			n, opts, err := newNode(store, testOptions(dir))
			if err != nil {
				t.Fatal(err)
			}
			steps := append(n.steps()[:k:k], fail)
			// When it runs them
			err = n.run(context.Background(), opts, steps)
			// Then the failure is returned and everything started is undone
			if !errors.Is(err, errInjected) || err.Error() != "node: injected" {
				t.Fatalf("run: %v, want node: injected", err)
			}
			if len(n.cleanup.undo) != 0 {
				t.Fatalf("%d undo functions left after the failure", len(n.cleanup.undo))
			}
			waitGoroutines(t, baseline)
		})
	}
	// And a node starts and stops again on the same data
	baseline := settledGoroutines()
	n, err := Start(context.Background(), store, testOptions(dir))
	if err != nil {
		t.Fatalf("start after the failures: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, baseline)
}

// A step failing through the public API undoes the node: the admin
// bootstrap (the read model runner is running by then) and the last step.
func TestStartWithBadOptionsUndoesEverything(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Options)
		want   string
	}{
		{"short admin password", func(o *Options) { o.AdminPassword = "short" }, "node: admin bootstrap: "},
		{"bad snapshot schedule", func(o *Options) { o.SnapshotSpec = "every now and then" }, `node: snapshot schedule "every now and then"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warm := t.TempDir()
			warmGoroutineBaseline(t, openStore(t, warm), warm)
			// The failing start gets a store of its own: the warm-up
			// created the superadmin in the other.
			dir := t.TempDir()
			store := openStore(t, dir)
			baseline := settledGoroutines()
			// Given options one step rejects
			opts := testOptions(dir)
			tc.modify(&opts)
			// When a node starts
			n, err := Start(context.Background(), store, opts)
			// Then it fails naming the step, and nothing of it runs any more
			if err == nil || n != nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Start = %v, %v; want an error starting %q", n, err, tc.want)
			}
			waitGoroutines(t, baseline)
		})
	}
}

// Close after a successful Start stops every goroutine the node started.
func TestCloseStopsEverything(t *testing.T) {
	dir := t.TempDir()
	store := openStore(t, dir)
	baseline := warmGoroutineBaseline(t, store, dir)

	// Given a running node
	n, err := Start(context.Background(), store, testOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.NumGoroutine() <= baseline {
		t.Fatalf("%d goroutines with the node running, baseline %d: the check below would prove nothing", runtime.NumGoroutine(), baseline)
	}
	// When it closes, twice
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// Then its goroutines are gone
	waitGoroutines(t, baseline)
}

package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"tvsm/eventstore/memory"
	"tvsm/internal/platform/supervise"
	"tvsm/internal/testkit/testutil"
	"tvsm/projections"
)

// A panic while the loop applies a batch is recovered, logged and counted:
// the batch's waiter gets the panic as its error (the runner resubscribes
// and reports Panicked), and the loop goes on serving messages.
func TestLoopSurvivesAPanickingBatch(t *testing.T) {
	store := memory.New()
	defer store.Close()
	d, err := New(Options{
		Store: store, Registry: testRegistry(), Clock: testutil.NewClock(now0), Node: "n1",
		Logger: slog.New(slog.DiscardHandler), DataDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(context.Background()) }()
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
		if err := <-runErr; err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	deadline := time.Now().Add(5 * time.Second)
	for !d.CaughtUp() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}

	before := supervise.Counts()[panicComponent]
	boom := func(func(*projections.Event) bool) { panic("apply bug") }
	err = handler{d}.Apply(ctx, boom, projections.Live)
	var p *supervise.Panic
	if !errors.As(err, &p) || p.Value != "apply bug" {
		t.Fatalf("Apply = %v, want the recovered panic", err)
	}
	if got := supervise.Counts()[panicComponent] - before; got != 1 {
		t.Fatalf("%d panics counted, want 1", got)
	}
	// The loop still runs: a settle is answered, an empty batch applied.
	if err := d.Settle(ctx); err != nil {
		t.Fatalf("settle after the panic: %v", err)
	}
	if err := (handler{d}).Apply(ctx, func(func(*projections.Event) bool) {}, projections.Live); err != nil {
		t.Fatalf("empty batch after the panic: %v", err)
	}
	// Waiters of messages whose handling panicked are released.
	settled, snap := make(chan struct{}), make(chan snapshotData, 1)
	release(loopMsg{settled: settled}, p)
	release(loopMsg{snapshot: snap}, p)
	if _, ok := <-snap; ok {
		t.Error("a snapshot was handed out after a panic")
	}
	<-settled
}

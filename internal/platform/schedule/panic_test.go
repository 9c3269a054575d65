package schedule_test

import (
	"testing"
	"time"

	"tvsm/internal/platform/schedule"
	"tvsm/internal/platform/supervise"
	"tvsm/internal/testkit/testutil"
)

// A timer job that panics is recovered and counted; the jobs due after it
// still run, and so do later ones.
func TestTimersSurviveAPanickingJob(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tm := schedule.NewTimers(clock)
	defer tm.Close()
	before := supervise.Counts()["timer"]
	var ran []string
	tm.At("a", clock.Now().Add(time.Second), func() { ran = append(ran, "a") })
	tm.At("b", clock.Now().Add(2*time.Second), func() { panic("job bug") })
	tm.At("c", clock.Now().Add(3*time.Second), func() { ran = append(ran, "c") })
	clock.Advance(3 * time.Second)
	tm.At("d", clock.Now().Add(time.Second), func() { ran = append(ran, "d") })
	clock.Advance(time.Second)
	if len(ran) != 3 || ran[0] != "a" || ran[1] != "c" || ran[2] != "d" {
		t.Fatalf("ran %v, want [a c d]", ran)
	}
	if got := supervise.Counts()["timer"] - before; got != 1 {
		t.Fatalf("%d panics counted, want 1", got)
	}
}

// A cron job that panics is recovered and counted, and runs again at its
// next time.
func TestCronRecoversAndCountsPanics(t *testing.T) {
	c := schedule.NewCron(nil)
	before := supervise.Counts()["cron"]
	runs := make(chan struct{}, 8)
	if _, err := c.AddFunc("@every 1s", func() { runs <- struct{}{}; panic("cron job bug") }); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	for range 2 {
		select {
		case <-runs:
		case <-time.After(5 * time.Second):
			t.Fatal("the job did not run again after panicking")
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for supervise.Counts()["cron"]-before < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if supervise.Counts()["cron"]-before < 1 {
		t.Fatal("no panic counted")
	}
}

package schedule_test

import (
	"context"
	"testing"
	"time"

	"tvsm/internal/platform/schedule"
)

func TestSleepEndsWithTheContext(t *testing.T) {
	if !schedule.Sleep(context.Background(), time.Millisecond) {
		t.Error("a sleep without cancellation reported it was cut short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if schedule.Sleep(ctx, time.Hour) {
		t.Error("a sleep on a cancelled context reported it slept the whole hour")
	}
	if waited := time.Since(start); waited > time.Minute {
		t.Errorf("a sleep on a cancelled context took %s", waited)
	}
}

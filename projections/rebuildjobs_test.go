package projections

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// waitJob polls job id until it has ended.
func waitJob(t *testing.T, js *RebuildJobs, id string) RebuildStatus {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		st, ok := js.Status(id)
		if !ok {
			t.Fatalf("job %s unknown", id)
		}
		if st.State != RebuildRunning {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still running", id)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRebuildJobsOnePerTarget(t *testing.T) {
	js := NewRebuildJobs(nil)
	defer js.Close()
	release := make(chan struct{})
	first, err := js.Start("rm", false, func(ctx context.Context, j *RebuildJob) error {
		j.SetHead(pos(10))
		j.Progress(pos(4), 4)
		<-release
		j.Progress(pos(10), 6)
		return nil
	})
	if err != nil || first.State != RebuildRunning || first.ID == "" {
		t.Fatalf("start: %+v %v", first, err)
	}
	if _, err := js.Start("rm", true, nil); !errors.Is(err, ErrRebuildRunning) {
		t.Fatalf("a second job of the target: %v, want ErrRebuildRunning", err)
	}
	other, err := js.Start("stats", true, func(_ context.Context, j *RebuildJob) error {
		j.SetDifferences([]string{"- a", "+ b"}, 1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := waitJob(t, js, other.ID); st.State != RebuildDone || st.DifferenceCount != 1 || len(st.Differences) != 2 {
		t.Fatalf("check: %+v", st)
	}
	close(release)
	st := waitJob(t, js, first.ID)
	if st.State != RebuildDone || st.Applied != 10 || st.Through != pos(10) || st.Head != pos(10) || st.Finished.IsZero() || st.Rate(time.Now()) <= 0 {
		t.Fatalf("rebuild: %+v", st)
	}
	if list := js.List(); len(list) != 2 || list[0].ID != other.ID || list[1].ID != first.ID {
		t.Fatalf("list: %+v, want newest first", list)
	}
	// The target is free again.
	again, err := js.Start("rm", false, func(context.Context, *RebuildJob) error { return errors.New("boom") })
	if err != nil {
		t.Fatal(err)
	}
	if st := waitJob(t, js, again.ID); st.State != RebuildFailed || st.Error != "boom" {
		t.Fatalf("a failing job: %+v", st)
	}
}

func TestRebuildJobsPanicFailsTheJobAndCloseCancels(t *testing.T) {
	js := NewRebuildJobs(nil)
	st, err := js.Start("rm", false, func(context.Context, *RebuildJob) error { panic("oops") })
	if err != nil {
		t.Fatal(err)
	}
	if st := waitJob(t, js, st.ID); st.State != RebuildFailed || !strings.Contains(st.Error, "oops") {
		t.Fatalf("a panicking job: %+v", st)
	}
	running, err := js.Start("rm", false, func(ctx context.Context, _ *RebuildJob) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	js.Close()
	if st, _ := js.Status(running.ID); st.State != RebuildFailed {
		t.Fatalf("a job canceled by Close: %+v", st)
	}
	if _, err := js.Start("stats", false, nil); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestRebuildJobsForgetTheOldest(t *testing.T) {
	js := NewRebuildJobs(nil)
	defer js.Close()
	var first string
	for i := range keptRebuildJobs + 5 {
		st, err := js.Start("rm", false, func(context.Context, *RebuildJob) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = st.ID
		}
		waitJob(t, js, st.ID)
	}
	if n := len(js.List()); n != keptRebuildJobs {
		t.Fatalf("%d jobs remembered, want %d", n, keptRebuildJobs)
	}
	if _, ok := js.Status(first); ok {
		t.Fatal("the oldest job is still remembered")
	}
}

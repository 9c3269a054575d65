package schedule_test

import (
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"tvsm/internal/platform/schedule"
	"tvsm/internal/testkit/testutil"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// recorder collects the keys of jobs in the order they ran.
type recorder struct {
	mu  sync.Mutex
	ran []string
}

func (r *recorder) job(key string) func() {
	return func() {
		r.mu.Lock()
		r.ran = append(r.ran, key)
		r.mu.Unlock()
	}
}

func (r *recorder) got() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ""
	for i, k := range r.ran {
		if i > 0 {
			s += ","
		}
		s += k
	}
	return s
}

func TestTimersRunDueJobsInTimeOrder(t *testing.T) {
	clock := testutil.NewClock(t0)
	tm := schedule.NewTimers(clock)
	defer tm.Close()
	var r recorder
	tm.At("c", t0.Add(3*time.Minute), r.job("c"))
	tm.At("a", t0.Add(time.Minute), r.job("a"))
	tm.At("b", t0.Add(2*time.Minute), r.job("b"))
	tm.At("later", t0.Add(time.Hour), r.job("later"))

	clock.Advance(59 * time.Second)
	if got := r.got(); got != "" {
		t.Fatalf("ran %q before anything was due", got)
	}
	clock.Advance(3 * time.Minute)
	if got := r.got(); got != "a,b,c" {
		t.Fatalf("ran %q, want a,b,c", got)
	}
	if tm.Len() != 1 {
		t.Fatalf("%d jobs left, want 1", tm.Len())
	}
	if at, ok := tm.Next(); !ok || !at.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next %v %v", at, ok)
	}
	clock.Advance(time.Hour)
	if got := r.got(); got != "a,b,c,later" {
		t.Fatalf("ran %q", got)
	}
}

func TestTimersReplaceAndCancel(t *testing.T) {
	clock := testutil.NewClock(t0)
	tm := schedule.NewTimers(clock)
	defer tm.Close()
	var r recorder
	tm.At("x", t0.Add(time.Hour), r.job("x-old"))
	tm.At("x", t0.Add(time.Minute), r.job("x"))
	tm.At("y", t0.Add(time.Minute), r.job("y"))
	if !tm.Cancel("y") || tm.Cancel("y") {
		t.Fatal("Cancel should report true once")
	}
	clock.Advance(2 * time.Hour)
	if got := r.got(); got != "x" {
		t.Fatalf("ran %q, want only the replaced x", got)
	}
}

func TestTimersPastJobRunsWithoutAdvance(t *testing.T) {
	clock := testutil.NewClock(t0)
	tm := schedule.NewTimers(clock)
	defer tm.Close()
	done := make(chan struct{})
	tm.At("past", t0.Add(-time.Minute), func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a job whose time had passed did not run")
	}
}

func TestTimersJobMaySchedule(t *testing.T) {
	clock := testutil.NewClock(t0)
	tm := schedule.NewTimers(clock)
	defer tm.Close()
	var r recorder
	var chain func(i int) func()
	chain = func(i int) func() {
		return func() {
			r.job(strconv.Itoa(i))()
			if i < 3 {
				tm.At("chain", clock.Now().Add(time.Minute), chain(i+1))
			}
		}
	}
	tm.At("chain", t0.Add(time.Minute), chain(1))
	clock.Advance(time.Minute)
	clock.Advance(time.Minute)
	clock.Advance(time.Minute)
	if got := r.got(); got != "1,2,3" {
		t.Fatalf("ran %q", got)
	}
	if tm.Len() != 0 || clock.Timers() != 0 {
		t.Fatalf("left %d jobs, %d clock timers", tm.Len(), clock.Timers())
	}
}

func TestTimersCloseDropsJobs(t *testing.T) {
	clock := testutil.NewClock(t0)
	tm := schedule.NewTimers(clock)
	var r recorder
	tm.At("a", t0.Add(time.Minute), r.job("a"))
	tm.Close()
	tm.At("b", t0.Add(time.Minute), r.job("b"))
	clock.Advance(time.Hour)
	if got := r.got(); got != "" || tm.Len() != 0 {
		t.Fatalf("ran %q after Close, %d jobs", got, tm.Len())
	}
}

func TestTimersSystemClock(t *testing.T) {
	tm := schedule.NewTimers(nil)
	defer tm.Close()
	done := make(chan struct{})
	tm.At("soon", time.Now().Add(20*time.Millisecond), func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("job on the system clock did not run")
	}
}

func TestNewCronRecoversPanics(t *testing.T) {
	c := schedule.NewCron(slog.New(slog.DiscardHandler))
	ran := make(chan struct{}, 4)
	// cron rounds intervals up to whole seconds.
	if _, err := c.AddFunc("@every 1s", func() {
		ran <- struct{}{}
		panic("job failed")
	}); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	for i := 0; i < 2; i++ {
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatal("cron job did not run again after a panic")
		}
	}
	if loc := c.Location(); loc != time.UTC {
		t.Fatalf("location %v, want UTC", loc)
	}
}

package embedded_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// The crash test runs the test binary again as a child process that appends
// under concurrency and reports every acknowledged append on stdout, then
// kills it with SIGKILL at a random moment. After each kill the parent
// reopens the store and checks that every acknowledged event is present
// exactly once and that the log and its indexes are consistent.
const (
	crashDirEnv   = "TVSM_CRASH_CHILD_DIR"
	crashCycleEnv = "TVSM_CRASH_CHILD_CYCLE"
	// crashCyclesEnv overrides the number of kill cycles (default 8).
	crashCyclesEnv = "TVSM_CRASH_CYCLES"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		cycle, _ := strconv.Atoi(os.Getenv(crashCycleEnv))
		crashChild(dir, cycle)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// ackedAppend is one append the child reported as acknowledged.
type ackedAppend struct {
	stream string
	key    string // event i has ID DeriveEventID(key, i)
	n      int
}

func (a ackedAppend) events() []eventstore.EventData {
	evs := make([]eventstore.EventData, a.n)
	for i := range evs {
		evs[i] = crashEvent(a.key, i)
	}
	return evs
}

func crashEvent(key string, i int) eventstore.EventData {
	return eventstore.EventData{
		ID:       eventstore.DeriveEventID(key, i),
		Type:     "Crash.v1",
		Data:     []byte(fmt.Sprintf(`{"key":%q,"i":%d}`, key, i)),
		Metadata: []byte(`{"actor":"system"}`),
	}
}

// crashChild appends until it is killed: 32 writers, each on its own streams
// with exact expected revisions, one to three events per append.
func crashChild(dir string, cycle int) {
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	for w := 0; w < 32; w++ {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(cycle), uint64(w)))
			next := map[string]eventstore.Revision{}
			for seq := 0; ; seq++ {
				stream := fmt.Sprintf("crash-c%d-w%d-s%d", cycle, w, rng.IntN(4))
				expect, ok := next[stream]
				if !ok {
					expect = eventstore.NoStream
				}
				a := ackedAppend{stream: stream, key: fmt.Sprintf("c%d-w%d-%d", cycle, w, seq), n: 1 + rng.IntN(3)}
				res, err := s.Append(ctx, stream, expect, a.events()...)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					os.Exit(4)
				}
				next[stream] = eventstore.Exact(res.NextExpected)
				mu.Lock()
				fmt.Fprintf(out, "ack %s %s %d\n", a.stream, a.key, a.n)
				out.Flush() // the parent must see the ack before we append more
				mu.Unlock()
			}
		}()
	}
	select {}
}

func TestCrashRecovery(t *testing.T) {
	cycles := 8
	if v, err := strconv.Atoi(os.Getenv(crashCyclesEnv)); err == nil && v > 0 {
		cycles = v
	}
	dir := t.TempDir()
	var acked []ackedAppend
	for c := 0; c < cycles; c++ {
		got := runAndKill(t, dir, c)
		if len(got) == 0 {
			t.Fatalf("cycle %d: child acknowledged nothing before the kill", c)
		}
		acked = append(acked, got...)
		verifyAfterCrash(t, dir, acked)
		t.Logf("cycle %d: %d appends acknowledged before SIGKILL, %d in all, all present once", c, len(got), len(acked))
	}
}

// runAndKill starts a child on dir, lets it append for a random while after
// its first ack, kills it with SIGKILL and returns what it acknowledged.
func runAndKill(t *testing.T, dir string, cycle int) []ackedAppend {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashCycleEnv+"="+strconv.Itoa(cycle))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Collect acks as they come, so the child never blocks on a full pipe
	// and the kill lands while appends are in flight.
	var (
		mu       sync.Mutex
		acked    []ackedAppend
		firstAck = make(chan struct{})
		eof      = make(chan struct{})
	)
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var a ackedAppend
			if _, err := fmt.Sscanf(sc.Text(), "ack %s %s %d", &a.stream, &a.key, &a.n); err != nil {
				continue
			}
			mu.Lock()
			acked = append(acked, a)
			if len(acked) == 1 {
				close(firstAck)
			}
			mu.Unlock()
		}
	}()
	select {
	case <-firstAck:
	case <-eof:
		cmd.Wait()
		t.Fatalf("cycle %d: child ended before its first ack: %s", cycle, stderr.String())
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("cycle %d: no ack within 20s: %s", cycle, stderr.String())
	}
	time.Sleep(time.Duration(50+rand.IntN(400)) * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-eof // acks written before the kill are still in the pipe
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("cycle %d: child did not die of SIGKILL (%v): %s", cycle, err, stderr.String())
	}
	return acked
}

// verifyAfterCrash opens the store and checks the whole log: positions dense
// from 1, every event ID once, stream revisions consecutive and matching the
// stream index, every acknowledged append present in order; then retries some
// acknowledged appends and checks they are no-ops.
func verifyAfterCrash(t *testing.T, dir string, acked []ackedAppend) {
	t.Helper()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	log := readWholeLog(t, s)

	byID := make(map[eventstore.EventID]eventstore.RecordedEvent, len(log))
	nextRev := map[string]uint64{}
	for i, e := range log {
		if want := uint64(i + 1); e.Position.Commit != want {
			t.Fatalf("event %d at position %v, want dense position %d", i, e.Position, want)
		}
		if _, dup := byID[e.ID]; dup {
			t.Fatalf("event %s stored twice", e.ID)
		}
		byID[e.ID] = e
		if e.Revision != nextRev[e.Stream] {
			t.Fatalf("stream %s: event at revision %d, want %d", e.Stream, e.Revision, nextRev[e.Stream])
		}
		nextRev[e.Stream]++
	}
	for stream, n := range nextRev {
		evs, err := s.ReadStream(ctx, stream, eventstore.Start, 0)
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		if uint64(len(evs)) != n {
			t.Fatalf("stream %s: index has %d events, log has %d", stream, len(evs), n)
		}
	}
	for _, a := range acked {
		for i, want := range a.events() {
			got, ok := byID[want.ID]
			if !ok {
				t.Fatalf("acknowledged event %s/%d of stream %s lost", a.key, i, a.stream)
			}
			if got.Stream != a.stream || string(got.Data) != string(want.Data) {
				t.Fatalf("acknowledged event %s/%d: stored as %s %s", a.key, i, got.Stream, got.Data)
			}
		}
	}
	// A client that never saw its ack retries; the retry must not duplicate.
	for _, a := range acked[len(acked)-min(len(acked), 20):] {
		first := byID[a.events()[0].ID]
		res, err := s.Append(ctx, a.stream, eventstore.Any, a.events()...)
		if err != nil {
			t.Fatalf("retry of acknowledged %s after crash: %v", a.key, err)
		}
		if res.NextExpected != first.Revision+uint64(a.n-1) {
			t.Fatalf("retry of %s: NextExpected %d, want %d", a.key, res.NextExpected, first.Revision+uint64(a.n-1))
		}
	}
	if head, _ := s.Head(ctx); head.Commit != uint64(len(log)) {
		t.Fatalf("retries appended: head %v, log had %d events", head, len(log))
	}
}

func readWholeLog(t *testing.T, s *embedded.Store) []eventstore.RecordedEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var log []eventstore.RecordedEvent
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			t.Fatalf("reading the log after a crash: %v", err)
		}
		log = append(log, b.Events...)
		if b.CaughtUp {
			return log
		}
	}
}

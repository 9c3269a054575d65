package embedded_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
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
// under concurrency (some writers with multi-stream appends) and reports
// every acknowledged append on stdout, then kills it with SIGKILL at a
// random moment. After each kill the parent reopens the store and checks
// that every acknowledged event is present exactly once, that no append is
// present in part, and that the log and its indexes are consistent.
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

// ackedAppend is one part of an append the child reported as acknowledged:
// an Append has one, an AppendMulti several.
type ackedAppend struct {
	stream string
	key    string // event i has ID DeriveEventID(key, i)
	n      int
	parts  int // of the append this part belongs to
}

// ackedWrite is one acknowledged Append or AppendMulti.
type ackedWrite []ackedAppend

func (a ackedAppend) events() []eventstore.EventData {
	evs := make([]eventstore.EventData, a.n)
	for i := range evs {
		evs[i] = crashEvent(a.key, i, a.n, a.parts)
	}
	return evs
}

// crashData is the payload of the child's events. It tells which append
// an event belongs to, so that the parent can find appends that are present
// in part, acknowledged or not. Part p of the append keyed k is keyed k.p.
type crashData struct {
	Key   string `json:"key"`
	I     int    `json:"i"`
	N     int    `json:"n"`     // events of the part
	Parts int    `json:"parts"` // parts of the append
}

func crashEvent(key string, i, n, parts int) eventstore.EventData {
	data, _ := json.Marshal(crashData{Key: key, I: i, N: n, Parts: parts})
	return eventstore.EventData{
		ID:       eventstore.DeriveEventID(key, i),
		Type:     "Crash.v1",
		Data:     data,
		Metadata: []byte(`{"actor":"system"}`),
	}
}

// crashChild appends until it is killed: 32 writers, each on its own streams
// with exact expected revisions, one to three events per append. Every
// fourth writer takes, with each append, a new reservation stream in the
// same AppendMulti (as an account create takes its login).
func crashChild(dir string, cycle int) {
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	for w := 0; w < 32; w++ {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(cycle), uint64(w)))
			next := map[string]eventstore.Revision{}
			for seq := 0; ; seq++ {
				write := childWrite(rng, next, cycle, w, seq)
				if err := appendWrite(s, write, next); err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprint(out, "ack")
				for _, a := range write {
					fmt.Fprintf(out, " %s %s %d", a.stream, a.key, a.n)
				}
				fmt.Fprintln(out)
				out.Flush() // the parent must see the ack before we append more
				mu.Unlock()
			}
		}()
	}
	select {}
}

// childWrite chooses writer w's next append: to one of its four streams,
// with a reservation stream of its own first when w is a multi writer.
func childWrite(rng *rand.Rand, next map[string]eventstore.Revision, cycle, w, seq int) ackedWrite {
	key := fmt.Sprintf("c%d-w%d-%d", cycle, w, seq)
	parts := 1
	if w%4 == 3 {
		parts = 2
	}
	var write ackedWrite
	if parts == 2 {
		write = append(write, ackedAppend{stream: "crash-login-" + key, key: key + ".0", n: 1, parts: parts})
	}
	stream := fmt.Sprintf("crash-c%d-w%d-s%d", cycle, w, rng.IntN(4))
	return append(write, ackedAppend{stream: stream, key: fmt.Sprintf("%s.%d", key, parts-1), n: 1 + rng.IntN(3), parts: parts})
}

// appendWrite appends write, each part with the expectation next holds for
// its stream (NoStream when none), and updates next.
func appendWrite(s *embedded.Store, write ackedWrite, next map[string]eventstore.Revision) error {
	results, err := sendWrite(s, write, func(stream string) eventstore.Revision {
		if expect, ok := next[stream]; ok {
			return expect
		}
		return eventstore.NoStream
	})
	if err != nil {
		return err
	}
	for i, res := range results {
		next[write[i].stream] = eventstore.Exact(res.NextExpected)
	}
	return nil
}

// sendWrite appends write with Append when it has one part, else with
// AppendMulti.
func sendWrite(s *embedded.Store, write ackedWrite, expect func(stream string) eventstore.Revision) ([]eventstore.AppendResult, error) {
	ctx := context.Background()
	parts := make([]eventstore.StreamAppend, len(write))
	for i, a := range write {
		parts[i] = eventstore.StreamAppend{Stream: a.stream, Expect: expect(a.stream), Events: a.events()}
	}
	if len(parts) > 1 {
		return s.AppendMulti(ctx, parts...)
	}
	res, err := s.Append(ctx, parts[0].Stream, parts[0].Expect, parts[0].Events...)
	return []eventstore.AppendResult{res}, err
}

func TestCrashRecovery(t *testing.T) {
	cycles := 8
	if v, err := strconv.Atoi(os.Getenv(crashCyclesEnv)); err == nil && v > 0 {
		cycles = v
	}
	dir := t.TempDir()
	var acked []ackedWrite
	verified := 0 // events of the log checked to be whole appends
	for c := 0; c < cycles; c++ {
		got := runAndKill(t, dir, c)
		if len(got) == 0 {
			t.Fatalf("cycle %d: child acknowledged nothing before the kill", c)
		}
		acked = append(acked, got...)
		verified = verifyAfterCrash(t, dir, acked, verified, c == cycles-1)
		multi := 0
		for _, w := range got {
			if len(w) > 1 {
				multi++
			}
		}
		if multi == 0 {
			t.Fatalf("cycle %d: no multi-stream append acknowledged before the kill", c)
		}
		t.Logf("cycle %d: %d appends (%d multi-stream) acknowledged before SIGKILL, %d in all, all present once and whole",
			c, len(got), multi, len(acked))
	}
}

// runAndKill starts a child on dir, lets it append for a random while after
// its first ack, kills it with SIGKILL and returns what it acknowledged.
func runAndKill(t *testing.T, dir string, cycle int) []ackedWrite {
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
		acked    []ackedWrite
		firstAck = make(chan struct{})
		eof      = make(chan struct{})
	)
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a, ok := parseAck(sc.Text())
			if !ok {
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

// parseAck reads an "ack" line of the child: stream, key and event count of
// each part.
func parseAck(line string) (ackedWrite, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "ack" || (len(f)-1)%3 != 0 {
		return nil, false
	}
	var write ackedWrite
	for i := 1; i < len(f); i += 3 {
		n, err := strconv.Atoi(f[i+2])
		if err != nil {
			return nil, false
		}
		write = append(write, ackedAppend{stream: f[i], key: f[i+1], n: n, parts: (len(f) - 1) / 3})
	}
	return write, true
}

// verifyAfterCrash opens the store and checks the whole log: positions
// dense from 1, every event ID once, stream revisions consecutive and
// matching the stream index (every stream's when last is set, else those
// the log gained since the first verified events), every append after them
// whole, every acknowledged append present; then retries some acknowledged
// appends and checks they are no-ops. It returns the length of the log.
func verifyAfterCrash(t *testing.T, dir string, acked []ackedWrite, verified int, last bool) int {
	t.Helper()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	log := readWholeLog(t, s)
	// The stream index is read back for the streams the new part of the
	// log touched, and for every stream after the last crash: a stream
	// untouched since the check before cannot have changed, and reading
	// every stream after every crash made the test quadratic.
	indexFrom := verified
	if last {
		indexFrom = 0
	}
	byID := checkLogIndexes(t, s, log, indexFrom)
	checkAppendsWhole(t, log[verified:])
	for _, w := range acked {
		for _, a := range w {
			checkAcked(t, byID, a)
		}
	}
	// A client that never saw its ack retries; the retry must not duplicate.
	for _, w := range acked[len(acked)-min(len(acked), 20):] {
		want := make([]eventstore.AppendResult, len(w))
		for i, a := range w {
			last := byID[eventstore.DeriveEventID(a.key, a.n-1)]
			want[i] = eventstore.AppendResult{NextExpected: last.Revision, Position: last.Position}
		}
		got, err := sendWrite(s, w, func(string) eventstore.Revision { return eventstore.Any })
		if err != nil {
			t.Fatalf("retry of acknowledged %s after crash: %v", w[0].key, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("retry of %s: results %+v, want %+v", w[0].key, got, want)
		}
	}
	if head, _ := s.Head(context.Background()); head.Commit != uint64(len(log)) {
		t.Fatalf("retries appended: head %v, log had %d events", head, len(log))
	}
	return len(log)
}

// checkLogIndexes checks positions, IDs and revisions of the log against
// each other, and against the stream index the streams of log[indexFrom:];
// it returns the log by event ID.
func checkLogIndexes(t *testing.T, s *embedded.Store, log []eventstore.RecordedEvent, indexFrom int) map[eventstore.EventID]eventstore.RecordedEvent {
	t.Helper()
	byID := make(map[eventstore.EventID]eventstore.RecordedEvent, len(log))
	nextRev := map[string]uint64{}
	touched := map[string]bool{}
	for i, e := range log {
		if i >= indexFrom {
			touched[e.Stream] = true
		}
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
	for stream := range touched {
		n := nextRev[stream]
		evs, err := s.ReadStream(context.Background(), stream, eventstore.Start, 0)
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		if uint64(len(evs)) != n {
			t.Fatalf("stream %s: index has %d events, log has %d", stream, len(evs), n)
		}
	}
	return byID
}

// checkAppendsWhole walks a piece of the log that starts with an append,
// append by append, acknowledged or not: each must be there whole, every
// event of every part, part after part at consecutive positions. A
// multi-stream append with one part missing fails.
func checkAppendsWhole(t *testing.T, log []eventstore.RecordedEvent) {
	t.Helper()
	decode := func(i int) crashData {
		var d crashData
		if err := json.Unmarshal(log[i].Data, &d); err != nil {
			t.Fatalf("event at %v: %v", log[i].Position, err)
		}
		return d
	}
	for i := 0; i < len(log); {
		first := decode(i)
		base, ok := strings.CutSuffix(first.Key, ".0")
		if !ok || first.I != 0 {
			t.Fatalf("event %s/%d at %v starts no append, yet the append before it is complete", first.Key, first.I, log[i].Position)
		}
		for p := 0; p < first.Parts; p++ {
			key, n := fmt.Sprintf("%s.%d", base, p), 1
			for j := 0; j < n; j, i = j+1, i+1 {
				if i == len(log) {
					t.Fatalf("append %s: the log ends before event %d of part %d of %d", base, j, p, first.Parts)
				}
				d := decode(i)
				if d.Key != key || d.I != j {
					t.Fatalf("append %s: at %v, where event %d of part %d of %d belongs, is %s/%d", base, log[i].Position, j, p, first.Parts, d.Key, d.I)
				}
				n = d.N
			}
		}
	}
}

// checkAcked checks that the events of an acknowledged part are stored in
// its stream as sent.
func checkAcked(t *testing.T, byID map[eventstore.EventID]eventstore.RecordedEvent, a ackedAppend) {
	t.Helper()
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

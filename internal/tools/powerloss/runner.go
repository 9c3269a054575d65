package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"tvsm/internal/tools/powerloss/faultfs"
)

const (
	adminLogin    = "root"
	adminPassword = "power-loss"
	pinMD5        = "81dc9bdb52d04dc20036dbd8313ed055"
	// readyWithin bounds a start, recovery included.
	readyWithin = 2 * time.Minute
)

// runner runs the cycles against one node and one file system.
type runner struct {
	cfg  config
	out  io.Writer
	rng  *rand.Rand
	fs   *faultfs.FS
	mnt  string // the mount point
	data string // the node's data directory, on the mount
	addr string
	log  *os.File // the node's output, outside the mount

	node   *exec.Cmd
	exited chan struct{} // closed when node has exited
	client *http.Client

	provider int64
	next     []int // each writer's next account number
	// startOps is how many file system operations the last start made,
	// from which a recovery fault draws its point.
	startOps int64
	// stopping: the node has been sent SIGTERM under load.
	stopping atomic.Bool

	mu      sync.Mutex
	acked   map[string]ack  // login → its acknowledged create
	inDoubt map[string]bool // logins whose create had no answer when the power went
	// problems are what the checks found: any one fails the run.
	problems []string

	totals totals
}

type ack struct {
	id  int64
	pos uint64 // the log position its events reached
}

type totals struct {
	losses, acked, inDoubt, inDoubtSurvived, retriedAcked int
	lost                                                  int // acknowledged accounts not found
	unreached                                             int // cycles whose trigger did not fire
	slowestReady                                          time.Duration
	kinds                                                 map[string]bool
	resent                                                map[int]int // creates sent again while the power was on, by the status that answered them
}

func newRunner(cfg config, out io.Writer) (*runner, error) {
	r := &runner{cfg: cfg, out: out, rng: newRand(cfg.seed), fs: faultfs.New(),
		mnt: filepath.Join(cfg.work, "mnt"), next: make([]int, cfg.writers),
		acked: map[string]ack{}, inDoubt: map[string]bool{}, startOps: 2000,
		totals: totals{kinds: map[string]bool{}, resent: map[int]int{}}}
	r.data = filepath.Join(r.mnt, "data")
	r.client = &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: cfg.writers + 4}}
	if err := os.MkdirAll(r.mnt, 0o755); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.addr = l.Addr().String()
	l.Close() // the node listens on it across restarts
	if r.log, err = os.Create(filepath.Join(cfg.work, "node.log")); err != nil {
		return nil, err
	}
	if err := r.fs.Mount(r.mnt); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *runner) printf(format string, args ...any) { fmt.Fprintf(r.out, format+"\n", args...) }

func (r *runner) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.problems = append(r.problems, msg)
	r.mu.Unlock()
	r.printf("PROBLEM: %s", msg)
}

func (r *runner) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.problems) > 0
}

// run runs the cycles and prints the figures; false when a check failed.
func (r *runner) run(ctx context.Context) bool {
	began := time.Now()
	faults := plan(r.cfg.cycles, choose(r.cfg.only), r.rng)
	r.printf("power loss: %d cycles, %d writers, seed %d, node %s, data on faultfs at %s", r.cfg.cycles, r.cfg.writers, r.cfg.seed, r.cfg.tvsm, r.data)
	if err := r.start(ctx); err != nil {
		r.problem("first start: %v", err)
		return false
	}
	if err := r.setup(ctx); err != nil {
		r.problem("setup: %v", err)
		return false
	}
	for i, f := range faults {
		if ctx.Err() != nil {
			r.problem("stopped after %d of %d cycles: %v", i, len(faults), context.Cause(ctx))
			break
		}
		r.cycle(ctx, i+1, f)
		if r.failed() {
			break
		}
	}
	found := 0
	if !r.failed() {
		// Once more, with the last creates left in doubt resolved.
		found, _ = r.checkAccounts(ctx)
		r.stop()
	}
	t := r.totals
	r.printf("")
	r.printf("%d cycles, %d power losses, %d fault kinds, in %v (seed %d)", len(faults), t.losses, len(t.kinds), time.Since(began).Round(time.Second), r.cfg.seed)
	r.printf("creates: %d acknowledged at once, %d unanswered when the power went (%d of them had survived), all %d retried with their key acknowledged",
		t.acked, t.inDoubt, t.inDoubtSurvived, t.retriedAcked)
	r.printf("found: %d of %d acknowledged accounts, each once; lost: %d", found, len(r.acked), t.lost)
	if t.unreached > 0 {
		r.printf("%d cycles did not reach their point: the power was cut at the end of the load, or once the node had stopped", t.unreached)
	}
	r.printf("slowest start after a loss: %v; creates sent again while the power was on, by answer: %v", t.slowestReady.Round(time.Millisecond), t.resent)
	if peak := peakMemory(); peak != "" {
		r.printf("the harness's peak resident memory (the node's files are in it): %s", peak)
	}
	if r.failed() {
		r.printf("FAILED: %d problems", len(r.problems))
		return false
	}
	r.printf("PASS")
	return true
}

// cycle runs one load, power loss, restart and check.
func (r *runner) cycle(ctx context.Context, n int, f fault) {
	began := time.Now()
	r.totals.kinds[f.String()] = true
	var t *faultfs.Trigger
	if !f.point.recovery {
		if t = f.trigger(r.rng); t != nil {
			r.fs.Arm(*t)
		}
	}
	acked, inDoubt := r.load(ctx, t != nil, f.point.stop)
	if r.failed() {
		return
	}
	cause := r.fs.Cause()
	if t != nil && !strings.HasPrefix(cause, t.String()) {
		r.totals.unreached++
	}
	slowest, slowestOp := r.fs.Slowest()
	report := r.powerLoss(f.loss)
	r.printf("cycle %d/%d: %s", n, r.cfg.cycles, f)
	r.printf("  slowest file system operation of the load: %v (%v)", slowest.Round(time.Microsecond), slowestOp)
	r.printf("  power cut %s; %d creates acknowledged, %d unanswered; %v", cause, acked, inDoubt, report)
	events := r.checkLog()
	var recovery *faultfs.Trigger
	if f.point.recovery {
		recovery = &faultfs.Trigger{Op: faultfs.OpAny, Nth: 1 + r.rng.IntN(int(max(r.startOps, 1)))}
	}
	took, cut := r.restart(ctx, recovery, f.loss)
	if cut != "" {
		r.printf("  recovery cut %s; the start after it took %v", cut, took.Round(time.Millisecond))
	} else {
		r.printf("  log dense to %d; the node was ready %v after its start", events, took.Round(time.Millisecond))
	}
	if r.failed() {
		return
	}
	found, survived := r.checkAccounts(ctx)
	retried := r.resolve(ctx)
	if r.cfg.verify && !r.failed() {
		r.verify(ctx)
	}
	r.printf("  %d acknowledged accounts found once; of %d unanswered, %d had survived, all %d acknowledged on retry; cycle took %v",
		found, inDoubt, survived, retried, time.Since(began).Round(time.Millisecond))
}

// load runs the writers until the power goes: at the armed trigger, or
// after the load time. With stop, the node is sent SIGTERM after a short
// load, and the power goes while it stops, or once it has stopped. It
// returns the creates acknowledged and those left unanswered.
func (r *runner) load(ctx context.Context, armed, stop bool) (acked, inDoubt int) {
	ctx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	r.stopping.Store(false)
	var wg sync.WaitGroup
	counts := make([]struct{ acked, inDoubt int }, r.cfg.writers)
	for w := range r.cfg.writers {
		wg.Go(func() { counts[w].acked, counts[w].inDoubt = r.writer(ctx, w) })
	}
	// Armed, the load lasts until the trigger fires, or for the load
	// time; else the power is cut at a random time of it.
	length := r.cfg.load
	if !armed || stop {
		length = time.Duration(r.rng.Int64N(int64(r.cfg.load)))
	}
	timer := time.NewTimer(length)
	defer timer.Stop()
	select {
	case <-r.fs.Lost():
	case <-timer.C:
		if stop {
			r.stopNode()
			break
		}
		r.fs.CutPower(fmt.Sprintf("after %v of load", length.Round(time.Millisecond)))
	case <-r.exited:
		r.problem("the node exited while the power was on; see its log")
		r.fs.CutPower("the node exited")
	case <-ctx.Done():
		r.fs.CutPower("stopped")
	}
	r.kill()
	wg.Wait()
	for _, c := range counts {
		acked += c.acked
		inDoubt += c.inDoubt
	}
	r.totals.acked += acked
	r.totals.inDoubt += inDoubt
	return acked, inDoubt
}

// stopNode sends the node SIGTERM under load and waits for the power to
// go while it stops; if it exits first (it must exit 0), the power goes
// then.
func (r *runner) stopNode() {
	r.stopping.Store(true)
	_ = r.node.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.fs.Lost():
	case <-r.exited:
		if code := r.node.ProcessState.ExitCode(); code != 0 {
			r.problem("tvsm serve exited %d on SIGTERM; see %s", code, r.log.Name())
		}
		r.fs.CutPower("once the node had stopped (SIGTERM)")
	case <-time.After(30 * time.Second):
		r.problem("tvsm serve did not exit within 30s of SIGTERM")
		r.fs.CutPower("the node did not stop")
	}
}

// writer creates accounts one after another, as a provider's sync job
// does, until the power goes; a create left without an answer then is in
// doubt. A 409 (the key's attempt in progress) or a 5xx (the node timed
// out, or was not ready) is sent again with its key, as the job would.
func (r *runner) writer(ctx context.Context, w int) (acked, inDoubt int) {
	for {
		login := fmt.Sprintf("pl-%d-%d", w, r.next[w])
		status, body, h, err := r.create(ctx, login)
		lost := isClosed(r.fs.Lost()) || r.stopping.Load()
		switch {
		case err == nil && status/100 == 2:
			id, perr := accountID(body, login)
			if perr != nil {
				r.problem("create %s: %v", login, perr)
				return
			}
			pos, perr := position(h)
			if perr != nil {
				r.problem("create %s: %v", login, perr)
				return
			}
			r.mu.Lock()
			r.acked[login] = ack{id: id, pos: pos}
			r.mu.Unlock()
			r.next[w]++
			acked++
			continue
		case lost || ctx.Err() != nil:
			// The power went while the create was in flight, or the node
			// is stopping (an answer other than 2xx then is the dying or
			// stopping node's).
			r.mu.Lock()
			r.inDoubt[login] = true
			r.mu.Unlock()
			r.next[w]++
			return acked, 1
		case err == nil && (status == http.StatusConflict || status >= 500):
			r.mu.Lock()
			r.totals.resent[status]++
			r.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			continue
		case err != nil:
			r.problem("create %s while the power was on: %v", login, err)
		default:
			r.problem("create %s while the power was on: %d %s", login, status, body)
		}
		return acked, inDoubt
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// create sends the create of login, keyed by it.
func (r *runner) create(ctx context.Context, login string) (int, []byte, http.Header, error) {
	return r.do(ctx, http.MethodPost, "/api/provider/accounts", map[string]any{
		"provider": r.provider, "login": login, "fullname": "Subscriber " + login, "pin_md5": pinMD5,
	}, "create-"+login)
}

func (r *runner) do(ctx context.Context, method, path string, body any, key string) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.addr+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(adminLogin, adminPassword)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

func accountID(body []byte, login string) (int64, error) {
	var acc struct {
		ID    int64
		Login string
	}
	if err := json.Unmarshal(body, &acc); err != nil || acc.ID <= 0 || acc.Login != login {
		return 0, fmt.Errorf("answered %s", body)
	}
	return acc.ID, nil
}

// position reads a write's X-TVSM-Position (the embedded store's is the
// event's sequence number).
func position(h http.Header) (uint64, error) {
	v := h.Get("X-TVSM-Position")
	commit, _, _ := strings.Cut(v, "/")
	pos, err := strconv.ParseUint(commit, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("X-TVSM-Position %q", v)
	}
	return pos, nil
}

// setup creates the provider the accounts belong to.
func (r *runner) setup(ctx context.Context) error {
	status, body, _, err := r.do(ctx, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Power Loss ISP"}, "")
	if err != nil || status/100 != 2 {
		return fmt.Errorf("create the provider: %d %s %v", status, body, err)
	}
	var p struct{ ID int64 }
	if json.Unmarshal(body, &p) != nil || p.ID <= 0 {
		return fmt.Errorf("create the provider: %s", body)
	}
	r.provider = p.ID
	return nil
}

// kill kills the node (SIGKILL) once the power is off, lets the file
// system fail the operations the loss froze, and waits for the node to
// exit.
func (r *runner) kill() {
	_ = r.node.Process.Signal(syscall.SIGKILL)
	// A process that has been sent SIGKILL runs none of its code again;
	// the frozen operations it waits in are killable, but release them
	// too, so that none is left for the unmount to wait on.
	select {
	case <-r.exited:
	case <-time.After(2 * time.Second):
	}
	r.fs.Release()
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.problem("the node did not exit within 30s of SIGKILL")
	}
}

// powerLoss leaves on the mount what loss keeps of the unsynced writes:
// unmount, restore, mount. The node has been killed.
func (r *runner) powerLoss(loss faultfs.Loss) faultfs.Report {
	r.totals.losses++
	if err := r.fs.Unmount(); err != nil {
		r.problem("%v", err)
		return faultfs.Report{}
	}
	report, err := r.fs.Restore(loss, r.rng)
	if err != nil {
		r.problem("%v", err)
	}
	if err := r.fs.Mount(r.mnt); err != nil {
		r.problem("%v", err)
	}
	return report
}

// errPowerLost: the power went during the start.
var errPowerLost = errors.New("the power went during the start")

// start starts the node and waits until it is ready.
func (r *runner) start(ctx context.Context) error {
	cmd := exec.Command(r.cfg.tvsm, "serve", "--http", r.addr, "--data", r.data,
		"--log-format", "json", "--shutdown-timeout", "5s")
	cmd.Env = append(cleanEnv(), "TVSM_ADMIN_LOGIN="+adminLogin, "TVSM_ADMIN_PASSWORD="+adminPassword)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	fmt.Fprintf(r.log, "==== %s: tvsm serve\n", time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	r.node, r.exited = cmd, exited
	deadline := time.After(readyWithin)
	for {
		status, _, _, err := r.do(ctx, http.MethodGet, "/readyz", nil, "")
		if err == nil && status == http.StatusOK {
			return nil
		}
		select {
		case <-r.fs.Lost():
			return errPowerLost
		case <-exited:
			return fmt.Errorf("tvsm serve exited with %v before it was ready; see %s", cmd.ProcessState, r.log.Name())
		case <-deadline:
			return fmt.Errorf("not ready within %v of its start; see %s", readyWithin, r.log.Name())
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// restart starts the node on what the loss left. With a recovery trigger
// the power goes again during the start (cut says where, unless the node
// was ready first): the node is killed, the loss applied again, and the
// node started once more. took is the last start's time to ready.
func (r *runner) restart(ctx context.Context, recovery *faultfs.Trigger, loss faultfs.Loss) (took time.Duration, cut string) {
	if recovery != nil {
		r.fs.Arm(*recovery)
	}
	ops := r.fs.Ops()
	began := time.Now()
	err := r.start(ctx)
	if recovery != nil {
		r.fs.Disarm()
		if isClosed(r.fs.Lost()) {
			err = errPowerLost
		}
	}
	if errors.Is(err, errPowerLost) {
		cut = r.fs.Cause()
		r.kill()
		report := r.powerLoss(loss)
		r.printf("  the power went again, %s: %v", cut, report)
		r.checkLog()
		began = time.Now()
		ops = r.fs.Ops()
		err = r.start(ctx)
	}
	took = time.Since(began)
	if err != nil {
		r.problem("the node does not start after the loss: %v", err)
		return took, cut
	}
	r.startOps = r.fs.Ops() - ops
	r.totals.slowestReady = max(r.totals.slowestReady, took)
	return took, cut
}

// stop stops the node (SIGTERM), which must exit 0, and checks the log
// it leaves.
func (r *runner) stop() {
	_ = r.node.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		if code := r.node.ProcessState.ExitCode(); code != 0 {
			r.problem("tvsm serve exited %d on SIGTERM; see %s", code, r.log.Name())
		}
	case <-time.After(30 * time.Second):
		r.problem("tvsm serve did not exit within 30s of SIGTERM")
		r.kill()
	}
	r.checkLog()
}

// close stops whatever still runs and unmounts. After a failure it first
// copies the node's files out of the mount (which holds them in memory)
// for a look.
func (r *runner) close() {
	if r.node != nil && !isClosed(r.exited) {
		_ = r.node.Process.Kill()
		<-r.exited
	}
	if r.failed() {
		kept := filepath.Join(r.cfg.work, "data")
		err := copyTree(r.data, kept)
		if err == nil {
			err = copyTree(r.data+".master-key", kept+".master-key")
		}
		if err != nil {
			r.printf("copy the data out of the mount: %v", err)
		}
	}
	r.fs.CutPower("the end of the run")
	r.fs.Release()
	if err := r.fs.Unmount(); err != nil {
		r.printf("%v", err)
	}
	r.log.Close()
}

// cleanEnv is the environment without TVSM_* variables, which would
// configure the node.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TVSM_") {
			env = append(env, kv)
		}
	}
	return env
}

// peakMemory returns the process's peak resident memory as Linux reports
// it (VmHWM), or "".
func peakMemory() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

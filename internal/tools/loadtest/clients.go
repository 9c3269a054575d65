package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"tvsm/internal/tools/simulate"
)

// clientPlan says how to start the `tvsm simulate` processes of a
// scenario: devices spread over procs processes, each from its own source
// address, at connectRate devices a second over all of them (0: 2,000 per
// process). Every scenario, whatever the server, starts them this way.
type clientPlan struct {
	binary                      string
	cpus                        string // where the processes run (empty: any CPU)
	devices, procs, connectRate int
	commands                    int    // each client reports once every device of its has had that many (default 1)
	reader                      string // -reader of the clients (empty: their default)
	// profileDir, when set, receives client-N.cpu.pprof of client process N
	// (tvsm simulate -cpu-profile).
	profileDir string
	log        io.Writer
	// args returns what client process i connects to: its arguments
	// beyond those every client gets.
	args func(i int) []string
}

// clients are the `tvsm simulate` processes. Each reports its figures (a
// line of JSON on its standard output) once every device of its has had
// its messages, and holds its connections until stopped.
type clients struct {
	cmds    []*exec.Cmd
	results chan clientReport
	wg      sync.WaitGroup
}

// clientReport is one client's report, or why there is none.
type clientReport struct {
	client int
	result simulate.Result
	err    error
}

// startClients starts p.procs simulate processes, process i with its
// share of the devices and the source address 127.0.0.(2+i).
func startClients(ctx context.Context, p clientPlan) (*clients, error) {
	c := &clients{results: make(chan clientReport, p.procs)}
	per := (p.devices + p.procs - 1) / p.procs
	rate := 2000
	if p.connectRate > 0 {
		rate = max(1, (p.connectRate+p.procs-1)/p.procs)
	}
	for i := range p.procs {
		first, n := i*per, min(per, p.devices-i*per)
		if n <= 0 {
			break
		}
		args := append([]string{"simulate", "--devices", strconv.Itoa(n), "--first", strconv.Itoa(first),
			"--source-ip", fmt.Sprintf("127.0.0.%d", 2+i), "--view-every", "0", "--connect-rate", strconv.Itoa(rate),
			"--stop-after-commands", strconv.Itoa(max(p.commands, 1)), "--hold", "--json", "--progress", "0"}, p.args(i)...)
		if p.reader != "" {
			args = append(args, "--reader", p.reader)
		}
		if p.profileDir != "" {
			args = append(args, "--cpu-profile", filepath.Join(p.profileDir, fmt.Sprintf("client-%d.cpu.pprof", i)))
		}
		cmd := placedCommand(ctx, p.cpus, p.binary, args...)
		cmd.Stderr = p.log
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("loadtest: start client %d: %w", i, err)
		}
		c.cmds = append(c.cmds, cmd)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.read(i, cmd, out)
		}()
	}
	return c, nil
}

// read passes on client i's report, reads its output to the end and waits
// for it to exit.
func (c *clients) read(i int, cmd *exec.Cmd, out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	reported := false
	var first []byte
	for sc.Scan() {
		if reported {
			continue
		}
		reported, first = true, append(first, sc.Bytes()...)
		var r simulate.Result
		err := json.Unmarshal(first, &r)
		if err != nil {
			err = fmt.Errorf("loadtest: client %d output %q: %w", i, first, err)
		}
		c.results <- clientReport{client: i, result: r, err: err}
	}
	err := cmd.Wait()
	if !reported {
		c.results <- clientReport{client: i, err: fmt.Errorf("loadtest: client %d ended without a report: %v", i, err)}
	}
}

// reports waits until every client has reported and returns the reports
// in the clients' order.
func (c *clients) reports(ctx context.Context) ([]simulate.Result, error) {
	out := make([]simulate.Result, len(c.cmds))
	for range c.cmds {
		select {
		case r := <-c.results:
			if r.err != nil {
				return nil, r.err
			}
			out[r.client] = r.result
		case <-ctx.Done():
			return nil, fmt.Errorf("loadtest: waiting for the clients' reports: %w", ctx.Err())
		}
	}
	return out, nil
}

// stop interrupts the clients and waits until they have exited (killing
// any still running after 30 s).
func (c *clients) stop() {
	for _, cmd := range c.cmds {
		_ = cmd.Process.Signal(os.Interrupt) // an error only says it has ended
	}
	// Each client sends one report at most, into a buffer that holds
	// them all: none waits for its report to be read.
	ended := make(chan struct{})
	go func() { c.wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		for _, cmd := range c.cmds {
			_ = cmd.Process.Kill()
		}
		<-ended
	}
}

// earliest returns the earliest non-zero time at gives of a client
// process's report, or zero when none has one.
func earliest(results []simulate.Result, at func(simulate.Result) time.Time) time.Time {
	var first time.Time
	for _, r := range results {
		if t := at(r); !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

// firstDeliveries is, for each message, how long after its send (sent[k])
// the first device of any client process had it; 0 where none reported it.
func firstDeliveries(results []simulate.Result, sent []time.Time) []time.Duration {
	out := make([]time.Duration, len(sent))
	for k := range sent {
		first := earliest(results, func(r simulate.Result) time.Time {
			if k < len(r.FirstByCommand) {
				return r.FirstByCommand[k]
			}
			return time.Time{}
		})
		if !first.IsZero() {
			out[k] = first.Sub(sent[k])
		}
	}
	return out
}

// deliveries returns when the first and the last device had the message,
// after sent.
func deliveries(results []simulate.Result, sent time.Time) (first, last time.Duration) {
	firstAt := earliest(results, func(r simulate.Result) time.Time { return r.FirstReceived })
	if firstAt.IsZero() {
		return 0, 0
	}
	var lastAt time.Time
	for _, r := range results {
		if r.LastReceived.After(lastAt) {
			lastAt = r.LastReceived
		}
	}
	return firstAt.Sub(sent), lastAt.Sub(sent)
}

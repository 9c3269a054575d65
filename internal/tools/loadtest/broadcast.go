// Package loadtest runs load scenarios against a real tvsm node process on
// loopback: `tvsm bench broadcast` and its test. Everything is bounded in
// count and time and stops by itself.
package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"tvsm/internal/platform/schedule"
	"tvsm/internal/tools/simulate"
)

// BroadcastOptions configure the broadcast scenario: Devices virtual
// devices in Procs client processes (each from its own 127.0.0.x source
// address, as one process may hold only so many sockets), one provider-wide
// user_message, and the time until every device has it.
type BroadcastOptions struct {
	// Binary is the tvsm executable: it runs the node (`serve`) and the
	// client processes (`simulate`).
	Binary  string
	Devices int
	Procs   int
	// Timeout bounds the whole scenario (default 5 minutes).
	Timeout time.Duration
	// Log receives progress lines (default io.Discard).
	Log io.Writer
}

// BroadcastResult is what the scenario measured.
type BroadcastResult struct {
	Devices, Procs, Connected, Delivered int
	ConnectTook                          time.Duration // from first login to all connected
	FirstDelivery, AllDelivered          time.Duration // after the send request started
	MessagesPerSecond                    float64
	// Server memory, read from its /metrics after the accounts existed and
	// again with every device connected and idle, each time after a garbage
	// collection: the resident set, and the Go memory in use (heap spans and
	// goroutine stacks; kernel socket buffers are in neither).
	RSSBefore, RSSAfter   float64
	HeapBefore, HeapAfter float64
}

// RSSPerDevice is the resident memory each idle connection added.
func (r BroadcastResult) RSSPerDevice() float64 {
	return (r.RSSAfter - r.RSSBefore) / float64(max(r.Connected, 1))
}

// HeapPerDevice is the Go memory (heap and stacks) each idle connection
// added.
func (r BroadcastResult) HeapPerDevice() float64 {
	return (r.HeapAfter - r.HeapBefore) / float64(max(r.Connected, 1))
}

// String reports r in a few lines.
func (r BroadcastResult) String() string {
	return fmt.Sprintf("devices %d in %d client processes: %d connected in %v\n"+
		"user_message to the provider: first device after %v, all %d devices after %v (%.0f messages/s)\n"+
		"server memory per idle connected device: %.1f KB resident, %.1f KB Go heap and stacks",
		r.Devices, r.Procs, r.Connected, r.ConnectTook.Round(time.Millisecond),
		r.FirstDelivery.Round(time.Microsecond), r.Delivered, r.AllDelivered.Round(time.Microsecond), r.MessagesPerSecond,
		r.RSSPerDevice()/1024, r.HeapPerDevice()/1024)
}

const benchPassword = "bench-admin-password"

// Broadcast runs the scenario.
func Broadcast(ctx context.Context, o BroadcastOptions) (BroadcastResult, error) {
	if o.Devices <= 0 || o.Procs <= 0 || o.Binary == "" {
		return BroadcastResult{}, errors.New("loadtest: Binary, Devices and Procs are required")
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	srv, err := startServer(ctx, o.Binary, o.Log)
	if err != nil {
		return BroadcastResult{}, err
	}
	defer srv.stop()
	res := BroadcastResult{Devices: o.Devices, Procs: o.Procs}

	provider, tariff, err := srv.catalog(ctx)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(o.Log, "creating %d accounts\n", o.Devices)
	if err := createAccounts(ctx, srv.url, provider, tariff, o.Devices); err != nil {
		return res, err
	}
	if res.RSSBefore, res.HeapBefore, err = srv.memory(ctx); err != nil {
		return res, err
	}

	started := time.Now()
	clients, err := startClients(ctx, o, srv.url, provider)
	if err != nil {
		return res, err
	}
	defer clients.stop()
	if res.Connected, err = srv.waitConnected(ctx, o.Devices, o.Log); err != nil {
		return res, err
	}
	res.ConnectTook = time.Since(started)
	schedule.Sleep(ctx, 3*time.Second) // let the logins' garbage and buffers settle
	if res.RSSAfter, res.HeapAfter, err = srv.memory(ctx); err != nil {
		return res, err
	}

	fmt.Fprintf(o.Log, "%d devices connected; sending the message\n", res.Connected)
	sent := time.Now()
	if err := srv.sendMessage(ctx, provider); err != nil {
		return res, err
	}
	results, err := clients.wait()
	if err != nil {
		return res, err
	}
	var first, last time.Time
	for _, r := range results {
		res.Delivered += r.Received
		if !r.FirstReceived.IsZero() && (first.IsZero() || r.FirstReceived.Before(first)) {
			first = r.FirstReceived
		}
		if r.LastReceived.After(last) {
			last = r.LastReceived
		}
	}
	if res.Delivered == 0 {
		return res, errors.New("loadtest: no device received the message")
	}
	res.FirstDelivery, res.AllDelivered = first.Sub(sent), last.Sub(sent)
	res.MessagesPerSecond = float64(res.Delivered) / res.AllDelivered.Seconds()
	return res, nil
}

// server is the node under test, a `tvsm serve` child process.
type server struct {
	cmd  *exec.Cmd
	url  string
	dir  string
	http *http.Client
	done chan error
}

// startServer starts `tvsm serve` on a free loopback port with a fresh data
// directory and waits until it is ready.
func startServer(ctx context.Context, binary string, log io.Writer) (*server, error) {
	dir, err := os.MkdirTemp("", "tvsm-bench-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// Thousands of devices come from each of a few loopback addresses,
	// past the per-address caps made for the internet.
	cmd := exec.Command(binary, "serve", "--http", addr, "--data", filepath.Join(dir, "data"), "--log-level", "warn",
		"--max-connections-per-address", "0", "--max-websockets-per-address", "0")
	cmd.Env = append(os.Environ(), "TVSM_ADMIN_LOGIN=admin", "TVSM_ADMIN_PASSWORD="+benchPassword)
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: start server: %w", err)
	}
	s := &server{cmd: cmd, url: "http://" + addr, dir: dir, http: &http.Client{Timeout: 30 * time.Second}, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	for {
		if resp, err := s.http.Get(s.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("loadtest: server exited: %v", err)
		case <-ctx.Done():
			s.stop()
			return nil, fmt.Errorf("loadtest: server not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the server (SIGINT, then kill after 10 s) and removes its data.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// admin sends a JSON request with the bench admin's credentials and decodes
// the answer into out.
func (s *server) admin(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, rd)
	if err != nil {
		return err
	}
	req.SetBasicAuth("admin", benchPassword)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("loadtest: %s %s: %d %s", method, path, resp.StatusCode, msg)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// catalog creates the provider and the tariff of the scenario.
func (s *server) catalog(ctx context.Context) (provider, tariff int64, err error) {
	var p, t struct {
		ID int64 `json:"id"`
	}
	if err := s.admin(ctx, http.MethodPost, "/api/admin/providers", map[string]any{"name": "bench", "enabled": true}, &p); err != nil {
		return 0, 0, err
	}
	if err := s.admin(ctx, http.MethodPost, "/api/admin/tariffs", map[string]any{"provider": p.ID, "name": "bench", "enabled": true}, &t); err != nil {
		return 0, 0, err
	}
	return p.ID, t.ID, nil
}

// createAccounts creates one account per device, subscribed to tariff.
func createAccounts(ctx context.Context, url string, provider, tariff int64, n int) error {
	sim, err := simulate.New(simulate.Options{URL: url, Provider: provider, Devices: n, Password: "bench",
		AdminUser: "admin", AdminPassword: benchPassword, Tariff: tariff})
	if err != nil {
		return err
	}
	return sim.Setup(ctx)
}

// metrics reads unlabelled values from the server's /metrics.
func (s *server) metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		for _, want := range names {
			if name == want {
				if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
					out[name] = v
				}
			}
		}
	}
	for _, want := range names {
		if _, ok := out[want]; !ok {
			return nil, fmt.Errorf("loadtest: /metrics has no %s", want)
		}
	}
	return out, sc.Err()
}

// memory returns the server's resident set and the Go memory in use (heap
// spans and goroutine stacks) in bytes, after a garbage collection (asked
// for through the profiler), so that garbage of the logins is not counted.
func (s *server) memory(ctx context.Context) (rss, goMem float64, err error) {
	if err := s.admin(ctx, http.MethodGet, "/api/admin/debug/pprof/heap?gc=1", nil, nil); err != nil {
		return 0, 0, err
	}
	m, err := s.metrics(ctx, "process_resident_memory_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes")
	if err != nil {
		return 0, 0, err
	}
	return m["process_resident_memory_bytes"], m["go_memstats_heap_inuse_bytes"] + m["go_memstats_stack_inuse_bytes"], nil
}

// ConnectionsMetric is the gauge of connected devices the node exports.
const ConnectionsMetric = "tvsm_ws_connections"

// waitConnected polls the server until n devices are connected.
func (s *server) waitConnected(ctx context.Context, n int, log io.Writer) (int, error) {
	last := time.Now()
	for {
		m, err := s.metrics(ctx, ConnectionsMetric)
		if err != nil {
			return 0, err
		}
		got := int(m[ConnectionsMetric])
		if got >= n {
			return got, nil
		}
		if time.Since(last) > 2*time.Second {
			fmt.Fprintf(log, "%d/%d devices connected\n", got, n)
			last = time.Now()
		}
		if !schedule.Sleep(ctx, 100*time.Millisecond) {
			return got, fmt.Errorf("loadtest: %d of %d devices connected: %w", got, n, ctx.Err())
		}
	}
}

// sendMessage sends one user_message to every device of the provider.
func (s *server) sendMessage(ctx context.Context, provider int64) error {
	var out struct {
		Response bool `json:"response"`
	}
	body := map[string]any{"ids": []int64{provider}, "commands": []map[string]any{
		{"command": "user_message", "type": "notify", "text": "benchmark broadcast", "delay": 5},
	}}
	if err := s.admin(ctx, http.MethodPost, "/api/provider/commands/send/providers?broadcast=false", body, &out); err != nil {
		return err
	}
	if !out.Response {
		return errors.New("loadtest: send answered response false")
	}
	return nil
}

// clients are the `tvsm simulate` processes.
type clients struct {
	cmds []*exec.Cmd
	outs []*bytes.Buffer
	wg   sync.WaitGroup
	errs []error
}

// startClients starts o.Procs simulate processes, each with its share of
// the devices and its own source address 127.0.0.(2+i).
func startClients(ctx context.Context, o BroadcastOptions, url string, provider int64) (*clients, error) {
	c := &clients{errs: make([]error, o.Procs)}
	per := (o.Devices + o.Procs - 1) / o.Procs
	for i := range o.Procs {
		first, n := i*per, min(per, o.Devices-i*per)
		if n <= 0 {
			break
		}
		cmd := exec.CommandContext(ctx, o.Binary, "simulate", "--url", url, "--provider", strconv.FormatInt(provider, 10),
			"--devices", strconv.Itoa(n), "--first", strconv.Itoa(first), "--password", "bench",
			"--source-ip", fmt.Sprintf("127.0.0.%d", 2+i), "--view-every", "0", "--connect-rate", "2000",
			"--stop-after-commands", "1", "--json", "--progress", "0")
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, o.Log
		if err := cmd.Start(); err != nil {
			c.stop()
			return nil, fmt.Errorf("loadtest: start client %d: %w", i, err)
		}
		c.cmds, c.outs = append(c.cmds, cmd), append(c.outs, out)
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.errs[i] = cmd.Wait() }()
	}
	return c, nil
}

// wait waits for every client and returns their results.
func (c *clients) wait() ([]simulate.Result, error) {
	c.wg.Wait()
	var out []simulate.Result
	for i, buf := range c.outs {
		// A client that counted errors exits non-zero after printing its
		// figures, errors included: those are the result.
		var r simulate.Result
		if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
			if c.errs[i] != nil {
				return nil, fmt.Errorf("loadtest: client %d: %w", i, c.errs[i])
			}
			return nil, fmt.Errorf("loadtest: client %d output %q: %w", i, buf.String(), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// stop interrupts clients still running.
func (c *clients) stop() {
	for _, cmd := range c.cmds {
		_ = cmd.Process.Signal(os.Interrupt) // an error only says it has ended
	}
	c.wg.Wait()
}

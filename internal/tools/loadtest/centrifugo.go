package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"tvsm/internal/platform/schedule"
)

// The Centrifugo side of the broadcast scenario: the reference real-time
// server in Go (https://github.com/centrifugal/centrifugo), one node, its
// devices subscribed to one channel, one publication through its HTTP
// API. Its clients are the same `tvsm simulate` processes as the tvsm
// side's, in their Centrifugo mode, and it is measured the same way.

// centrifugoChannel is the channel every device subscribes to.
const centrifugoChannel = "bench"

// centrifugoAPIKey is the HTTP API key of the run's Centrifugo.
const centrifugoAPIKey = "bench-api-key"

// centrifugoConfig is the configuration a run starts Centrifugo with:
// listening on addr (host:port) only; one node on the memory engine (its
// default broker: no Redis, no other node); clients connect without a
// token and may subscribe to channels without a namespace, whose defaults
// keep no history and no presence (so no recovery, no join/leave
// messages); the HTTP API with a key; Prometheus metrics (for its memory),
// the health check (to know it is up) and the profiler (to collect
// garbage before memory is read, and for CPU profiles); no usage
// statistics sent out. Everything else, websocket buffers included, is
// as Centrifugo ships.
func centrifugoConfig(addr string) ([]byte, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(map[string]any{
		"http_server": map[string]any{"address": host, "port": p},
		"log":         map[string]any{"level": "error"},
		"engine":      map[string]any{"type": "memory"},
		"client":      map[string]any{"allow_anonymous_connect_without_token": true},
		"channel": map[string]any{"without_namespace": map[string]any{
			"allow_subscribe_for_client": true, "allow_subscribe_for_anonymous": true,
			"history_size": 0, "presence": false, "join_leave": false,
		}},
		"http_api":    map[string]any{"key": centrifugoAPIKey},
		"prometheus":  map[string]any{"enabled": true},
		"health":      map[string]any{"enabled": true},
		"debug":       map[string]any{"enabled": true},
		"usage_stats": map[string]any{"disabled": true},
	}, "", "  ")
}

// centrifugo is a Centrifugo server under test, a child process.
type centrifugo struct {
	*process
	dir  string
	url  string
	http *http.Client
}

// startCentrifugo starts binary on a free loopback port with a fresh
// configuration and waits until it is healthy.
func startCentrifugo(ctx context.Context, binary, cpus string, log io.Writer) (*centrifugo, error) {
	dir, err := os.MkdirTemp("", "tvsm-bench-centrifugo-")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err == nil {
		var conf []byte
		if conf, err = centrifugoConfig(addr); err == nil {
			err = os.WriteFile(filepath.Join(dir, "config.json"), conf, 0o644)
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p, err := startProcessOutput(binary, cpus, log, log, nil, "--config", filepath.Join(dir, "config.json"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c := &centrifugo{process: p, dir: dir, url: "http://" + addr, http: &http.Client{Timeout: 30 * time.Second}}
	for {
		if resp, err := c.http.Get(c.url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		select {
		case <-p.exited:
			c.stop()
			return nil, fmt.Errorf("loadtest: centrifugo exited: %v", p.err)
		case <-ctx.Done():
			c.stop()
			return nil, fmt.Errorf("loadtest: centrifugo not healthy: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the process and removes its configuration.
func (c *centrifugo) stop() {
	c.process.stop()
	_ = os.RemoveAll(c.dir)
}

// api calls method of Centrifugo's HTTP API with body and decodes the
// result into out (when not nil). An error in the answer is an error.
func (c *centrifugo) api(ctx context.Context, method string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/api/"+method, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", centrifugoAPIKey)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("loadtest: centrifugo %s: %d %s", method, resp.StatusCode, answer)
	}
	var envelope struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(answer, &envelope); err != nil {
		return fmt.Errorf("loadtest: centrifugo %s answered %q: %w", method, answer, err)
	}
	if envelope.Error != nil {
		return fmt.Errorf("loadtest: centrifugo %s: error %d: %s", method, envelope.Error.Code, envelope.Error.Message)
	}
	if out == nil || len(envelope.Result) == 0 {
		return nil
	}
	return json.Unmarshal(envelope.Result, out)
}

// subscribers is how many clients are subscribed to the channel now.
func (c *centrifugo) subscribers(ctx context.Context) (int, error) {
	var out struct {
		Channels map[string]struct {
			NumClients int `json:"num_clients"`
		} `json:"channels"`
	}
	if err := c.api(ctx, "channels", map[string]any{"pattern": centrifugoChannel}, &out); err != nil {
		return 0, err
	}
	return out.Channels[centrifugoChannel].NumClients, nil
}

// waitSubscribed polls until n clients are subscribed (at least n; none
// when n is 0).
func (c *centrifugo) waitSubscribed(ctx context.Context, n int, log io.Writer) error {
	last := time.Now()
	for {
		got, err := c.subscribers(ctx)
		if err != nil {
			return err
		}
		if got >= n && (n > 0 || got == 0) {
			return nil
		}
		if time.Since(last) > 2*time.Second {
			fmt.Fprintf(log, "%d/%d clients subscribed\n", got, n)
			last = time.Now()
		}
		if !schedule.Sleep(ctx, 100*time.Millisecond) {
			return fmt.Errorf("loadtest: %d clients subscribed, waiting for %d: %w", got, n, ctx.Err())
		}
	}
}

// memory reads Centrifugo's memory after a garbage collection, as a
// node's is read.
func (c *centrifugo) memory(ctx context.Context) (memoryReading, error) {
	if err := c.get(ctx, "/debug/pprof/heap?gc=1", io.Discard); err != nil {
		return memoryReading{}, err
	}
	return readMemory(ctx, c.http, c.url, nil)
}

// get copies the answer of GET path into w.
func (c *centrifugo) get(ctx context.Context, path string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+path, nil)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("loadtest: centrifugo GET %s: %d", path, resp.StatusCode)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// benchCommand is what the broadcast sends on both sides: on tvsm's, the
// user_message command the provider sends; on Centrifugo's, the same
// object as the publication's data.
var benchCommand = map[string]any{"command": "user_message", "type": "notify", "text": "benchmark broadcast", "delay": 5}

// publish publishes benchCommand in the channel.
func (c *centrifugo) publish(ctx context.Context) error {
	return c.api(ctx, "publish", map[string]any{"channel": centrifugoChannel, "data": benchCommand}, nil)
}

// profile starts a CPU profile into dir (nothing when dir is empty) and
// returns the function that waits for it.
func (c *centrifugo) profile(ctx context.Context, dir string, seconds int, log io.Writer) func() error {
	if dir == "" {
		return func() error { return nil }
	}
	errs := make(chan error, 1)
	go func() {
		path := filepath.Join(dir, "centrifugo.cpu.pprof")
		f, err := os.Create(path)
		if err != nil {
			errs <- err
			return
		}
		err = c.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), f)
		errs <- errors.Join(err, f.Close())
	}()
	schedule.Sleep(ctx, 200*time.Millisecond) // the profile starts before the publication
	return func() error {
		err := <-errs
		if err == nil {
			fmt.Fprintf(log, "CPU profile of the broadcast in %s\n", dir)
		}
		return err
	}
}

// broadcastCentrifugo runs the broadcast scenario against Centrifugo, step
// by step as Broadcast does against one node: the devices connect (and
// subscribe), hang up and connect again (with FreshNodes, to a Centrifugo
// started again); memory is read before and after that second
// connection; one publication (or Messages) goes to the channel; the
// clients report when every device has it (them all).
func broadcastCentrifugo(ctx context.Context, o BroadcastOptions) (BroadcastResult, error) {
	if o.Nodes > 1 {
		return BroadcastResult{}, errors.New("loadtest: Centrifugo runs on one node here")
	}
	c, err := startCentrifugo(ctx, o.Centrifugo, o.Placement.Servers, o.Log)
	if err != nil {
		return BroadcastResult{}, err
	}
	defer func() { c.stop() }() // c may be started again
	res := BroadcastResult{Devices: o.Devices, Procs: o.Procs, Nodes: 1, PerNode: make([]NodeMemory, 1),
		Messages: o.Messages, Interval: o.Interval}
	plan := clientPlan{binary: o.Binary, cpus: o.Placement.Clients, devices: o.Devices, procs: o.Procs, connectRate: o.ConnectRate, commands: o.Messages, log: o.Log,
		reader: o.ClientReader,
		args:   func(int) []string { return []string{"--url", c.url, "--centrifugo-channel", centrifugoChannel} }}
	connectAll := func() (*clients, error) {
		cl, err := startClients(ctx, plan)
		if err != nil {
			return nil, err
		}
		if err := c.waitSubscribed(ctx, o.Devices, o.Log); err != nil {
			cl.stop()
			return nil, err
		}
		schedule.Sleep(ctx, o.Settle)
		return cl, nil
	}
	var first0, first1, before, after memoryReading
	if first0, err = c.memory(ctx); err != nil {
		return res, err
	}
	started := time.Now()
	warmup, err := connectAll()
	if err != nil {
		return res, err
	}
	res.FirstConnectTook = time.Since(started)
	first1, err = c.memory(ctx)
	warmup.stop()
	if err != nil {
		return res, err
	}
	if err := c.waitSubscribed(ctx, 0, o.Log); err != nil {
		return res, err
	}
	if o.FreshNodes {
		fmt.Fprintln(o.Log, "starting Centrifugo again")
		c.stop()
		if c, err = startCentrifugo(ctx, o.Centrifugo, o.Placement.Servers, o.Log); err != nil {
			return res, err
		}
	}
	schedule.Sleep(ctx, o.Settle)
	if before, err = c.memory(ctx); err != nil {
		return res, err
	}
	started = time.Now()
	clients, err := connectAll()
	if err != nil {
		return res, err
	}
	defer clients.stop()
	res.ConnectTook = time.Since(started)
	if after, err = c.memory(ctx); err != nil {
		return res, err
	}
	if res.Connected, err = c.subscribers(ctx); err != nil {
		return res, err
	}
	res.PerNode[0] = NodeMemory{Connected: res.Connected, RSSBefore: before.rss, RSSAfter: after.rss, KeptBefore: before.kept,
		KeptAfter: after.kept, HeapBefore: before.heap, HeapAfter: after.heap, FirstRSSBefore: first0.rss, FirstRSSAfter: first1.rss}
	res.RSSBefore, res.RSSAfter, res.KeptBefore, res.KeptAfter = before.rss, after.rss, before.kept, after.kept
	res.HeapBefore, res.HeapAfter = before.heap, after.heap

	profile := c.profile(ctx, o.ProfileDir, o.ProfileSeconds, o.Log)
	fmt.Fprintf(o.Log, "%d clients subscribed; publishing\n", res.Connected)
	cpuBefore := sampleCPU(nil, []*process{c.process}, clients)
	sent, err := sendMessages(ctx, o, c.publish)
	if err != nil {
		return res, err
	}
	results, err := clients.reports(ctx)
	if err != nil {
		return res, err
	}
	res.CPU = sampleCPU(nil, []*process{c.process}, clients).since(cpuBefore)
	res.Placement = placementOf(nil, []*process{c.process}, clients)
	if err := profile(); err != nil {
		return res, err
	}
	if err := res.delivered(results, sent); err != nil {
		return res, err
	}
	res.NodeDelivered = []time.Duration{res.AllDelivered}
	return res, nil
}

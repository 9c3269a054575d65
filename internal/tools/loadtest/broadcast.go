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
	"time"

	"tvsm/eventstore/sealed"
	"tvsm/internal/platform/schedule"
	"tvsm/internal/tools/simulate"
)

// BroadcastOptions configure the broadcast scenario: Devices virtual
// devices in Procs client processes (each from its own 127.0.0.x source
// address, as one process may hold only so many sockets), one provider-wide
// user_message (or Messages of them), and the time until every device has
// it.
type BroadcastOptions struct {
	// Binary is the tvsm executable: it runs the nodes (`serve`), the
	// event store double (`esdb-double`) and the client processes
	// (`simulate`).
	Binary  string
	Devices int
	Procs   int
	// Nodes is how many nodes serve the devices. One (the default) runs on
	// the embedded event store; more run on one protocol double of
	// EventStoreDB, and client process i connects to node i mod Nodes.
	Nodes int
	// Backend is the event store of the nodes: "embedded" or "esdb" (the
	// protocol double). Empty: embedded for one node, esdb for more. One
	// node on the double is the baseline of a cluster's cost per message:
	// the same store, no other node.
	Backend string
	// ConnectRate is how many devices a second start connecting, over all
	// client processes (default 2,000 per process). A first login binds the
	// device with appends to the event store: on a cluster on the double,
	// keep it below what the double takes, or logins queue up and time out.
	ConnectRate int
	// ProfileDir, when set, receives a CPU profile of every node
	// (node-N.cpu.pprof) taken over the broadcast, and one of every client
	// process (client-N.cpu.pprof) from its first device having the message
	// until its last.
	ProfileDir string
	// ProfileSeconds is how long those profiles run (default 5, or the
	// sends' span and 2 s more when that is longer).
	ProfileSeconds int
	// Messages is how many user_messages are sent (default 1), Interval
	// apart (default 500 ms). The CPU figures then cover them all: one
	// broadcast to 10,000 devices lasts about a tenth of a second, too short
	// a window to read CPU time well or to profile. Interval should exceed
	// a broadcast's delivery, so that each message meets quiet servers.
	Messages int
	Interval time.Duration
	// Settle is how long the scenario waits once the devices have
	// connected, and again once they have disconnected, for their garbage
	// and socket buffers to settle before memory is read (default 3 s).
	// Tests that check deliveries rather than memory shorten it.
	Settle time.Duration
	// Timeout bounds the whole scenario (default 5 minutes).
	Timeout time.Duration
	// Log receives progress lines (default io.Discard).
	Log io.Writer
	// FreshNodes starts every node again (on its data) once the devices
	// have logged in, connected and hung up, so that their second
	// connection is measured on fresh processes: on a process that has
	// held them, the pages their first connections freed are reused and
	// the resident set hardly grows.
	FreshNodes bool
	// ClientReader is how the client processes read their websockets
	// (`tvsm simulate -reader`: epoll or goroutine; empty: its default).
	ClientReader string
	// NoReceipts has the devices send no acknowledgement and no
	// confirmation (`tvsm simulate -no-receipts`): what receipts cost the
	// nodes, measured against the same run with them.
	NoReceipts bool
	// Placement puts the servers and the client processes on CPUs (empty:
	// anywhere).
	Placement Placement
	// Centrifugo, when set, is a Centrifugo executable: the scenario then
	// runs against it (one node) instead of tvsm, the same client
	// processes subscribing to one channel, the message published there.
	Centrifugo string
}

// BroadcastResult is what the scenario measured.
type BroadcastResult struct {
	Devices, Procs, Nodes, Connected int
	// Messages is how many were sent, Interval apart; Reached is how many
	// devices had them all, and Delivered how many messages they had.
	Messages, Reached, Delivered int
	Interval                     time.Duration
	FirstConnectTook             time.Duration // from the first logins to all connected
	ConnectTook                  time.Duration // the same devices, known now, connecting again
	// FirstDelivery and AllDelivered are when the first and the last
	// device had the (last) message, after its send request started.
	FirstDelivery, AllDelivered time.Duration
	// FirstDeliveries is when the first device had each message, after
	// that message's send started: one figure per message, where
	// FirstDelivery is the last message's alone.
	FirstDeliveries   []time.Duration
	MessagesPerSecond float64 // the last message's devices over AllDelivered
	// Server memory, read from its /metrics with the devices known but
	// none connected and again with every device connected and idle
	// (their second connection), each time after a garbage collection: the
	// resident set; the free heap spans the Go runtime keeps (resident,
	// but in use by nothing: the runtime keeps up to a heap's worth of them
	// after a collection, so new connections fill them before the
	// resident set grows); and the Go memory in use (heap spans and
	// goroutine stacks). Kernel socket buffers are in none.
	// Summed over the nodes.
	RSSBefore, RSSAfter   float64
	KeptBefore, KeptAfter float64
	HeapBefore, HeapAfter float64
	// PerNode is each node's share of the devices and its memory.
	PerNode []NodeMemory
	// Setup is how long creating the accounts took.
	Setup time.Duration
	// CPU is where processor time went from the (first) send until every
	// device had the (last) message.
	CPU CPU
	// NodeDelivered is when the last device of each node's clients had the
	// message, after the send request started.
	NodeDelivered []time.Duration
	// Appends and EventsAppended are the nodes' appends to the event store
	// and the events they held, summed, from the wait for quiet servers
	// until every device had the message: claims and receipts, and what
	// the connections left to append. On a shared store every node
	// receives every one of those events.
	Appends, EventsAppended int
	// Quiet is how long the nodes and the double took, once every device
	// was connected, to fall quiet (quietLimit at most).
	Quiet time.Duration
	// ClaimConflicts and ClaimFailures sum the nodes' delivery claims that
	// lost to another node's and the delivery rounds given up (then
	// retried a second later), over the whole run.
	ClaimConflicts, ClaimFailures int
	// NoReceipts says the devices sent no acknowledgement (the option).
	NoReceipts bool
	// Placement is the CPUs the processes could run on, read from /proc
	// (Cpus_allowed_list) as the broadcast ended.
	Placement Placement
	// SendClaims counts the sends whose append carried the claim of the
	// node that took them (the rest were claimed in appends of their own).
	SendClaims int
}

// NodeMemory is one node's connected devices and memory, as
// BroadcastResult's totals, and its resident set before and after the
// devices' first login and connection: that growth also holds what the
// node keeps of every device of the cluster (its read model), not only of
// those it holds.
type NodeMemory struct {
	Connected                     int
	RSSBefore, RSSAfter           float64
	KeptBefore, KeptAfter         float64
	HeapBefore, HeapAfter         float64
	FirstRSSBefore, FirstRSSAfter float64
}

// FirstRSSPerDevice is the resident memory the first login and
// connection of the node's devices added, per device it holds.
func (m NodeMemory) FirstRSSPerDevice() float64 {
	return (m.FirstRSSAfter - m.FirstRSSBefore) / float64(max(m.Connected, 1))
}

// RSSPerDevice is the resident memory each idle connection added to it.
func (m NodeMemory) RSSPerDevice() float64 {
	return (m.RSSAfter - m.RSSBefore) / float64(max(m.Connected, 1))
}

// HeapPerDevice is the Go memory (heap and stacks) each idle connection
// added to it.
func (m NodeMemory) HeapPerDevice() float64 {
	return (m.HeapAfter - m.HeapBefore) / float64(max(m.Connected, 1))
}

// RSSPerDevice is the resident memory each idle connection added.
func (r BroadcastResult) RSSPerDevice() float64 {
	return (r.RSSAfter - r.RSSBefore) / float64(max(r.Connected, 1))
}

// UsedPerDevice is the resident memory each idle connection added, free
// heap spans the runtime keeps left out: what the process uses, whether
// the connections took new pages or filled kept ones.
func (r BroadcastResult) UsedPerDevice() float64 {
	return ((r.RSSAfter - r.KeptAfter) - (r.RSSBefore - r.KeptBefore)) / float64(max(r.Connected, 1))
}

// HeapPerDevice is the Go memory (heap and stacks) each idle connection
// added.
func (r BroadcastResult) HeapPerDevice() float64 {
	return (r.HeapAfter - r.HeapBefore) / float64(max(r.Connected, 1))
}

// FirstDeliveryMedian is the median of FirstDeliveries: the time to the
// first device over all the messages of the run.
func (r BroadcastResult) FirstDeliveryMedian() time.Duration {
	if len(r.FirstDeliveries) == 0 {
		return r.FirstDelivery
	}
	s := spreadOf(millisOf(r.FirstDeliveries))
	return time.Duration(s.median * float64(time.Millisecond))
}

// millisOf returns ds in milliseconds.
func millisOf(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = millis(d)
	}
	return out
}

// ServerCPUPerMessage is the processor time of the nodes (with the
// double's) per delivered message.
func (r BroadcastResult) ServerCPUPerMessage() time.Duration {
	return (r.CPU.Nodes + r.CPU.Double) / time.Duration(max(r.Delivered, 1))
}

// NodeCPUPerMessage is the processor time of the nodes alone (the
// double's left out) per delivered message.
func (r BroadcastResult) NodeCPUPerMessage() time.Duration {
	return r.CPU.Nodes / time.Duration(max(r.Delivered, 1))
}

// ClientCPUPerMessage is the processor time of the client processes per
// delivered message.
func (r BroadcastResult) ClientCPUPerMessage() time.Duration {
	return r.CPU.Clients / time.Duration(max(r.Delivered, 1))
}

// String reports r in a few lines.
func (r BroadcastResult) String() string {
	what := "user_message to the provider"
	if r.Messages > 1 {
		what = fmt.Sprintf("%d user_messages to the provider, %v apart, %d delivered; the last", r.Messages, r.Interval, r.Delivered)
	}
	s := fmt.Sprintf("devices %d in %d client processes on %d node(s): accounts created in %v, first connected in %v, %d connected again in %v\n"+
		"%s: first device after %v, all %d devices after %v (%.0f messages/s)\n"+
		"CPU per delivered message: server %.1f µs (nodes %.1f µs), clients %.1f µs\n"+
		"server memory per idle connected device: %.1f KB resident (%.1f KB without the free heap kept), %.1f KB Go heap and stacks",
		r.Devices, r.Procs, r.Nodes, r.Setup.Round(time.Millisecond), r.FirstConnectTook.Round(time.Millisecond),
		r.Connected, r.ConnectTook.Round(time.Millisecond),
		what, r.FirstDelivery.Round(time.Microsecond), r.Reached, r.AllDelivered.Round(time.Microsecond), r.MessagesPerSecond,
		micros(r.ServerCPUPerMessage()), micros(r.NodeCPUPerMessage()), micros(r.ClientCPUPerMessage()),
		r.RSSPerDevice()/1024, r.UsedPerDevice()/1024, r.HeapPerDevice()/1024)
	if len(r.FirstDeliveries) > 1 {
		f := spreadOf(millisOf(r.FirstDeliveries))
		s += fmt.Sprintf("\nfirst device over the %d messages, min / median / max: %.2f / %.2f / %.2f ms (in order:", len(r.FirstDeliveries), f.min, f.median, f.max)
		for _, ms := range millisOf(r.FirstDeliveries) {
			s += fmt.Sprintf(" %.2f", ms)
		}
		s += ")"
	}
	s += fmt.Sprintf("\nappends from the wait for quiet to the last delivery: %d, holding %d events", r.Appends, r.EventsAppended)
	s += fmt.Sprintf("\nthe servers fell quiet %v after the devices connected", r.Quiet.Round(100*time.Millisecond))
	s += fmt.Sprintf("\nsends whose append carried the receiving node's claim: %d of %d", r.SendClaims, max(r.Messages, 1))
	if r.NoReceipts {
		s += "\nthe devices sent no acknowledgement (--no-receipts): the Device API asks for one"
	}
	s += "\n" + r.Placement.String()
	s += "\n" + r.CPU.String()
	if len(r.PerNode) > 1 {
		s += fmt.Sprintf("\ndelivery claims lost to another node: %d; delivery rounds given up: %d", r.ClaimConflicts, r.ClaimFailures)
		for i, n := range r.PerNode {
			if i < len(r.NodeDelivered) {
				s += fmt.Sprintf("\n  node %d: its devices all had the message after %v", i, r.NodeDelivered[i].Round(time.Millisecond))
			}
			s += fmt.Sprintf("\n  node %d: %d devices, %.1f KB resident and %.1f KB Go heap and stacks per idle connection"+
				" (first login and connection: %.1f KB resident per device it holds)",
				i, n.Connected, n.RSSPerDevice()/1024, n.HeapPerDevice()/1024, n.FirstRSSPerDevice()/1024)
		}
	}
	return s
}

// micros is d in microseconds.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

const benchPassword = "bench-admin-password"

// Broadcast runs the scenario.
func Broadcast(ctx context.Context, o BroadcastOptions) (BroadcastResult, error) {
	if o.Devices <= 0 || o.Procs <= 0 || o.Binary == "" {
		return BroadcastResult{}, errors.New("loadtest: Binary, Devices and Procs are required")
	}
	o.Nodes = max(o.Nodes, 1)
	switch {
	case o.Backend == "" && o.Nodes > 1:
		o.Backend = BackendESDB
	case o.Backend == "":
		o.Backend = BackendEmbedded
	case o.Backend == BackendEmbedded && o.Nodes > 1:
		return BroadcastResult{}, errors.New("loadtest: several nodes need a shared store: backend esdb")
	case o.Backend != BackendEmbedded && o.Backend != BackendESDB:
		return BroadcastResult{}, fmt.Errorf("loadtest: unknown backend %q (embedded or esdb)", o.Backend)
	}
	if err := o.Placement.check(); err != nil {
		return BroadcastResult{}, err
	}
	if o.Settle <= 0 {
		o.Settle = 3 * time.Second
	}
	if o.Messages <= 0 {
		o.Messages = 1
	}
	if o.Interval <= 0 {
		o.Interval = 500 * time.Millisecond
	}
	if o.ProfileSeconds <= 0 {
		span := time.Duration(o.Messages-1)*o.Interval + 2*time.Second
		o.ProfileSeconds = max(5, int((span+time.Second-1)/time.Second))
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if o.Centrifugo != "" {
		return broadcastCentrifugo(ctx, o)
	}
	c, err := startCluster(ctx, o)
	if err != nil {
		return BroadcastResult{}, err
	}
	defer c.stop()
	res := BroadcastResult{Devices: o.Devices, Procs: o.Procs, Nodes: o.Nodes, PerNode: make([]NodeMemory, o.Nodes),
		Messages: o.Messages, Interval: o.Interval, NoReceipts: o.NoReceipts}

	first := c.nodes[0]
	provider, tariff, err := first.catalog(ctx)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(o.Log, "creating %d accounts through %d node(s)\n", o.Devices, o.Nodes)
	started := time.Now()
	if err := c.createAccounts(ctx, provider, tariff, o.Devices); err != nil {
		return res, err
	}
	res.Setup = time.Since(started)

	// First the devices log in (binding them to their accounts, which
	// every node's read model then holds) and connect; they hang up, and
	// connect again: the second time measures what a connection costs the
	// node that holds it, the first what the devices added in all.
	first0, err := c.measure(ctx)
	if err != nil {
		return res, err
	}
	started = time.Now()
	warmup, err := c.connectAll(ctx, o, provider)
	if err != nil {
		return res, err
	}
	res.FirstConnectTook = time.Since(started)
	first1, err := c.measure(ctx)
	warmup.stop()
	if err != nil {
		return res, err
	}
	if err := c.waitConnected(ctx, 0, o.Log); err != nil {
		return res, err
	}
	if o.FreshNodes {
		fmt.Fprintf(o.Log, "starting %d node(s) again\n", o.Nodes)
		for _, n := range c.nodes {
			if err := n.restart(ctx); err != nil {
				return res, err
			}
		}
	}
	schedule.Sleep(ctx, o.Settle) // let the disconnections' garbage settle
	before, err := c.measure(ctx)
	if err != nil {
		return res, err
	}
	started = time.Now()
	clients, err := c.connectAll(ctx, o, provider)
	if err != nil {
		return res, err
	}
	defer clients.stop()
	res.ConnectTook = time.Since(started)
	after, err := c.measure(ctx)
	if err != nil {
		return res, err
	}
	for i := range res.PerNode {
		res.PerNode[i] = NodeMemory{Connected: after[i].connections,
			RSSBefore: before[i].rss, RSSAfter: after[i].rss, KeptBefore: before[i].kept, KeptAfter: after[i].kept,
			HeapBefore: before[i].heap, HeapAfter: after[i].heap, FirstRSSBefore: first0[i].rss, FirstRSSAfter: first1[i].rss}
		res.Connected += after[i].connections
		res.RSSBefore, res.RSSAfter = res.RSSBefore+before[i].rss, res.RSSAfter+after[i].rss
		res.KeptBefore, res.KeptAfter = res.KeptBefore+before[i].kept, res.KeptAfter+after[i].kept
		res.HeapBefore, res.HeapAfter = res.HeapBefore+before[i].heap, res.HeapAfter+after[i].heap
	}

	// Read before the servers fall quiet: a scrape of /metrics measures
	// the projections' lag, with a subscription of the log's tail.
	appendsBefore, err := c.appends(ctx)
	if err != nil {
		return res, err
	}
	// The connections leave work behind them: their events are appended
	// and every node projects every device's. On a cluster on the double
	// that takes seconds past the last connection; counted in the
	// broadcast it would be blamed on the delivery. So does a scrape.
	if res.Quiet, err = c.waitQuiet(ctx, quietLimit, o.Log); err != nil {
		return res, err
	}
	profiles := c.profile(ctx, o.ProfileDir, o.ProfileSeconds, o.Log)
	fmt.Fprintf(o.Log, "%d devices connected; sending the message\n", res.Connected)
	cpuBefore := c.sampleCPU(clients)
	sent, err := sendMessages(ctx, o, func(ctx context.Context) error { return first.sendMessage(ctx, provider) })
	if err != nil {
		return res, err
	}
	// The clients report when every device of theirs has the message,
	// and hold their connections: CPU is read before the hang-ups.
	results, err := clients.reports(ctx)
	if err != nil {
		return res, err
	}
	res.CPU = c.sampleCPU(clients).since(cpuBefore)
	res.Placement = placementOf(c.double, c.processes(), clients)
	appendsAfter, err := c.appends(ctx)
	if err != nil {
		return res, err
	}
	res.Appends, res.EventsAppended = appendsAfter[0]-appendsBefore[0], appendsAfter[1]-appendsBefore[1]
	if err := profiles(); err != nil {
		return res, err
	}
	for _, n := range c.nodes {
		m, err := n.metrics(ctx, claimConflictsMetric, claimFailuresMetric, sendClaimsMetric)
		if err != nil {
			return res, err
		}
		res.ClaimConflicts += int(m[claimConflictsMetric])
		res.ClaimFailures += int(m[claimFailuresMetric])
		res.SendClaims += int(m[sendClaimsMetric])
	}
	res.NodeDelivered = make([]time.Duration, o.Nodes)
	for i, r := range results {
		if d := r.LastReceived.Sub(sent[len(sent)-1]); r.Received > 0 && d > res.NodeDelivered[i%o.Nodes] {
			res.NodeDelivered[i%o.Nodes] = d
		}
	}
	if err := res.delivered(results, sent); err != nil {
		return res, err
	}
	return res, nil
}

// sendMessages sends o.Messages messages, o.Interval apart (each send
// starting on time, however long the one before took), and returns when
// each send started.
func sendMessages(ctx context.Context, o BroadcastOptions, send func(context.Context) error) (sent []time.Time, err error) {
	first := time.Now()
	for i := range o.Messages {
		if i > 0 && !schedule.Sleep(ctx, time.Until(first.Add(time.Duration(i)*o.Interval))) {
			return sent, fmt.Errorf("loadtest: waiting to send message %d: %w", i+1, ctx.Err())
		}
		sent = append(sent, time.Now())
		if err := send(ctx); err != nil {
			return sent, fmt.Errorf("loadtest: send message %d of %d: %w", i+1, o.Messages, err)
		}
	}
	return sent, nil
}

// delivered fills in what the clients' reports say: the devices that had
// every message, the messages delivered, and when the first and the last
// device had the last message, after its send started, and when the first
// device had each message (sent: when each send started).
func (r *BroadcastResult) delivered(results []simulate.Result, sent []time.Time) error {
	lastSent := sent[len(sent)-1]
	for _, c := range results {
		r.Reached += c.Received
	}
	if r.Reached == 0 {
		return errors.New("loadtest: no device received the message")
	}
	r.Delivered = r.Reached * max(r.Messages, 1)
	r.FirstDelivery, r.AllDelivered = deliveries(results, lastSent)
	r.FirstDeliveries = firstDeliveries(results, sent)
	r.MessagesPerSecond = float64(r.Reached) / r.AllDelivered.Seconds()
	return nil
}

// The event stores the nodes of the broadcast scenario may run on.
const (
	BackendEmbedded = "embedded"
	BackendESDB     = "esdb"
)

// cluster is what serves the devices: one node on the embedded store, or
// several nodes on one protocol double of EventStoreDB.
type cluster struct {
	dir    string
	double *process // nil with one node
	nodes  []*server
}

// startCluster starts the nodes o asks for, each on a free loopback port,
// in a fresh directory, and waits until every one is ready.
func startCluster(ctx context.Context, o BroadcastOptions) (*cluster, error) {
	dir, err := os.MkdirTemp("", "tvsm-bench-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	var store []string // serve's arguments choosing the event store
	if o.Backend == BackendESDB {
		addr, err := freeAddr()
		if err != nil {
			c.stop()
			return nil, err
		}
		c.double, err = startProcess(o.Binary, o.Placement.Servers, o.Log, nil, "esdb-double", "--data", filepath.Join(dir, "esdb"), "--listen", addr)
		if err != nil {
			c.stop()
			return nil, err
		}
		if err := waitListening(ctx, addr, c.double); err != nil {
			c.stop()
			return nil, err
		}
		// Nodes on one store share one master key.
		keyFile := filepath.Join(dir, "master.key")
		if _, err := sealed.GenerateMasterKeyFile(keyFile); err != nil {
			c.stop()
			return nil, err
		}
		store = []string{"--eventstore", "esdb://" + addr + "?tls=false", "--stats-embedded-on-shared-store", "true",
			"--master-key-file", keyFile}
	}
	for i := range o.Nodes {
		addr, err := freeAddr()
		if err != nil {
			c.stop()
			return nil, err
		}
		args := append([]string{"serve", "--http", addr, "--data", filepath.Join(dir, fmt.Sprintf("node-%d", i)),
			"--log-level", "warn", "--node-name", fmt.Sprintf("bench-%d", i),
			// Thousands of devices come from each of a few loopback
			// addresses, past the per-address caps made for the internet.
			"--max-connections-per-address", "0", "--max-websockets-per-address", "0"}, store...)
		start := func() (*process, error) {
			return startProcess(o.Binary, o.Placement.Servers, o.Log, []string{"TVSM_ADMIN_LOGIN=admin", "TVSM_ADMIN_PASSWORD=" + benchPassword}, args...)
		}
		p, err := start()
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, &server{process: p, start: start, url: "http://" + addr, http: &http.Client{Timeout: 30 * time.Second}})
	}
	for _, n := range c.nodes {
		if err := n.waitReady(ctx); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// stop ends the nodes, then the double, and removes the data.
func (c *cluster) stop() {
	for _, n := range c.nodes {
		n.stop()
	}
	if c.double != nil {
		c.double.stop()
	}
	_ = os.RemoveAll(c.dir)
}

func (c *cluster) urls() []string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.url
	}
	return urls
}

// createAccounts creates n accounts, each subscribed to tariff, through
// every node at once (an equal share each), then waits until every node
// lists them all.
func (c *cluster) createAccounts(ctx context.Context, provider, tariff int64, n int) error {
	for _, node := range c.nodes { // every node knows the catalog
		if err := node.waitFor(ctx, fmt.Sprintf("/api/admin/tariffs/%d", tariff), 1); err != nil {
			return err
		}
	}
	per := (n + len(c.nodes) - 1) / len(c.nodes)
	errs := make(chan error, len(c.nodes))
	for i, node := range c.nodes {
		go func() {
			first, count := i*per, min(per, n-i*per)
			if count <= 0 {
				errs <- nil
				return
			}
			sim, err := simulate.New(simulate.Options{URL: node.url, Provider: provider, Devices: count, First: first, Password: "bench",
				AdminUser: "admin", AdminPassword: benchPassword, Tariff: tariff})
			if err == nil {
				err = sim.Setup(ctx)
			}
			errs <- err
		}()
	}
	var err error
	for range c.nodes {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return err
	}
	for _, node := range c.nodes {
		if err := node.waitFor(ctx, fmt.Sprintf("/api/provider/accounts?provider=%d&limit=1", provider), n); err != nil {
			return err
		}
	}
	return nil
}

// nodeMemory is one reading of a node's memory and connections.
type nodeMemory struct {
	memoryReading
	connections int
}

// measure reads every node's memory and connections.
func (c *cluster) measure(ctx context.Context) ([]nodeMemory, error) {
	out := make([]nodeMemory, len(c.nodes))
	for i, n := range c.nodes {
		mem, err := n.memory(ctx)
		if err != nil {
			return nil, err
		}
		m, err := n.metrics(ctx, ConnectionsMetric)
		if err != nil {
			return nil, err
		}
		out[i] = nodeMemory{memoryReading: mem, connections: int(m[ConnectionsMetric])}
	}
	return out, nil
}

// connectAll starts the client processes (process i on node i mod the
// nodes), waits until every device is connected, and lets the logins'
// garbage and buffers settle.
func (c *cluster) connectAll(ctx context.Context, o BroadcastOptions, provider int64) (*clients, error) {
	urls := c.urls()
	cl, err := startClients(ctx, clientPlan{binary: o.Binary, cpus: o.Placement.Clients, devices: o.Devices, procs: o.Procs, connectRate: o.ConnectRate, commands: o.Messages, log: o.Log,
		reader: o.ClientReader, profileDir: o.ProfileDir,
		args: func(i int) []string {
			args := []string{"--url", urls[i%len(urls)], "--provider", strconv.FormatInt(provider, 10), "--password", "bench"}
			if o.NoReceipts {
				args = append(args, "--no-receipts")
			}
			return args
		}})
	if err != nil {
		return nil, err
	}
	if err := c.waitConnected(ctx, o.Devices, o.Log); err != nil {
		cl.stop()
		return nil, err
	}
	schedule.Sleep(ctx, o.Settle)
	return cl, nil
}

// waitConnected polls the nodes until n devices are connected in all (at
// least n; none when n is 0).
func (c *cluster) waitConnected(ctx context.Context, n int, log io.Writer) error {
	last := time.Now()
	for {
		got := 0
		for _, node := range c.nodes {
			m, err := node.metrics(ctx, ConnectionsMetric)
			if err != nil {
				return err
			}
			got += int(m[ConnectionsMetric])
		}
		if got >= n && (n > 0 || got == 0) {
			return nil
		}
		if time.Since(last) > 2*time.Second {
			fmt.Fprintf(log, "%d/%d devices connected\n", got, n)
			last = time.Now()
		}
		if !schedule.Sleep(ctx, 100*time.Millisecond) {
			return fmt.Errorf("loadtest: %d devices connected, waiting for %d: %w", got, n, ctx.Err())
		}
	}
}

// A cluster is quiet when its servers (nodes and double) have used at most
// quietShare of a core each over quietWindow; waitQuiet waits quietLimit at
// most for that.
const (
	quietShare  = 0.03
	quietWindow = time.Second
	quietLimit  = 2 * time.Minute
)

// waitQuiet waits until the servers are quiet, or limit has passed (then
// it goes on, and says so), and returns how long it waited.
func (c *cluster) waitQuiet(ctx context.Context, limit time.Duration, log io.Writer) (time.Duration, error) {
	started := time.Now()
	servers := func() time.Duration {
		var sum time.Duration
		if c.double != nil {
			sum += processCPU(c.double.cmd.Process.Pid)
		}
		for _, n := range c.nodes {
			sum += processCPU(n.cmd.Process.Pid)
		}
		return sum
	}
	procs := len(c.nodes)
	if c.double != nil {
		procs++
	}
	bound := time.Duration(quietShare * float64(quietWindow) * float64(procs))
	for {
		before := servers()
		if !schedule.Sleep(ctx, quietWindow) {
			return time.Since(started), ctx.Err()
		}
		used := servers() - before
		if used <= bound {
			return time.Since(started), nil
		}
		if time.Since(started) > limit {
			fmt.Fprintf(log, "the servers are still busy after %v (%v of CPU in the last %v); sending anyway\n",
				limit, used.Round(time.Millisecond), quietWindow)
			return time.Since(started), nil
		}
	}
}

// profile starts a CPU profile of every node into dir (nothing when dir is
// empty) and returns the function that waits for them.
func (c *cluster) profile(ctx context.Context, dir string, seconds int, log io.Writer) func() error {
	if dir == "" {
		return func() error { return nil }
	}
	errs := make(chan error, len(c.nodes))
	for i, n := range c.nodes {
		go func() {
			path := filepath.Join(dir, fmt.Sprintf("node-%d.cpu.pprof", i))
			errs <- n.download(ctx, fmt.Sprintf("/api/admin/debug/pprof/profile?seconds=%d", seconds), path)
		}()
	}
	// The profiles start before the message is sent.
	schedule.Sleep(ctx, 200*time.Millisecond)
	return func() error {
		var err error
		for range c.nodes {
			err = errors.Join(err, <-errs)
		}
		if err == nil {
			fmt.Fprintf(log, "CPU profiles of the broadcast in %s\n", dir)
		}
		return err
	}
}

// process is a child process of the benchmark.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when it has exited, with err set
	err    error
}

// startProcess starts binary with args on cpus (empty: any), env added to
// the environment, its standard error to log.
func startProcess(binary, cpus string, log io.Writer, env []string, args ...string) (*process, error) {
	return startProcessOutput(binary, cpus, nil, log, env, args...)
}

// startProcessOutput starts binary with args on cpus (empty: any), env
// added to the environment, its standard output to stdout and error to
// stderr.
func startProcessOutput(binary, cpus string, stdout, stderr io.Writer, env []string, args ...string) (*process, error) {
	cmd := placedCommand(context.Background(), cpus, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: start %s: %w", args[0], err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop ends the process (SIGINT, then kill after 10 s).
func (p *process) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitListening waits until something accepts connections on addr.
func waitListening(ctx context.Context, addr string, p *process) error {
	for {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("loadtest: %s exited: %v", p.cmd.Args[1], p.err)
		case <-ctx.Done():
			return fmt.Errorf("loadtest: nothing listens on %s: %w", addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// server is a node under test, a `tvsm serve` child process.
type server struct {
	*process
	start func() (*process, error) // starts it again, on the same data
	url   string
	http  *http.Client
}

// restart stops the node and starts it again on its data, a fresh
// process, and waits until it is ready.
func (s *server) restart(ctx context.Context) error {
	s.stop()
	p, err := s.start()
	if err != nil {
		return err
	}
	s.process = p
	return s.waitReady(ctx)
}

// waitReady waits until the node answers /readyz with 200.
func (s *server) waitReady(ctx context.Context) error {
	for {
		if resp, err := s.http.Get(s.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("loadtest: server exited: %v", s.err)
		case <-ctx.Done():
			return fmt.Errorf("loadtest: server not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitFor polls the admin GET path until it answers 200 with a "total" of
// at least total (or, without one, 200 at all).
func (s *server) waitFor(ctx context.Context, path string, total int) error {
	for {
		var out struct {
			Total *int `json:"total"`
		}
		err := s.admin(ctx, http.MethodGet, path, nil, &out)
		if err == nil && (out.Total == nil || *out.Total >= total) {
			return nil
		}
		if !schedule.Sleep(ctx, 100*time.Millisecond) {
			return fmt.Errorf("loadtest: %s on %s: %v (last error %v)", path, s.url, ctx.Err(), err)
		}
	}
}

// download saves the answer of the admin GET path in file.
func (s *server) download(ctx context.Context, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth("admin", benchPassword)
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("loadtest: GET %s: %d", path, resp.StatusCode)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

func freeAddr() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(port), nil
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

// metrics reads unlabelled values from the server's /metrics (served to
// superadmins on its API listener).
func (s *server) metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	return scrapeMetrics(ctx, s.http, s.url, func(r *http.Request) { r.SetBasicAuth("admin", benchPassword) }, names...)
}

// scrapeMetrics reads unlabelled values from the Prometheus metrics at
// base/metrics; auth, unless nil, adds the credentials to the request.
func scrapeMetrics(ctx context.Context, client *http.Client, base string, auth func(*http.Request), names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	if auth != nil {
		auth(req)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("loadtest: GET /metrics: %d", resp.StatusCode)
	}
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

// memory reads the server's memory after a garbage collection (asked for
// through the profiler), so that garbage of the logins is not counted.
func (s *server) memory(ctx context.Context) (memoryReading, error) {
	if err := s.admin(ctx, http.MethodGet, "/api/admin/debug/pprof/heap?gc=1", nil, nil); err != nil {
		return memoryReading{}, err
	}
	return readMemory(ctx, s.http, s.url, func(r *http.Request) { r.SetBasicAuth("admin", benchPassword) })
}

// memoryReading is one reading of a Go server's memory, in bytes.
type memoryReading struct {
	rss  float64 // the resident set
	kept float64 // free heap spans the runtime keeps rather than return them
	heap float64 // heap spans and goroutine stacks in use
}

// readMemory reads a Go server's memory from the Go and process
// collectors of its Prometheus metrics at base/metrics (auth as
// scrapeMetrics takes it).
func readMemory(ctx context.Context, client *http.Client, base string, auth func(*http.Request)) (memoryReading, error) {
	m, err := scrapeMetrics(ctx, client, base, auth, "process_resident_memory_bytes", "go_memstats_heap_inuse_bytes",
		"go_memstats_stack_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes")
	if err != nil {
		return memoryReading{}, err
	}
	return memoryReading{rss: m["process_resident_memory_bytes"],
		kept: m["go_memstats_heap_idle_bytes"] - m["go_memstats_heap_released_bytes"],
		heap: m["go_memstats_heap_inuse_bytes"] + m["go_memstats_stack_inuse_bytes"]}, nil
}

// ConnectionsMetric is the gauge of connected devices the node exports.
const ConnectionsMetric = "tvsm_ws_connections"

// The nodes' appends that succeeded and the events they held.
const (
	appendsMetric        = `tvsm_eventstore_append_seconds_count{result="ok"}`
	appendedEventsMetric = "tvsm_eventstore_appended_events_total"
)

// appends sums the nodes' appends and appended events so far.
func (c *cluster) appends(ctx context.Context) ([2]int, error) {
	var sum [2]int
	for _, n := range c.nodes {
		m, err := n.metrics(ctx, appendsMetric, appendedEventsMetric)
		if err != nil {
			return sum, err
		}
		sum[0] += int(m[appendsMetric])
		sum[1] += int(m[appendedEventsMetric])
	}
	return sum, nil
}

// The counters of delivery claims lost and delivery rounds given up.
const (
	claimConflictsMetric = "tvsm_dispatch_claim_conflicts_total"
	claimFailuresMetric  = "tvsm_dispatch_claim_failures_total"
	sendClaimsMetric     = "tvsm_dispatch_send_claims_total"
)

// sendMessage sends one user_message to every device of the provider.
func (s *server) sendMessage(ctx context.Context, provider int64) error {
	var out struct {
		Response bool `json:"response"`
	}
	body := map[string]any{"ids": []int64{provider}, "commands": []map[string]any{benchCommand}}
	if err := s.admin(ctx, http.MethodPost, "/api/provider/commands/send/providers?broadcast=false", body, &out); err != nil {
		return err
	}
	if !out.Response {
		return errors.New("loadtest: send answered response false")
	}
	return nil
}

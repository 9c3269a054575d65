package loadtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// TestBroadcastSmall runs the benchmark scenario at a small scale with the
// real binary: a `tvsm serve` process (started again before the second
// connection), two `tvsm simulate` processes from 127.0.0.2 and
// 127.0.0.3, a provider-wide message; the same with the clients' other
// reader, a goroutine per connection; then three nodes on the EventStoreDB
// protocol double with a client process each. Every device must get it
// exactly once (the simulators report at their first command, and the
// server's deliveries are counted). One node on the double serves as the
// cluster's baseline; it gets three messages, and every device must have
// them all. Last, two nodes and the double on one CPU, the clients on
// another (taskset).
func TestBroadcastSmall(t *testing.T) {
	bin := testutil.Binary(t)
	cpus := allowedCPUsOfTest(t)
	servers, clients := strconv.Itoa(cpus[0]), strconv.Itoa(cpus[len(cpus)-1])
	// The scenario's pauses for memory to settle serve the benchmark's
	// figures; here the deliveries are what is checked.
	for _, o := range []BroadcastOptions{
		{Devices: 40, Procs: 2, FreshNodes: true, Settle: 100 * time.Millisecond},
		{Devices: 20, Procs: 2, Settle: 100 * time.Millisecond, ClientReader: "goroutine"}, // the default is epoll on Linux
		{Devices: 60, Procs: 3, Nodes: 3, ProfileDir: t.TempDir(), ProfileSeconds: 1, Settle: 100 * time.Millisecond},
		{Devices: 20, Procs: 1, Backend: BackendESDB, Settle: 100 * time.Millisecond, Messages: 3, Interval: 300 * time.Millisecond},
		{Devices: 20, Procs: 1, Settle: 100 * time.Millisecond, NoReceipts: true},
		{Devices: 20, Procs: 2, Nodes: 2, Settle: 100 * time.Millisecond, Placement: Placement{Servers: servers, Clients: clients}},
	} {
		log := new(testutil.SyncBuffer)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		o.Binary, o.Timeout, o.Log = bin, 2*time.Minute, log
		res, err := Broadcast(ctx, o)
		cancel()
		if err != nil {
			t.Fatalf("%v\nlog:\n%s", err, log)
		}
		messages := max(o.Messages, 1)
		if res.Connected != o.Devices || res.Reached != o.Devices || res.Delivered != o.Devices*messages {
			t.Fatalf("connected %d, reached %d, delivered %d, want %d, %d and %d\n%s",
				res.Connected, res.Reached, res.Delivered, o.Devices, o.Devices, o.Devices*messages, res)
		}
		if res.AllDelivered <= 0 || res.FirstDelivery > res.AllDelivered || res.RSSAfter <= 0 || res.HeapAfter <= 0 ||
			res.CPU.Nodes <= 0 || res.CPU.Clients <= 0 || res.Appends <= 0 || res.EventsAppended < res.Appends {
			t.Fatalf("implausible figures: %+v", res)
		}
		// The first device of every message is known, within the run.
		if len(res.FirstDeliveries) != messages || slices.ContainsFunc(res.FirstDeliveries, func(d time.Duration) bool { return d <= 0 || d > res.AllDelivered+time.Duration(messages)*o.Interval }) {
			t.Errorf("first device of each message: %v\n%s", res.FirstDeliveries, res)
		}
		// Each send goes to the first node, whose devices it reaches after
		// one append: the send's, carrying that node's claim.
		if res.SendClaims != messages {
			t.Errorf("%d sends carried their node's claim, want all %d\n%s", res.SendClaims, messages, res)
		}
		if onDouble := o.Nodes > 1 || o.Backend == BackendESDB; onDouble != (res.CPU.Double > 0) {
			t.Errorf("double's CPU %v, want some only on the double", res.CPU.Double)
		}
		if s := res.String(); !strings.Contains(s, fmt.Sprintf("all %d devices after", o.Devices)) ||
			strings.Contains(s, "no acknowledgement (--no-receipts)") != o.NoReceipts || !strings.Contains(s, res.Placement.String()) {
			t.Errorf("report %q", s)
		}
		// The processes ran where they were put: /proc says so.
		if placed := o.Placement != (Placement{}); placed && res.Placement != o.Placement || res.Placement.Servers == "" || res.Placement.Clients == "" {
			t.Errorf("processes ran on %+v, put on %+v", res.Placement, o.Placement)
		}
		for i, n := range res.PerNode {
			if n.Connected != o.Devices/max(o.Nodes, 1) {
				t.Errorf("node %d held %d devices, want %d", i, n.Connected, o.Devices/max(o.Nodes, 1))
			}
		}
		if o.ProfileDir != "" {
			for i := range o.Nodes {
				if st, err := os.Stat(filepath.Join(o.ProfileDir, fmt.Sprintf("node-%d.cpu.pprof", i))); err != nil || st.Size() == 0 {
					t.Errorf("profile of node %d: %v", i, err)
				}
			}
			for i := range o.Procs {
				if st, err := os.Stat(filepath.Join(o.ProfileDir, fmt.Sprintf("client-%d.cpu.pprof", i))); err != nil || st.Size() == 0 {
					t.Errorf("profile of client process %d: %v", i, err)
				}
			}
		}
		t.Log(res)
	}
}

func TestBroadcastRefusesAnEmbeddedCluster(t *testing.T) {
	// Given several nodes on the embedded store, or an unknown store
	for _, o := range []BroadcastOptions{
		{Binary: "tvsm", Devices: 1, Procs: 1, Nodes: 2, Backend: BackendEmbedded},
		{Binary: "tvsm", Devices: 1, Procs: 1, Backend: "mysql"},
	} {
		// When the scenario starts, then it refuses before starting anything
		if _, err := Broadcast(context.Background(), o); err == nil || !strings.Contains(err.Error(), "backend") {
			t.Errorf("%+v: got %v, want an error naming the backend", o, err)
		}
	}
}

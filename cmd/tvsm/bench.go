package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"tvsm/internal/tools/loadtest"
)

const benchUsage = `Usage: tvsm bench broadcast|vs-centrifugo|import [flags]

broadcast:

Starts a node (tvsm serve) on a free loopback port with a fresh data
directory, connects virtual devices from several tvsm simulate processes
(one 127.0.0.x source address each), sends one user_message to the
provider and reports the time until every device has it, messages per
second, the CPU per delivered message of the node and of the client
processes (from the send until every client has reported), and the server
memory per idle connected device.

With --nodes N > 1 it starts the EventStoreDB protocol double and N nodes
on it, creates the accounts through all of them, and connects client
process i to node i mod N. --backend esdb puts a single node on the double
too: the baseline a cluster's cost per message compares with.

vs-centrifugo:

Runs the broadcast on one node --pairs times, each time followed by the
same run against Centrifugo (--centrifugo, an executable; make
bench-vs-centrifugo builds a pinned release): the same client processes,
in their Centrifugo mode, subscribe to one channel and one publication goes
there through Centrifugo's HTTP API. Every run starts fresh processes.
Reports, for each side and for the ratios tvsm / Centrifugo, min / median
/ max of the time to the first and the last device, the server's and the
clients' CPU per delivered message, and the server memory per connection.

import:
Starts a source node holding --accounts accounts, each with a subscription
and two devices, then --runs times: reads the source's lists alone (one
reader, pages of --page-size), and copies the whole source into a new node
with tvsm import tvip's importer, reporting its time, the events it
appended and its fsyncs (the new node's /metrics); min / median / max.

Flags:
`

// benchCmd runs `tvsm bench SCENARIO`.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "import" {
		return benchImport(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "vs-centrifugo" {
		return benchVsCentrifugo(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "broadcast" {
		fmt.Fprint(stderr, benchUsage)
		return &configError{fmt.Errorf("the scenario must be broadcast, vs-centrifugo or import")}
	}
	o := loadtest.BroadcastOptions{Log: stderr}
	fs := flag.NewFlagSet("bench broadcast", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	fs.IntVar(&o.Devices, "devices", 10000, "virtual devices")
	fs.IntVar(&o.Procs, "procs", 4, "client processes")
	fs.IntVar(&o.Nodes, "nodes", 1, "nodes serving the devices (more than one: on the EventStoreDB protocol double)")
	fs.StringVar(&o.Backend, "backend", "", "event store of the nodes: embedded or esdb, the protocol double (default: embedded for one node, esdb for more)")
	fs.IntVar(&o.ConnectRate, "connect-rate", 0, "devices a second starting to connect, over all client processes (0: 2,000 per process)")
	fs.StringVar(&o.ProfileDir, "profile-dir", "", "`directory` to save a CPU profile of every node during the broadcast in, and of every client process from its first device having the message until its last")
	fs.StringVar(&o.ClientReader, "client-reader", "", "how the client processes read their websockets: epoll or goroutine (tvsm simulate -reader; empty: its default)")
	fs.BoolVar(&o.NoReceipts, "no-receipts", false, "the devices send no acknowledgement (tvsm simulate -no-receipts): what receipts cost the nodes, against the same run without it")
	fs.IntVar(&o.Messages, "messages", 1, "user_messages to send, --interval apart: CPU per message is then read over them all (the times are the last one's)")
	fs.DurationVar(&o.Interval, "interval", 500*time.Millisecond, "time between two messages; longer than a broadcast's delivery")
	placementFlags(fs, &o.Placement)
	fs.BoolVar(&o.FreshNodes, "fresh-nodes", false, "start the nodes again before the devices' second connection, so that memory per connection is read on fresh processes")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "bound of the whole run (six nodes and 30,000 devices took about 5 minutes on 2 cores)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	o.Binary = bin
	res, err := loadtest.Broadcast(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res)
	return nil
}

// placementFlags are --server-cpus and --client-cpus.
func placementFlags(fs *flag.FlagSet, p *loadtest.Placement) {
	fs.StringVar(&p.Servers, "server-cpus", "", "`CPU list` (taskset's: 0, 0-1, 0,2) the servers run on; empty: any. Apart from --client-cpus, the load tool's work no longer shares the servers' cores")
	fs.StringVar(&p.Clients, "client-cpus", "", "`CPU list` the client processes run on; empty: any")
}

// benchImport runs `tvsm bench import`.
func benchImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := loadtest.ImportOptions{Log: stderr}
	fs := flag.NewFlagSet("bench import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	fs.IntVar(&o.Accounts, "accounts", 100000, "accounts at the source (each with a subscription and two devices)")
	fs.IntVar(&o.Runs, "runs", 3, "imports, each into a new node")
	fs.IntVar(&o.Workers, "workers", 32, "the importer's writes at once")
	fs.IntVar(&o.PageSize, "page-size", 500, "objects per page read")
	fs.StringVar(&o.ProfileDir, "profile-dir", "", "`directory` to save a CPU profile of the target node during each import in")
	timeout := fs.Duration("timeout", 2*time.Hour, "bound of the whole run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Accounts <= 0 || o.Runs <= 0 {
		return &configError{fmt.Errorf("--accounts and --runs must be positive")}
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	o.Binary = bin
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := loadtest.Import(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, res)
	return nil
}

// benchVsCentrifugo runs `tvsm bench vs-centrifugo`.
func benchVsCentrifugo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := loadtest.CompareOptions{Log: stderr}
	fs := flag.NewFlagSet("bench vs-centrifugo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	fs.StringVar(&o.Centrifugo, "centrifugo", "", "Centrifugo `executable` (make bench-vs-centrifugo builds one)")
	fs.IntVar(&o.Devices, "devices", 10000, "virtual devices")
	fs.IntVar(&o.Procs, "procs", 4, "client processes")
	fs.IntVar(&o.Pairs, "pairs", 3, "pairs of runs (tvsm, then Centrifugo)")
	fs.IntVar(&o.ConnectRate, "connect-rate", 0, "devices a second starting to connect, over all client processes (0: 2,000 per process)")
	fs.StringVar(&o.ProfileDir, "profile-dir", "", "`directory` to save CPU profiles of both servers during each broadcast in")
	fs.IntVar(&o.Messages, "messages", 1, "messages each run sends, --interval apart: CPU per message is then read over them all (the times are the last one's)")
	fs.DurationVar(&o.Interval, "interval", 500*time.Millisecond, "time between two messages; longer than a broadcast's delivery")
	fs.StringVar(&o.ClientReader, "client-reader", "", "how the client processes read their websockets: epoll or goroutine (tvsm simulate -reader; empty: its default)")
	fs.BoolVar(&o.NoReceipts, "no-receipts", false, "tvsm's devices acknowledge nothing, as Centrifugo's clients: both servers do the same work (not the product's: the Device API asks for the acknowledgements)")
	placementFlags(fs, &o.Placement)
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "bound of each run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Centrifugo == "" {
		return &configError{fmt.Errorf("--centrifugo is required")}
	}
	if o.Devices <= 0 || o.Procs <= 0 || o.Pairs <= 0 {
		return &configError{fmt.Errorf("--devices, --procs and --pairs must be positive")}
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	o.Binary = bin
	res, err := loadtest.Compare(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res)
	return nil
}

package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// CompareOptions configure `tvsm bench vs-centrifugo`: Pairs runs of the
// broadcast scenario on one tvsm node and on Centrifugo, interleaved
// (tvsm, Centrifugo, tvsm, ...), each on fresh processes, with the same
// devices, client processes and connect pacing.
type CompareOptions struct {
	// Binary is the tvsm executable; Centrifugo Centrifugo's.
	Binary, Centrifugo string
	Devices, Procs     int
	Pairs              int
	ConnectRate        int
	// Messages and Interval are as BroadcastOptions': each run sends that
	// many messages, so that its CPU figures cover a longer window.
	Messages int
	Interval time.Duration
	// ProfileDir, when set, receives CPU profiles of both servers over
	// each broadcast, in a directory per pair (pair-1, ...).
	ProfileDir string
	// ClientReader is as BroadcastOptions'.
	ClientReader string
	// NoReceipts has tvsm's devices acknowledge nothing, as Centrifugo's
	// clients: both servers then do the same work, which is not what the
	// Device API asks of a device (what the receipts cost, seen beside
	// Centrifugo).
	NoReceipts bool
	// Placement is as BroadcastOptions': both servers get the same CPUs.
	Placement Placement
	// Settle is as BroadcastOptions'.
	Settle time.Duration
	// Timeout bounds each run (default 5 minutes).
	Timeout time.Duration
	// Log receives progress lines (default io.Discard).
	Log io.Writer
}

// Comparison is what Compare measured: the runs of each side, pair by
// pair, and the machine's load around them.
type Comparison struct {
	Devices, Procs    int
	Messages          int
	Interval          time.Duration
	NoReceipts        bool
	CentrifugoVersion string
	// LoadBefore and LoadAfter are /proc/loadavg's first three fields.
	LoadBefore, LoadAfter string
	Tvsm, Centrifugo      []BroadcastResult
}

// Compare runs the pairs.
func Compare(ctx context.Context, o CompareOptions) (Comparison, error) {
	if o.Binary == "" || o.Centrifugo == "" || o.Devices <= 0 || o.Procs <= 0 || o.Pairs <= 0 {
		return Comparison{}, errors.New("loadtest: Binary, Centrifugo, Devices, Procs and Pairs are required")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	version, err := centrifugoVersion(ctx, o.Centrifugo)
	if err != nil {
		return Comparison{}, err
	}
	cmp := Comparison{Devices: o.Devices, Procs: o.Procs, Messages: max(o.Messages, 1), Interval: o.Interval, NoReceipts: o.NoReceipts,
		CentrifugoVersion: version, LoadBefore: loadAverage()}
	for pair := 1; pair <= o.Pairs; pair++ {
		run := BroadcastOptions{Binary: o.Binary, Devices: o.Devices, Procs: o.Procs, Nodes: 1, ConnectRate: o.ConnectRate,
			FreshNodes: true, Settle: o.Settle, Timeout: o.Timeout, Log: o.Log, ClientReader: o.ClientReader,
			Messages: o.Messages, Interval: o.Interval, NoReceipts: o.NoReceipts, // a Centrifugo run ignores NoReceipts
			Placement: o.Placement}
		if o.ProfileDir != "" {
			run.ProfileDir = filepath.Join(o.ProfileDir, fmt.Sprintf("pair-%d", pair))
			if err := os.MkdirAll(run.ProfileDir, 0o755); err != nil {
				return cmp, err
			}
		}
		fmt.Fprintf(o.Log, "pair %d/%d: tvsm\n", pair, o.Pairs)
		t, err := Broadcast(ctx, run)
		if err != nil {
			return cmp, fmt.Errorf("pair %d, tvsm: %w", pair, err)
		}
		fmt.Fprintf(o.Log, "pair %d/%d: tvsm: %s\n", pair, o.Pairs, runLine(t))
		cmp.Messages, cmp.Interval = t.Messages, t.Interval // as the run took them, defaults filled in
		fmt.Fprintf(o.Log, "pair %d/%d: Centrifugo\n", pair, o.Pairs)
		run.Centrifugo = o.Centrifugo
		c, err := Broadcast(ctx, run)
		if err != nil {
			return cmp, fmt.Errorf("pair %d, Centrifugo: %w", pair, err)
		}
		fmt.Fprintf(o.Log, "pair %d/%d: Centrifugo: %s\n", pair, o.Pairs, runLine(c))
		cmp.Tvsm, cmp.Centrifugo = append(cmp.Tvsm, t), append(cmp.Centrifugo, c)
	}
	cmp.LoadAfter = loadAverage()
	return cmp, nil
}

// centrifugoVersion is what `centrifugo version` prints.
func centrifugoVersion(ctx context.Context, binary string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if err != nil {
		return "", fmt.Errorf("loadtest: %s version: %w", binary, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// runLine sums up one run on a line.
func runLine(r BroadcastResult) string {
	return fmt.Sprintf("%d/%d delivered, first after %v, last after %v; CPU per message: server %.1f µs, clients %.1f µs; "+
		"per connection %.1f KB resident (%.1f KB without the free heap kept), %.1f KB Go heap and stacks; %v",
		r.Reached, r.Devices, r.FirstDelivery.Round(time.Microsecond), r.AllDelivered.Round(time.Microsecond),
		micros(r.ServerCPUPerMessage()), micros(r.ClientCPUPerMessage()), r.RSSPerDevice()/1024, r.UsedPerDevice()/1024,
		r.HeapPerDevice()/1024, r.CPU)
}

// figure is one line of the comparison.
type figure struct {
	name  string
	value func(BroadcastResult) float64
	// context marks a figure that describes the run rather than the
	// server: it has no ratio.
	context bool
}

// figures are the lines of the comparison, each a value of one run.
var figures = []figure{
	{name: "time to the first device, ms", value: func(r BroadcastResult) float64 { return millis(r.FirstDelivery) }},
	{name: "  the median over the run's messages", value: func(r BroadcastResult) float64 { return millis(r.FirstDeliveryMedian()) }},
	{name: "time to the last device, ms", value: func(r BroadcastResult) float64 { return millis(r.AllDelivered) }},
	{name: "server CPU per delivered message, µs", value: func(r BroadcastResult) float64 { return micros(r.ServerCPUPerMessage()) }},
	{name: "client CPU per delivered message, µs", value: func(r BroadcastResult) float64 { return micros(r.ClientCPUPerMessage()) }},
	{name: "server memory per connection, KB: resident", value: func(r BroadcastResult) float64 { return r.RSSPerDevice() / 1024 }},
	{name: "  resident, without the free heap kept", value: func(r BroadcastResult) float64 { return r.UsedPerDevice() / 1024 }},
	{name: "  Go heap and stacks in use", value: func(r BroadcastResult) float64 { return r.HeapPerDevice() / 1024 }},
	{name: "machine busy during the broadcast (other work included), %", value: func(r BroadcastResult) float64 {
		if r.CPU.available() <= 0 {
			return 0
		}
		return 100 * float64(r.CPU.Machine) / float64(r.CPU.available())
	}, context: true},
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// spread is the min / median / max of values.
type spread struct{ min, median, max float64 }

func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	mid := v[len(v)/2]
	if len(v)%2 == 0 {
		mid = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return spread{v[0], mid, v[len(v)-1]}
}

func (s spread) format(digits int) string {
	return fmt.Sprintf("%.*f / %.*f / %.*f", digits, s.min, digits, s.median, digits, s.max)
}

// ratios are tvsm's value over Centrifugo's, pair by pair (0 where
// Centrifugo's is 0).
func (c Comparison) ratios(f figure) []float64 {
	out := make([]float64, 0, len(c.Tvsm))
	for i := range min(len(c.Tvsm), len(c.Centrifugo)) {
		t, z := f.value(c.Tvsm[i]), f.value(c.Centrifugo[i])
		if z == 0 {
			out = append(out, 0)
			continue
		}
		out = append(out, t/z)
	}
	return out
}

// placement says where the runs' processes ran: once when every run's
// were on the same CPUs, else each side's.
func (c Comparison) placement() string {
	seen := func(runs []BroadcastResult) []string {
		var out []string
		for _, r := range runs {
			if s := r.Placement.String(); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	}
	t, z := seen(c.Tvsm), seen(c.Centrifugo)
	if len(t) == 1 && slices.Equal(t, z) {
		return t[0]
	}
	return fmt.Sprintf("tvsm's runs: %s; Centrifugo's: %s", strings.Join(t, "; "), strings.Join(z, "; "))
}

// String is the comparison's report: each figure's min / median / max on
// each side, and of the ratios tvsm ÷ Centrifugo (of each pair's runs);
// then the ratios pair by pair.
func (c Comparison) String() string {
	var b bytes.Buffer
	what := "one message"
	if c.Messages > 1 {
		what = fmt.Sprintf("%d messages %v apart (the times are the last one's)", c.Messages, c.Interval)
	}
	fmt.Fprintf(&b, "tvsm against %s: %s to %d devices on one node, %d client processes, %d pairs of runs (tvsm first)\n",
		c.CentrifugoVersion, what, c.Devices, c.Procs, len(c.Tvsm))
	fmt.Fprintf(&b, "%s; load average %s before, %s after\n\n", c.placement(), c.LoadBefore, c.LoadAfter)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "min / median / max\ttvsm\tCentrifugo\ttvsm ÷ Centrifugo")
	for _, f := range figures {
		var t, z []float64
		for i := range c.Tvsm {
			t = append(t, f.value(c.Tvsm[i]))
		}
		for i := range c.Centrifugo {
			z = append(z, f.value(c.Centrifugo[i]))
		}
		ratio := "—"
		if !f.context {
			ratio = spreadOf(c.ratios(f)).format(2)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", f.name, spreadOf(t).format(1), spreadOf(z).format(1), ratio)
	}
	_ = w.Flush()
	b.WriteString("\ntvsm ÷ Centrifugo, pair by pair:\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, f := range figures {
		if f.context {
			continue
		}
		parts := make([]string, 0, len(c.Tvsm))
		for _, r := range c.ratios(f) {
			parts = append(parts, fmt.Sprintf("%.2f", r))
		}
		fmt.Fprintf(w, "%s\t%s\n", f.name, strings.Join(parts, "  "))
	}
	_ = w.Flush()
	delivered := func(rs []BroadcastResult) string {
		parts := make([]string, len(rs))
		for i, r := range rs {
			parts[i] = fmt.Sprintf("%d", r.Reached)
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(&b, "\ndevices that had every message: tvsm %s; Centrifugo %s (of %d)\n", delivered(c.Tvsm), delivered(c.Centrifugo), c.Devices)
	if c.NoReceipts {
		b.WriteString("tvsm's devices acknowledged nothing (--no-receipts), as Centrifugo's clients: the same work on both sides,\n" +
			"not the product's (the Device API asks a device to acknowledge every command).")
	} else {
		b.WriteString("tvsm's devices acknowledge the message (the Device API asks them to); Centrifugo's clients acknowledge nothing.\n" +
			"Server CPU runs from the send until every client process has reported; it includes reading those acknowledgements.")
	}
	return b.String()
}

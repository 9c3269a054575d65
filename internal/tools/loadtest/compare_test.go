package loadtest

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"tvsm/internal/tools/simulate"
)

// Given three pairs of runs, when the comparison is reported, then each
// figure has each side's min / median / max and those of the ratios of
// each pair's runs, and the ratios pair by pair; client CPU stands beside
// the server's; the machine's load has no ratio.
func TestComparisonReport(t *testing.T) {
	// Each run: memory grows by rssKB a device, of which 2 KB a device
	// were free heap spans kept before the connections; half of it is Go
	// heap and stacks.
	run := func(last time.Duration, serverCPU, clientCPU time.Duration, rssKB float64) BroadcastResult {
		return BroadcastResult{Devices: 1000, Messages: 1, Reached: 1000, Delivered: 1000, Connected: 1000, FirstDelivery: last / 10, AllDelivered: last,
			CPU:       CPU{Nodes: serverCPU * 1000, Clients: clientCPU * 1000, Wall: last, Machine: last},
			RSSBefore: 0, RSSAfter: rssKB * 1024 * 1000, KeptBefore: 2 * 1024 * 1000, KeptAfter: 0,
			HeapBefore: 0, HeapAfter: rssKB * 1024 * 1000 / 2}
	}
	c := Comparison{Devices: 1000, Procs: 2, CentrifugoVersion: "Centrifugo v6.9.1", LoadBefore: "0.50 0.40 0.30", LoadAfter: "0.60 0.50 0.40",
		Tvsm: []BroadcastResult{
			run(120*time.Millisecond, 20*time.Microsecond, 10*time.Microsecond, 10),
			run(100*time.Millisecond, 30*time.Microsecond, 12*time.Microsecond, 12),
			run(300*time.Millisecond, 25*time.Microsecond, 11*time.Microsecond, 14),
		},
		Centrifugo: []BroadcastResult{
			run(100*time.Millisecond, 10*time.Microsecond, 5*time.Microsecond, 40),
			run(100*time.Millisecond, 20*time.Microsecond, 6*time.Microsecond, 40),
			run(200*time.Millisecond, 10*time.Microsecond, 5*time.Microsecond, 40),
		},
	}
	// Columns are aligned with spaces: compare words.
	words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	report := words(c.String())
	for _, want := range []string{
		"tvsm against Centrifugo v6.9.1: one message to 1000 devices on one node, 2 client processes, 3 pairs of runs",
		"servers on any CPU, client processes on any CPU; load average 0.50 0.40 0.30 before, 0.60 0.50 0.40 after",
		// ratios per pair 1.2, 1.0, 1.5
		"time to the last device, ms 100.0 / 120.0 / 300.0 100.0 / 100.0 / 200.0 1.00 / 1.20 / 1.50",
		// 2.0, 1.5, 2.5
		"server CPU per delivered message, µs 20.0 / 25.0 / 30.0 10.0 / 10.0 / 20.0 1.50 / 2.00 / 2.50",
		// 2.0, 2.0, 2.2
		"client CPU per delivered message, µs 10.0 / 11.0 / 12.0 5.0 / 5.0 / 6.0 2.00 / 2.00 / 2.20",
		"server memory per connection, KB: resident 10.0 / 12.0 / 14.0 40.0 / 40.0 / 40.0 0.25 / 0.30 / 0.35",
		// 12/42, 14/42, 16/42
		"resident, without the free heap kept 12.0 / 14.0 / 16.0 42.0 / 42.0 / 42.0 0.29 / 0.33 / 0.38",
		"Go heap and stacks in use 5.0 / 6.0 / 7.0 20.0 / 20.0 / 20.0 0.25 / 0.30 / 0.35",
		"machine busy during the broadcast (other work included), % 50.0 / 50.0 / 50.0 50.0 / 50.0 / 50.0 —",
		// Runs of one message: the median over a run's messages is that one's.
		"tvsm ÷ Centrifugo, pair by pair: time to the first device, ms 1.20 1.00 1.50 the median over the run's messages 1.20 1.00 1.50 time to the last device, ms 1.20 1.00 1.50",
		"Go heap and stacks in use 0.25 0.30 0.35 devices that had every message: tvsm 1000, 1000, 1000; Centrifugo 1000, 1000, 1000 (of 1000)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, c.String())
		}
	}
	// Given runs of several messages each, the report says how many and
	// that its times are the last one's.
	c.Messages, c.Interval = 20, 300*time.Millisecond
	if want := "tvsm against Centrifugo v6.9.1: 20 messages 300ms apart (the times are the last one's) to 1000 devices"; !strings.Contains(words(c.String()), want) {
		t.Errorf("the report lacks %q:\n%s", want, c.String())
	}
	// Given runs whose processes were placed on CPUs, the report says
	// where; each side's when they differ.
	for i := range c.Tvsm {
		c.Tvsm[i].Placement, c.Centrifugo[i].Placement = Placement{Servers: "0", Clients: "1"}, Placement{Servers: "0", Clients: "1"}
	}
	if want := "servers on CPU 0, client processes on CPU 1; load average"; !strings.Contains(words(c.String()), want) {
		t.Errorf("the report lacks %q:\n%s", want, c.String())
	}
	c.Centrifugo[2].Placement.Servers = "0-1"
	if want := "tvsm's runs: servers on CPU 0, client processes on CPU 1; Centrifugo's: servers on CPU 0, client processes on CPU 1; servers on CPUs 0-1, client processes on CPU 1; load average"; !strings.Contains(words(c.String()), want) {
		t.Errorf("the report lacks %q:\n%s", want, c.String())
	}
	// Given tvsm's devices acknowledged nothing, the report says that both
	// sides did the same work, not the product's.
	if want := "tvsm's devices acknowledge the message (the Device API asks them to)"; !strings.Contains(words(c.String()), want) {
		t.Errorf("the report lacks %q:\n%s", want, c.String())
	}
	c.NoReceipts = true
	if want := "tvsm's devices acknowledged nothing (--no-receipts), as Centrifugo's clients: the same work on both sides, not the product's"; !strings.Contains(words(c.String()), want) ||
		strings.Contains(c.String(), "tvsm's devices acknowledge the message") {
		t.Errorf("with NoReceipts, the report reads:\n%s", c.String())
	}
}

// Given two client processes' arrivals of three messages, the first device
// of each message is the earlier process's, from that message's send; the
// run's median is the middle one; a message no process reported counts 0.
func TestFirstDeviceOfEachMessage(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	sent := []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	results := []simulate.Result{
		{FirstByCommand: []time.Time{at(5 * time.Millisecond), at(time.Second + 2*time.Millisecond), at(2*time.Second + 9*time.Millisecond)}},
		{FirstByCommand: []time.Time{at(3 * time.Millisecond), at(time.Second + 4*time.Millisecond), at(2*time.Second + 1*time.Millisecond)}},
	}
	got := firstDeliveries(results, sent)
	want := []time.Duration{3 * time.Millisecond, 2 * time.Millisecond, 1 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Fatalf("first devices %v, want %v", got, want)
	}
	r := BroadcastResult{FirstDelivery: time.Millisecond, FirstDeliveries: got}
	if m := r.FirstDeliveryMedian(); m != 2*time.Millisecond {
		t.Errorf("median %v, want 2ms", m)
	}
	if got := firstDeliveries([]simulate.Result{{}}, sent[:1]); !slices.Equal(got, []time.Duration{0}) {
		t.Errorf("nothing reported: %v", got)
	}
}

// Given an even number of values, the median is the mean of the middle two;
// given none, the spread is zero.
func TestSpread(t *testing.T) {
	if got := spreadOf([]float64{4, 1, 3, 2}); got != (spread{1, 2.5, 4}) {
		t.Errorf("spread of 4, 1, 3, 2: %+v", got)
	}
	if got := spreadOf([]float64{7}); got != (spread{7, 7, 7}) {
		t.Errorf("spread of 7: %+v", got)
	}
	if got := spreadOf(nil); got != (spread{}) {
		t.Errorf("spread of nothing: %+v", got)
	}
}

// Given a loopback address, the configuration Centrifugo is started with
// listens there only, on the memory engine, lets clients without a token
// subscribe to channels without a namespace keeping no history and no
// presence, and guards the HTTP API with the run's key.
func TestCentrifugoConfig(t *testing.T) {
	data, err := centrifugoConfig("127.0.0.1:45678")
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		HTTPServer struct {
			Address string `json:"address"`
			Port    int    `json:"port"`
		} `json:"http_server"`
		Engine struct {
			Type string `json:"type"`
		} `json:"engine"`
		Client struct {
			Anonymous bool `json:"allow_anonymous_connect_without_token"`
		} `json:"client"`
		Channel struct {
			WithoutNamespace struct {
				ForClient    bool `json:"allow_subscribe_for_client"`
				ForAnonymous bool `json:"allow_subscribe_for_anonymous"`
				HistorySize  int  `json:"history_size"`
				Presence     bool `json:"presence"`
			} `json:"without_namespace"`
		} `json:"channel"`
		HTTPAPI struct {
			Key string `json:"key"`
		} `json:"http_api"`
	}
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	ns := conf.Channel.WithoutNamespace
	if conf.HTTPServer.Address != "127.0.0.1" || conf.HTTPServer.Port != 45678 || conf.Engine.Type != "memory" || !conf.Client.Anonymous ||
		!ns.ForClient || !ns.ForAnonymous || ns.HistorySize != 0 || ns.Presence || conf.HTTPAPI.Key != centrifugoAPIKey {
		t.Errorf("configuration:\n%s", data)
	}
	if _, err := centrifugoConfig("no port"); err == nil {
		t.Error("an address without a port made a configuration")
	}
}

// Given this process, which has run, the time its threads ran is read to
// the nanosecond and is not zero.
func TestProcessCPU(t *testing.T) {
	d, ok := threadsRunTime(os.Getpid())
	if !ok {
		t.Skip("no /proc/PID/task/TID/schedstat here")
	}
	if d <= 0 || processCPU(os.Getpid()) <= 0 {
		t.Errorf("run time %v, processCPU %v", d, processCPU(os.Getpid()))
	}
	if _, ok := threadsRunTime(-1); ok {
		t.Error("a process that does not exist has a run time")
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"tvsm/internal/tools/simulate"
)

// simulateUsage heads `tvsm simulate -h`.
const simulateUsage = `Usage: tvsm simulate [flags]

Runs virtual devices against a tvsm node: each logs in through the Device
API, holds a websocket, acknowledges every command, confirms confirm
messages and reports viewing. A progress line shows the live figures. It
exits non-zero when anything failed, naming the last error with the
node's answer.

On a fresh node: tvsm simulate -admin admin:PASSWORD -create -devices 100

With -centrifugo-channel the devices are clients of a Centrifugo server at
-url instead (for tvsm bench vs-centrifugo): each connects without a token,
subscribes to the channel and counts its publications; no login, no acks.

Flags:
`

// simulateCmd runs `tvsm simulate`.
func simulateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o simulate.Options
	var admin string
	var asJSON bool
	var progressEvery time.Duration
	var cpuProfile string
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, simulateUsage); fs.PrintDefaults() }
	fs.StringVar(&o.URL, "url", "http://127.0.0.1:8080", "base `URL` of the node")
	fs.Int64Var(&o.Provider, "provider", 1, "provider `id` of the accounts")
	fs.IntVar(&o.Devices, "devices", 100, "number of virtual devices")
	fs.IntVar(&o.First, "first", 0, "number of the first device (to split devices over processes)")
	fs.StringVar(&o.LoginFormat, "login-format", "sim%06d", "account login of account `n` (fmt verb)")
	fs.StringVar(&o.Password, "password", "sim", "accounts' password in clear (its md5 is sent)")
	fs.IntVar(&o.DevicesPerAccount, "devices-per-account", 1, "devices sharing one account")
	fs.StringVar(&o.UniquePrefix, "unique-prefix", "sim-", "prefix of device unique ids")
	fs.StringVar(&o.SourceIP, "source-ip", "", "local `IP` to connect from (e.g. 127.0.0.2)")
	fs.DurationVar(&o.ViewEvery, "view-every", time.Minute, "period of viewing reports (0: none)")
	fs.IntVar(&o.ConnectRate, "connect-rate", 500, "logins per second")
	fs.IntVar(&o.LoginsInFlight, "logins-in-flight", simulate.DefaultLoginsInFlight, "logins to wait for at once, all from the process's one source address (a node checks 20 new logins from one address at a time by default; negative: no bound)")
	fs.IntVar(&o.StopAfterCommands, "stop-after-commands", 0, "exit once every device received `n` commands (0: run until interrupted)")
	fs.BoolVar(&o.Hold, "hold", false, "with -stop-after-commands: report (with -json) once every device received them, and keep the devices connected until interrupted")
	fs.StringVar(&o.CentrifugoChannel, "centrifugo-channel", "", "be clients of a Centrifugo server at -url subscribed to this `channel`, rather than devices of a tvsm node")
	fs.BoolVar(&o.NoReceipts, "no-receipts", false, "send no acknowledgement and no confirmation (the Device API asks for them): what receipts cost a server")
	fs.StringVar(&o.Reader, "reader", "", "how devices read their websockets: epoll (one goroutine waiting on every socket; Linux, the default there) or goroutine (one per connection)")
	fs.StringVar(&admin, "admin", "", "`login:password` of an admin: create missing accounts first")
	fs.Int64Var(&o.Tariff, "tariff", 0, "with -admin: subscribe created accounts to this tariff `id`")
	fs.BoolVar(&o.CreateCatalog, "create", false, "with -admin (a superadmin): first make sure a provider, a channel and a tariff named Simulation exist, and use them (a fresh node needs nothing else)")
	fs.BoolVar(&asJSON, "json", false, "print the final figures as JSON on stdout")
	fs.DurationVar(&progressEvery, "progress", time.Second, "period of the progress line on stderr (0: none)")
	fs.StringVar(&cpuProfile, "cpu-profile", "", "with -stop-after-commands: write a CPU profile of the process to `file`, from the first device having its commands until every one has them (or the end): what receiving a broadcast costs the client")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &configError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if admin != "" {
		user, pass, ok := strings.Cut(admin, ":")
		if !ok || user == "" {
			return &configError{errors.New("-admin must be login:password")}
		}
		o.AdminUser, o.AdminPassword = user, pass
	}
	sim, err := simulate.New(o)
	if err != nil {
		return &configError{err}
	}
	stopProgress := progressLine(sim, progressEvery, stderr)
	stopProfile := profileDelivery(ctx, sim, cpuProfile, stderr)
	defer stopProfile()
	reported := make(chan bool, 1)
	go func() {
		// Holding, the figures are reported when every device has its
		// commands; otherwise, or when interrupted before, at the end.
		if !o.Hold {
			reported <- false
			return
		}
		select {
		case <-sim.Done():
			if asJSON {
				_ = json.NewEncoder(stdout).Encode(sim.Result())
			}
			reported <- true
		case <-ctx.Done():
			reported <- false
		}
	}()
	res, err := sim.Run(ctx)
	stopProgress()
	if errors.Is(err, context.Canceled) {
		err = nil // interrupted: a normal end
	}
	if asJSON && !<-reported {
		_ = json.NewEncoder(stdout).Encode(res)
	}
	if err == nil && res.Errors > 0 {
		err = fmt.Errorf("simulate: %d errors; the last: %s", res.Errors, res.LastError)
	}
	return err
}

// progressLine prints sim's figures every period: rewritten in place on a
// terminal, a line each time otherwise. The returned func stops it and ends
// the line.
func progressLine(sim *simulate.Sim, period time.Duration, w io.Writer) func() {
	if period <= 0 {
		return func() {}
	}
	tty := isTerminal(w)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(w, "%s%s\n", lineStart(tty), sim.Snapshot().Line())
				return
			case <-t.C:
				if tty {
					fmt.Fprintf(w, "\r\033[K%s", sim.Snapshot().Line())
				} else {
					fmt.Fprintln(w, sim.Snapshot().Line())
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

func lineStart(tty bool) string {
	if tty {
		return "\r\033[K"
	}
	return ""
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// profileDelivery writes a CPU profile of the process to path (nothing when
// empty) from the first device having its commands until every one has
// them, or until the returned func (called once) is. A failure is logged
// to stderr: the simulation goes on without a profile.
func profileDelivery(ctx context.Context, sim *simulate.Sim, path string, stderr io.Writer) (stop func()) {
	if path == "" {
		return func() {}
	}
	stopped := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-sim.FirstDone():
		case <-stopped:
			return
		case <-ctx.Done():
			return
		}
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(stderr, "tvsm simulate: cpu profile: %v\n", err)
			return
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "tvsm simulate: cpu profile: %v\n", err)
			return
		}
		select {
		case <-sim.Done():
		case <-stopped:
		case <-ctx.Done():
		}
		pprof.StopCPUProfile()
	}()
	return func() {
		close(stopped)
		<-finished
	}
}

// Command powerloss cuts the power under a tvsm node again and again, and
// checks after each loss that nothing the node acknowledged was lost.
//
// The node (`tvsm serve`, the binary given) keeps its data directory on a
// faultfs mount: a FUSE file system that holds what was written but not
// synced and loses it when the power goes. Each cycle drives concurrent
// account creates over HTTP, each with an Idempotency-Key, and records
// every 2xx; cuts the power at a point of the cycle's fault (an fsync of
// the commit log, a segment switch, a pebble flush, a snapshot's rename,
// recovery itself, ...) and kills the node (SIGKILL) at once; leaves on the
// mount what the fault keeps of the unsynced writes; then checks:
//
//   - the event store opens, on a copy of what survived, and its positions
//     are dense from 1 to its head (the log is a prefix of what was
//     written), the head at or past every acknowledged write's position;
//   - the node starts on the surviving files;
//   - every acknowledged create is there exactly once, with its id; a
//     create unanswered at the loss (at most one per writer) is there at
//     most once; no other account exists; a retry of an unanswered create
//     with its key is answered 2xx, with the surviving account's id;
//   - `tvsm rebuild readmodel|stats --verify` find no difference.
//
// make powerloss runs it (POWERLOSS_CYCLES cycles); it needs /dev/fuse and
// root, or fusermount3.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	tvsm    string
	cycles  int
	writers int
	load    time.Duration
	seed    uint64
	work    string
	verify  bool
	timeout time.Duration
	only    string
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg := config{}
	flags := flag.NewFlagSet("powerloss", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.StringVar(&cfg.tvsm, "tvsm", "bin/tvsm", "the tvsm binary to run")
	flags.IntVar(&cfg.cycles, "cycles", envInt("POWERLOSS_CYCLES", 5), "power losses (POWERLOSS_CYCLES)")
	flags.IntVar(&cfg.writers, "writers", 16, "concurrent writers creating accounts")
	flags.DurationVar(&cfg.load, "load", 6*time.Second, "longest load of a cycle before the power is cut by time")
	seed := flags.Uint64("seed", uint64(envInt("POWERLOSS_SEED", 0)), "seed of the faults and of what they keep (POWERLOSS_SEED; 0: from the clock)")
	flags.StringVar(&cfg.work, "work", "", "working directory (default: a new temporary one, removed afterwards)")
	flags.BoolVar(&cfg.verify, "verify", true, "run tvsm rebuild readmodel|stats --verify after each restart")
	flags.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "give up after this long")
	flags.StringVar(&cfg.only, "only", "", "cut the power only at the points whose name holds this (e.g. \"segment\")")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if cfg.cycles < 1 || cfg.writers < 1 {
		fmt.Fprintln(stderr, "powerloss: -cycles and -writers must be at least 1")
		return 2
	}
	if len(choose(cfg.only)) == 0 {
		fmt.Fprintf(stderr, "powerloss: no point's name holds %q\n", cfg.only)
		return 2
	}
	cfg.seed = *seed
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	tvsm, err := filepath.Abs(cfg.tvsm)
	if err == nil {
		_, err = os.Stat(tvsm)
	}
	if err != nil {
		fmt.Fprintf(stderr, "powerloss: the tvsm binary: %v (make build makes bin/tvsm)\n", err)
		return 2
	}
	cfg.tvsm = tvsm
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fmt.Fprintf(stderr, "powerloss: needs FUSE: %v\n", err)
		return 2
	}
	removeWork := false
	if cfg.work == "" {
		if cfg.work, err = os.MkdirTemp("", "tvsm-powerloss-"); err != nil {
			fmt.Fprintln(stderr, "powerloss:", err)
			return 2
		}
		removeWork = true
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	r, err := newRunner(cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "powerloss:", err)
		return 2
	}
	ok := r.run(ctx)
	r.close()
	if ok && removeWork {
		_ = os.RemoveAll(cfg.work)
	} else {
		fmt.Fprintf(stdout, "the node's log and data are kept in %s\n", cfg.work)
	}
	if !ok {
		return 1
	}
	return 0
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// newRand returns the random source of a seed.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x90e1)) }

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"tvsm/httpapi"
	"tvsm/internal/tools/simulate"
	"tvsm/internal/wiring/node"
)

// rebuildUsage heads `tvsm rebuild -h`.
const rebuildUsage = `Usage: tvsm rebuild readmodel|stats [--verify] [flags]

Rebuilds a projection of a running node from the whole event log, inside
that node and while it serves: the new version is built beside the live
one and takes over once it has caught up (blue/green). With --verify it
rebuilds a fresh copy to the position of the live state instead, compares
them and lists the differences; nothing is swapped.

It shows a progress bar (on a terminal; plain lines otherwise) and exits 0
when the rebuild is done or the check found no difference, 1 otherwise.
Ask one node (its own address, not a load balancer's): the job runs there.

The superadmin's password comes from TVSM_ADMIN_PASSWORD or --password-file.

Flags:
`

// rebuildOptions are the flags of `tvsm rebuild`.
type rebuildOptions struct {
	target, url, user, passwordFile string
	verify                          bool
	poll                            time.Duration
}

// rebuildCmd runs `tvsm rebuild`.
func rebuildCmd(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	o, err := parseRebuild(args, lookupEnv, stderr)
	if err != nil {
		return err
	}
	password, err := rebuildPassword(o.passwordFile, lookupEnv)
	if err != nil {
		return &configError{err}
	}
	c := simulate.AdminClient{URL: strings.TrimRight(o.url, "/"), User: o.user, Password: password,
		HTTP: &http.Client{Timeout: 30 * time.Second}}
	var job httpapi.RebuildView
	if err := c.Call(ctx, http.MethodPost, "/api/admin/rebuilds", map[string]any{"target": o.target, "verify": o.verify}, &job); err != nil {
		return err
	}
	job, err = watchRebuild(ctx, c, job, o.poll, stdout)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped watching; the job goes on in the node: GET %s/api/admin/rebuilds/%s", c.URL, job.ID)
		}
		return err
	}
	return reportRebuild(job, stdout)
}

// parseRebuild reads the command line: the target first or after the
// flags.
func parseRebuild(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (rebuildOptions, error) {
	var o rebuildOptions
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, rebuildUsage); fs.PrintDefaults() }
	user, ok := lookupEnv("TVSM_ADMIN_LOGIN")
	if !ok || user == "" {
		user = node.DefaultAdminLogin
	}
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "base `URL` of the node")
	fs.StringVar(&o.user, "user", user, "`login` of a superadmin (default TVSM_ADMIN_LOGIN, else admin)")
	fs.StringVar(&o.passwordFile, "password-file", "", "read the superadmin's password from `file` (its first line) instead of TVSM_ADMIN_PASSWORD")
	fs.BoolVar(&o.verify, "verify", false, "compare a fresh rebuild with the live state instead of replacing it")
	fs.DurationVar(&o.poll, "poll", 500*time.Millisecond, "how often to ask the node how far it got")
	// The target may come before, between or after the flags.
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		if o.target != "" {
			rest = args
			break
		}
		o.target, args = args[0], args[1:]
	}
	switch {
	case len(rest) > 0:
		return o, &configError{fmt.Errorf("unexpected argument %q", rest[0])}
	case o.target != node.RebuildReadModel && o.target != node.RebuildStats:
		return o, &configError{fmt.Errorf("rebuild what? want %s or %s, not %q", node.RebuildReadModel, node.RebuildStats, o.target)}
	case o.poll <= 0:
		return o, &configError{errors.New("--poll must be positive")}
	}
	return o, nil
}

// rebuildPassword returns the superadmin's password: the first line of
// file, else TVSM_ADMIN_PASSWORD.
func rebuildPassword(file string, lookupEnv func(string) (string, bool)) (string, error) {
	if file != "" {
		return firstLine(file)
	}
	if p, ok := lookupEnv("TVSM_ADMIN_PASSWORD"); ok && p != "" {
		return p, nil
	}
	return "", errors.New("no password: set TVSM_ADMIN_PASSWORD or give --password-file")
}

// what names a job for people.
func what(job httpapi.RebuildView) string {
	name := map[string]string{node.RebuildReadModel: "read model", node.RebuildStats: "statistics"}[job.Target]
	if job.Verify {
		return "check of the " + name
	}
	return "rebuild of the " + name
}

// watchRebuild polls the job until it ends, drawing its progress.
func watchRebuild(ctx context.Context, c simulate.AdminClient, job httpapi.RebuildView, poll time.Duration, w io.Writer) (httpapi.RebuildView, error) {
	show := newRebuildProgress(w, job)
	defer show.end()
	t := time.NewTicker(poll)
	defer t.Stop()
	for job.State == "running" {
		select {
		case <-ctx.Done():
			return job, ctx.Err()
		case <-t.C:
		}
		if err := c.Call(ctx, http.MethodGet, "/api/admin/rebuilds/"+job.ID, nil, &job); err != nil {
			return job, err
		}
		show.update(job)
	}
	return job, nil
}

// reportRebuild prints how the job ended; an error means exit 1.
func reportRebuild(job httpapi.RebuildView, w io.Writer) error {
	switch {
	case job.State != "done":
		cause := "no cause given"
		if job.Error != nil {
			cause = *job.Error
		}
		return fmt.Errorf("the %s failed: %s", what(job), cause)
	case !job.Verify:
		fmt.Fprintf(w, "%s done: %d events replayed (%.0f/s) through position %d; the node serves the new version\n",
			what(job), job.AppliedEvents, job.Rate, job.Through)
		return nil
	case job.DifferenceCount == 0:
		fmt.Fprintf(w, "%s: no difference between the live state and a rebuild from the log through position %d (%d events)\n",
			what(job), job.Through, job.AppliedEvents)
		return nil
	}
	fmt.Fprintf(w, "%s: %d differences between the live state (-) and a rebuild from the log (+) through position %d "+
		"(a changed item counts twice: as it is, and as the rebuild has it); the first %d lines:\n",
		what(job), job.DifferenceCount, job.Through, len(job.Differences))
	for _, l := range job.Differences {
		fmt.Fprintln(w, "  "+l)
	}
	return fmt.Errorf("%d differences", job.DifferenceCount)
}

// rebuildProgress draws a job's progress: a progress bar on a terminal, a
// plain line every few seconds otherwise.
type rebuildProgress struct {
	w        io.Writer
	bar      *progressbar.ProgressBar
	lastLine time.Time
}

func newRebuildProgress(w io.Writer, job httpapi.RebuildView) *rebuildProgress {
	p := &rebuildProgress{w: w}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions64(int64(max(job.Head, 1)),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what(job)),
			progressbar.OptionSetItsString("pos"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30))
	} else {
		fmt.Fprintf(w, "%s started (job %s)\n", what(job), job.ID)
	}
	return p
}

// update shows job's progress: how far through the log (of its head) the
// copy has read, with the events it applied and their rate.
func (p *rebuildProgress) update(job httpapi.RebuildView) {
	desc := fmt.Sprintf("%s: %s, %d events, %.0f events/s", what(job), job.Phase, job.AppliedEvents, job.Rate)
	if p.bar != nil {
		p.bar.ChangeMax64(int64(max(job.Head, 1)))
		p.bar.Describe(desc)
		_ = p.bar.Set64(int64(job.Through))
		return
	}
	if time.Since(p.lastLine) < 2*time.Second && job.State == "running" {
		return
	}
	p.lastLine = time.Now()
	pct := 100.0
	if job.Head > 0 {
		pct = 100 * float64(job.Through) / float64(job.Head)
	}
	eta := ""
	if job.Rate > 0 && job.Through < job.Head && job.Through > 0 && job.AppliedEvents > 0 {
		// Events still to come, at the share of the log's positions the
		// ones applied so far took.
		left := float64(job.AppliedEvents) * float64(job.Head-job.Through) / float64(job.Through)
		eta = fmt.Sprintf(", about %v left", max(time.Duration(left/job.Rate*float64(time.Second)), time.Second).Round(time.Second))
	}
	fmt.Fprintf(p.w, "%s, position %d of %d (%.1f%%)%s\n", desc, job.Through, job.Head, pct, eta)
}

func (p *rebuildProgress) end() {
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}

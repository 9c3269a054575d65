package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"tvsm/internal/tools/tvipimport"
	"tvsm/internal/wiring/node"
)

// importUsage heads `tvsm import -h`.
const importUsage = `Usage: tvsm import tvip --from URL [--verify] [--pins FILE] [flags]

Copies a running TVIP TMS (or any server speaking TVIP's Provider API, such
as another tvsm node) into a running tvsm node through the Provider API,
every id kept: regions, providers, channel groups, channels, tariff tags,
tariffs, device types, accounts, account networks, account and device
subscriptions, devices. What the source does not serve (404) is skipped and
reported.

Run it again at any time: objects already alike are left alone (nothing is
appended), objects changed at the source since are updated with exactly
their changes, new ones are created and ones gone at the source are
deleted. So: import, keep TVIP running, and re-run just before the switch.

The source's admin: --from http://login:password@host, or --from-user with
the password in TVIP_PASSWORD or --from-password-file. The node's
superadmin: --user (default TVSM_ADMIN_LOGIN, else admin) with the password
in TVSM_ADMIN_PASSWORD or --password-file.

TVIP never answers pin_md5, so accounts arrive without a password (no device
logs in until one is set) unless --pins gives a CSV of login,pin_md5.

Exits 0 when every object was taken (and, with --verify, the node then holds
exactly what the source does), 1 otherwise.

Flags:
`

type importOptions struct {
	from, fromUser, fromPasswordFile string
	url, user, passwordFile          string
	pins                             string
	verify                           bool
	workers, pageSize                int
}

// importCmd runs `tvsm import tvip`.
func importCmd(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	o, err := parseImport(args, lookupEnv, stderr)
	if err != nil {
		return err
	}
	opts, err := importSettings(o, lookupEnv)
	if err != nil {
		return &configError{err}
	}
	opts.Progress = newImportProgress(stderr)
	start := time.Now()
	report, err := tvipimport.Import(ctx, opts)
	opts.Progress.(*importProgress).end()
	printImportReport(stdout, report, time.Since(start))
	if err != nil {
		return err
	}
	failed := !report.OK()
	if o.verify {
		fmt.Fprintln(stdout)
		diffs, err := tvipimport.Verify(ctx, opts)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		for _, d := range diffs {
			fmt.Fprintln(stdout, "differs:", d)
		}
		if len(diffs) == 0 {
			fmt.Fprintln(stdout, "verify: the node holds every field of every object the source serves, alike")
		} else {
			fmt.Fprintf(stdout, "verify: %d differences\n", len(diffs))
			failed = true
		}
	}
	if failed {
		return errors.New("not everything was copied (see above); fix what the report names and run it again")
	}
	return nil
}

func parseImport(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (importOptions, error) {
	var o importOptions
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, importUsage); fs.PrintDefaults() }
	user, ok := lookupEnv("TVSM_ADMIN_LOGIN")
	if !ok || user == "" {
		user = node.DefaultAdminLogin
	}
	fs.StringVar(&o.from, "from", "", "base `URL` of the source's Provider API (TVIP TMS), e.g. https://tms.example.net")
	fs.StringVar(&o.fromUser, "from-user", "", "`login` of the source's admin (or in --from's URL)")
	fs.StringVar(&o.fromPasswordFile, "from-password-file", "", "read the source admin's password from `file` (its first line) instead of TVIP_PASSWORD")
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "base `URL` of the tvsm node")
	fs.StringVar(&o.user, "user", user, "`login` of the node's superadmin (default TVSM_ADMIN_LOGIN, else admin)")
	fs.StringVar(&o.passwordFile, "password-file", "", "read the superadmin's password from `file` (its first line) instead of TVSM_ADMIN_PASSWORD")
	fs.StringVar(&o.pins, "pins", "", "CSV `file` of login,pin_md5: passwords for the imported accounts")
	fs.BoolVar(&o.verify, "verify", false, "then read both sides again and print every field that differs")
	fs.IntVar(&o.workers, "workers", 32, "`writes` to the node at once")
	fs.IntVar(&o.pageSize, "page-size", 500, "`objects` asked of the source per page")
	if len(args) == 0 || args[0] != "tvip" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fs.Usage()
			return o, flag.ErrHelp
		}
		return o, &configError{errors.New("import from what? want: tvsm import tvip --from URL")}
	}
	if err := fs.Parse(args[1:]); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, &configError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case o.from == "":
		return o, &configError{errors.New("--from is required: the base URL of the TVIP server")}
	case o.workers <= 0 || o.workers > 256:
		return o, &configError{errors.New("--workers must be 1 to 256")}
	case o.pageSize <= 0:
		return o, &configError{errors.New("--page-size must be positive")}
	}
	return o, nil
}

// importSettings turns the flags into the importer's options: endpoints
// with their credentials, and the pins read.
func importSettings(o importOptions, lookupEnv func(string) (string, bool)) (tvipimport.Options, error) {
	from, err := url.Parse(o.from)
	if err != nil || (from.Scheme != "http" && from.Scheme != "https") || from.Host == "" {
		return tvipimport.Options{}, fmt.Errorf("--from %q: want an http:// or https:// URL", o.from)
	}
	source := tvipimport.Endpoint{Login: o.fromUser}
	if from.User != nil {
		source.Login = from.User.Username()
		source.Password, _ = from.User.Password()
		from.User = nil
	}
	source.URL = from.String()
	if source.Password == "" {
		switch p, ok := lookupEnv("TVIP_PASSWORD"); {
		case o.fromPasswordFile != "":
			if source.Password, err = firstLine(o.fromPasswordFile); err != nil {
				return tvipimport.Options{}, err
			}
		case ok:
			source.Password = p
		}
	}
	password, err := rebuildPassword(o.passwordFile, lookupEnv)
	if err != nil {
		return tvipimport.Options{}, err
	}
	opts := tvipimport.Options{
		Source:   source,
		Target:   tvipimport.Endpoint{URL: o.url, Login: o.user, Password: password},
		Workers:  o.workers,
		PageSize: o.pageSize,
	}
	if o.pins != "" {
		f, err := os.Open(o.pins)
		if err != nil {
			return opts, err
		}
		defer f.Close()
		if opts.Pins, err = tvipimport.ReadPins(f); err != nil {
			return opts, fmt.Errorf("--pins %s: %w", o.pins, err)
		}
	}
	return opts, nil
}

// firstLine is the first line of file (a password file's).
func firstLine(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSuffix(line, "\r"), nil
}

// importProgress draws a resource's progress: a bar on a terminal, a line
// per resource otherwise.
type importProgress struct {
	w   io.Writer
	tty bool
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func newImportProgress(w io.Writer) *importProgress {
	return &importProgress{w: w, tty: isTerminal(w)}
}

func (p *importProgress) Start(resource string, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		fmt.Fprintf(p.w, "%s: %d at the source\n", resource, total)
		return
	}
	p.bar = progressbar.NewOptions(max(total, 1),
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(resource),
		progressbar.OptionSetItsString("objects"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30))
}

func (p *importProgress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

func (p *importProgress) Done(r tvipimport.ResourceReport) {
	p.end()
	if !p.tty && r.Skipped == "" && r.Failed == "" {
		fmt.Fprintf(p.w, "%s: %d created, %d changed, %d unchanged, %d deleted, %d refused\n",
			r.Name, r.Created, r.Changed, r.Unchanged, r.Deleted, r.Refused)
	}
}

func (p *importProgress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
		p.bar = nil
	}
}

// maxRefusalLines bounds the refusals printed per resource.
const maxRefusalLines = 50

// printImportReport writes the summary table, then what was skipped,
// failed or refused, and the accounts left without a password.
func printImportReport(w io.Writer, r tvipimport.Report, took time.Duration) {
	const row = "%-22s %8v %8v %8v %10v %8v %8v\n"
	fmt.Fprintf(w, row, "resource", "read", "created", "changed", "unchanged", "deleted", "refused")
	for _, res := range r.Resources {
		if res.Skipped != "" {
			continue
		}
		fmt.Fprintf(w, row, res.Name, res.Read, res.Created, res.Changed, res.Unchanged, res.Deleted, res.Refused)
	}
	fmt.Fprintf(w, "%d writes in %v\n", r.Writes(), took.Round(time.Millisecond))
	for _, res := range r.Resources {
		if res.Skipped != "" {
			fmt.Fprintf(w, "skipped %s: %s\n", res.Name, res.Skipped)
		}
	}
	for _, res := range r.Resources {
		if res.Failed != "" {
			fmt.Fprintf(w, "failed %s: %s\n", res.Name, res.Failed)
		}
		for i, ref := range res.Refusals {
			if i == maxRefusalLines {
				fmt.Fprintf(w, "refused %s: … and %d more\n", res.Name, len(res.Refusals)-i)
				break
			}
			fmt.Fprintf(w, "refused %s %d: %s\n", res.Name, ref.ID, ref.Reason)
		}
	}
	if r.WithoutPassword > 0 {
		fmt.Fprintf(w, "accounts without a password: %d (TVIP never gives pin_md5; no device logs in to them until one is set: "+
			"--pins FILE with login,pin_md5 sets them, and so does the billing's next sync of passwords)\n", r.WithoutPassword)
	}
	if r.PinsSent > 0 {
		fmt.Fprintf(w, "passwords from --pins: %d accounts\n", r.PinsSent)
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"tvsm/eventstore/embedded"
	"tvsm/internal/platform/logging"
	"tvsm/internal/tools/demo"
)

// demoUsage heads `tvsm demo -h`.
const demoUsage = `Usage: tvsm demo --data DIR [flags]

Writes a realistic history of the past DAYS days into a fresh data
directory, offline: providers, channels, tariffs, ACCOUNTS accounts arriving
over the days, subscriptions starting and ending, devices of every class
and their viewing. Every event is stamped with its moment in the past, so
the statistics of each day up to yesterday are closed. Then run
tvsm serve --data DIR and open http://localhost:8080/admin/.

The superadmin comes from TVSM_ADMIN_LOGIN and TVSM_ADMIN_PASSWORD, as on a
first start (a password is generated and printed when none is set). Every
demo account's password is "demo".

Flags:
`

// demoCmd runs `tvsm demo`.
func demoCmd(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	var o demo.Options
	var quiet bool
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, demoUsage); fs.PrintDefaults() }
	fs.StringVar(&o.DataDir, "data", "", "the data `directory` to write (must be empty or absent)")
	fs.IntVar(&o.Days, "days", 90, "days of history, ending yesterday")
	fs.IntVar(&o.Accounts, "accounts", 1000, "accounts by the end")
	fs.IntVar(&o.Providers, "providers", 2, "providers")
	fs.IntVar(&o.Tariffs, "tariffs", 0, "tariffs over all providers (0: 4 per provider)")
	fs.IntVar(&o.Channels, "channels", 40, "channels")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed: the same seed and flags write the same history")
	fs.BoolVar(&quiet, "quiet", false, "no progress lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return &configError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case o.DataDir == "":
		return &configError{errors.New("--data is required")}
	}
	// Zero means the default in demo.Options; on the command line it is a
	// mistake.
	for _, f := range []struct {
		name  string
		value int
	}{{"days", o.Days}, {"accounts", o.Accounts}, {"providers", o.Providers}, {"channels", o.Channels}} {
		if f.value < 1 {
			return &configError{fmt.Errorf("--%s must be at least 1", f.name)}
		}
	}
	if err := o.Validate(); err != nil {
		return &configError{err}
	}
	if entries, err := os.ReadDir(o.DataDir); err == nil && len(entries) > 0 {
		return &configError{fmt.Errorf("--data %s is not empty: the demo writes a fresh data directory", o.DataDir)}
	}
	o.AdminLogin, _ = lookupEnv("TVSM_ADMIN_LOGIN")
	o.AdminPassword, _ = lookupEnv("TVSM_ADMIN_PASSWORD")
	logger := logging.New(stderr, slog.LevelWarn, logging.Text)
	o.Logger = logger
	if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
		return err
	}
	store, err := embedded.Open(filepath.Join(o.DataDir, "events"), embedded.Options{Logger: logger})
	if err != nil {
		return err
	}
	o.Store = store
	started := time.Now()
	if !quiet {
		o.Progress = func(day, days int, c demo.Counts) {
			if day == days || day%max(1, days/20) == 0 {
				fmt.Fprintf(stderr, "day %d/%d: %d accounts, %d devices, %d viewing reports (%s)\n",
					day, days, c.Accounts-c.Deleted, c.Devices, c.Reports, time.Since(started).Round(time.Second))
			}
		}
	}
	res, err := demo.Run(ctx, o)
	err = errors.Join(err, store.Close())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s to %s in %s into %s:\n", res.From.Format(time.DateOnly), res.To.Format(time.DateOnly),
		time.Since(started).Round(time.Second), o.DataDir)
	fmt.Fprintf(stdout, "  %d accounts (%d deleted), %d subscriptions (%d ended), %d devices (%d logins), %d viewing reports (%d sessions), %d other changes\n",
		res.Accounts, res.Deleted, res.Subscriptions, res.Ended, res.Devices, res.Logins, res.Reports, res.Sessions, res.Changes)
	fmt.Fprintf(stdout, "  statistics closed through %s\n", res.ClosedThrough)
	if res.GeneratedPassword != "" {
		fmt.Fprintf(stdout, "  superadmin %s, password %s (generated: note it, it is not shown again)\n", res.AdminLogin, res.GeneratedPassword)
	} else {
		fmt.Fprintf(stdout, "  superadmin %s (password from TVSM_ADMIN_PASSWORD)\n", res.AdminLogin)
	}
	fmt.Fprintf(stdout, "next: tvsm serve --data %s, then open http://localhost:8080/admin/\n", o.DataDir)
	return nil
}

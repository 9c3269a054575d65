package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"tvsm/internal/adapters/billing"
	"tvsm/internal/platform/config"
)

// billingCheckUsage heads `tvsm billing-check -h`.
const billingCheckUsage = `Usage: tvsm billing-check URL [flags]

Calls an operator billing system at URL (the provider's billing url) the way
the tvsm billing proxy does, with the same identifying headers and
X-AUTH-TOKEN signature, and reports every deviation of its answers from the
personal-account billing models: GET /api/cabinet, GET /api/tariff/{id}
for each tariff the cabinet mentions, and the cabinet once more with a wrong
signature, which billing must refuse. Only GET calls are made: nothing is
changed on the billing side.

Exit status: 0 when billing conforms, 1 when it deviates (errors; with
-strict warnings too) or cannot be reached, 2 for a bad command line.

The shared token is read from -token or, to keep it out of the process list,
from the environment variable TVSM_BILLING_TOKEN.

As the proxy, it refuses billing on loopback, private, link-local and cloud
metadata addresses unless their network is allowed with
-billing-allowed-networks (default $TVSM_BILLING_ALLOWED_NETWORKS), e.g.
-billing-allowed-networks 127.0.0.0/8 for a billing on this host.

Flags:
`

// billingTokenEnv holds the shared token when -token is not given;
// billingNetworksEnv the allowed networks, as for `tvsm serve`.
const (
	billingTokenEnv    = "TVSM_BILLING_TOKEN"
	billingNetworksEnv = "TVSM_BILLING_ALLOWED_NETWORKS"
)

// billingCheckCmd runs `tvsm billing-check`.
func billingCheckCmd(ctx context.Context, args []string, getenv func(string) (string, bool), stdout, stderr io.Writer) error {
	var (
		target billing.CheckTarget
		opts   billing.CheckOptions
		client billing.Options
		strict bool
	)
	fs := flag.NewFlagSet("billing-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, billingCheckUsage); fs.PrintDefaults() }
	fs.StringVar(&target.Token, "token", "", "shared `token` of the provider's billing settings (default $"+billingTokenEnv+")")
	fs.Int64Var(&target.Account, "account", 1, "account `id` sent in the account header")
	fs.Int64Var(&target.Provider, "provider", 1, "provider `id` sent in the provider header")
	fs.StringVar(&target.AcceptLanguage, "lang", "en", "Accept-Language sent, as a client application would")
	fs.StringVar(&client.HeaderPrefix, "header-prefix", billing.DefaultHeaderPrefix, "`prefix` of the account and provider headers")
	fs.DurationVar(&client.Timeout, "timeout", billing.DefaultTimeout, "bound of each call")
	fs.StringVar(&opts.Models.ServiceIDField, "svc-id-field", billing.DefaultServiceIDField, "wire `name` of the tariff's service id")
	fs.IntVar(&opts.MaxTariffs, "max-tariffs", 20, "most tariff details fetched")
	fs.BoolVar(&strict, "strict", false, "fail on warnings too")
	allowed, _ := getenv(billingNetworksEnv)
	fs.StringVar(&allowed, "billing-allowed-networks", allowed, "comma-separated CIDR `networks` billing may be in although refused by default (default $"+billingNetworksEnv+")")
	url, err := parseWithOnePositional(fs, args)
	if err != nil {
		return err
	}
	if client.Addresses.Allowed, err = config.ParseNetworks(allowed); err != nil {
		return &configError{fmt.Errorf("-billing-allowed-networks: %w", err)}
	}
	if target.Token == "" {
		target.Token, _ = getenv(billingTokenEnv)
	}
	if target.Token == "" {
		return &configError{fmt.Errorf("no shared token: pass -token or set %s", billingTokenEnv)}
	}
	if err := client.Addresses.CheckURL(url); err != nil {
		return &configError{fmt.Errorf("URL %q: %w", url, err)}
	}
	target.BaseURL = url
	c, err := billing.NewClient(client)
	if err != nil {
		return &configError{err}
	}
	defer c.Close()
	return report(stdout, billing.Check(ctx, c, target, opts), strict)
}

// parseWithOnePositional parses flags placed before or after the one
// positional argument and returns it. A bad flag is a usage error (the
// flag package has printed it).
func parseWithOnePositional(fs *flag.FlagSet, args []string) (string, error) {
	parse := func(args []string) error {
		err := fs.Parse(args)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			return &config.CommandLineError{Err: err}
		}
		return err
	}
	if err := parse(args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return "", &configError{errors.New("missing URL")}
	}
	positional := fs.Arg(0)
	if err := parse(fs.Args()[1:]); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", &configError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return positional, nil
}

// report prints each call and its deviations, then a summary line, and
// returns an error when the check failed.
func report(w io.Writer, calls []billing.CheckedCall, strict bool) error {
	var errs, warns, failed int
	for _, call := range calls {
		name := call.Method + " " + call.Path
		if call.Note != "" {
			name += " (" + call.Note + ")"
		}
		if call.Err != nil {
			fmt.Fprintf(w, "%s: no answer: %v\n", name, call.Err)
		} else {
			fmt.Fprintf(w, "%s: %d in %d ms\n", name, call.Status, call.Latency.Round(time.Millisecond).Milliseconds())
		}
		for _, d := range call.Deviations {
			fmt.Fprintf(w, "  %-7s %s: %s\n", d.Severity, d.Path, d.Problem)
			if d.Severity == billing.SeverityError {
				errs++
			} else {
				warns++
			}
		}
		if call.Failed(strict) {
			failed++
		}
	}
	fmt.Fprintf(w, "%s, %s, %s\n", count(len(calls), "call"), count(errs, "error"), count(warns, "warning"))
	if failed > 0 {
		return fmt.Errorf("billing does not conform: %d of %d calls failed the check", failed, len(calls))
	}
	return nil
}

// count writes n things: "1 error", "2 errors".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// Command tvsm is the tvsm service and its operator tools.
//
//	tvsm serve      run the service
//	tvsm simulate   run virtual devices against a node
//	tvsm demo       write a back-dated demo history into a fresh data directory
//	tvsm bench      load scenarios (broadcast)
//	tvsm rebuild    rebuild or check a projection inside a running node
//	tvsm backup     back up a running node; tvsm backup verify checks a backup
//	tvsm restore    lay a backup out as a new data directory
//	tvsm billing-check  check an operator billing against the billing models
//	tvsm version    print the version
//	tvsm help       print this usage
//
// and, left out of the usage because it is for tests and trials,
//
//	tvsm esdb-double  run the protocol double of EventStoreDB (docs/eventstore.md)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // eod_timezone must work on hosts without a zone database

	"tvsm/internal/platform/config"
)

func main() {
	// SIGINT and SIGTERM cancel ctx; serve then shuts down gracefully. A second
	// signal after stop() kills the process the default way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad command line or configuration
)

const usageText = `tvsm: event-sourced subscriber management for IPTV operators.

Usage:
  tvsm serve [flags]    run the service (tvsm help serve lists the flags)
  tvsm simulate [flags] run virtual devices against a node (tvsm simulate -h)
  tvsm demo --data DIR  write a back-dated demo history (tvsm demo -h)
  tvsm bench broadcast  measure a provider-wide message to many devices
  tvsm rebuild readmodel|stats [--verify]  rebuild or check a projection in a running node (tvsm rebuild -h)
  tvsm backup --url URL --to DIR [--since EARLIER]  back up a running node while it serves, whole or incrementally (tvsm backup -h)
  tvsm backup verify DIR [DIR2 ...]  check a backup (or a chain, oldest first): every file and the whole copied log
  tvsm restore DIR [DIR2 ...] --data NEWDIR  lay a backup (or a chain) out as a new data directory (tvsm restore -h)
  tvsm billing-check URL  check an operator's billing system (tvsm billing-check -h)
  tvsm import tvip --from URL  copy a TVIP TMS into a node, every id kept (tvsm import -h)
  tvsm keys rotate --data DIR --new-master-key-file FILE  rewrap a stopped node's keys (tvsm keys -h)
  tvsm store encrypt --data DIR  seal a stopped node's log written before sealing (tvsm store -h)
  tvsm version          print the version and build information
  tvsm help [command]   print this text, or a command's flags
`

// run is main without the process: it takes the arguments after the program
// name and returns the exit code, so tests can call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return exitCode("serve", serve(ctx, rest, os.LookupEnv, stderr), stderr)
	case "bench":
		return exitCode("bench", benchCmd(ctx, rest, stdout, stderr), stderr)
	case "simulate":
		return exitCode("simulate", simulateCmd(ctx, rest, stdout, stderr), stderr)
	case "demo":
		return exitCode("demo", demoCmd(ctx, rest, os.LookupEnv, stdout, stderr), stderr)
	case "rebuild":
		return exitCode("rebuild", rebuildCmd(ctx, rest, os.LookupEnv, stdout, stderr), stderr)
	case "backup":
		return exitCode("backup", backupCmd(ctx, rest, os.LookupEnv, stdout, stderr), stderr)
	case "restore":
		return exitCode("restore", restoreCmd(rest, stdout, stderr), stderr)
	case "esdb-double":
		return exitCode("esdb-double", esdbDoubleCmd(ctx, rest, stderr), stderr)
	case "billing-check":
		return exitCode("billing-check", billingCheckCmd(ctx, rest, os.LookupEnv, stdout, stderr), stderr)
	case "import":
		return exitCode("import", importCmd(ctx, rest, os.LookupEnv, stdout, stderr), stderr)
	case "keys":
		return exitCode("keys", keysCmd(ctx, rest, stdout, stderr), stderr)
	case "store":
		return exitCode("store", storeCmd(ctx, rest, stdout, stderr), stderr)
	case "version":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "tvsm version: unexpected argument %q\n", rest[0])
			return exitUsage
		}
		printVersion(stdout)
		return exitOK
	case "help", "-h", "-help", "--help":
		return help(rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "tvsm: unknown command %q\n\n%s", cmd, usageText)
		return exitUsage
	}
}

func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, usageText)
		return exitOK
	case args[0] == "serve":
		_, err := config.Load("serve", []string{"-h"}, os.LookupEnv, stdout)
		return exitCode("help", err, stderr)
	case args[0] == "version":
		fmt.Fprintln(stdout, "Usage: tvsm version\n\nPrints the version, the Go version and the VCS revision the binary was built from.")
		return exitOK
	}
	fmt.Fprintf(stderr, "tvsm help: unknown command %q\n\n%s", args[0], usageText)
	return exitUsage
}

// exitCode reports err of command on stderr (unless the flag package already
// did) and picks the exit code.
func exitCode(command string, err error, stderr io.Writer) int {
	var cmdLine *config.CommandLineError
	var cfgErr *configError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &cmdLine):
		return exitUsage // already printed with the usage
	case errors.As(err, &cfgErr):
		fmt.Fprintf(stderr, "tvsm %s: %v\n", command, err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "tvsm %s: %v\n", command, err)
		return exitFailure
	}
}

// configError marks a configuration that could not be loaded, as opposed to
// a failure while running.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

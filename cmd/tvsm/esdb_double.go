package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"tvsm/eventstore/esdb/esdbdouble"
	"tvsm/internal/platform/config"
	"tvsm/internal/platform/logging"
)

const esdbDoubleUsage = `Usage: tvsm esdb-double --data DIR [--listen ADDR] [--server-version X.Y.Z]

Runs the protocol double of EventStoreDB (package eventstore/esdb/esdbdouble)
until interrupted: a test server of the Streams API that tvsm's esdb backend
uses, durable in DIR. It is test infrastructure, not EventStoreDB: point
"tvsm serve --eventstore esdb://ADDR?tls=false" at it to try several nodes on
one machine or to test against a server you can kill. It logs "listening"
with its address once it accepts connections. It announces itself to clients
as EventStoreDB ` + esdbdouble.DefaultServerVersion + `; --server-version announces another
(to see what tvsm does with an older server).

`

// esdbDoubleCmd is `tvsm esdb-double`, left out of the main usage: it is
// for tests and trials (docs/eventstore.md).
func esdbDoubleCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("esdb-double", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, esdbDoubleUsage); fs.PrintDefaults() }
	dir := fs.String("data", "", "data `directory` of the double's log (required)")
	addr := fs.String("listen", "127.0.0.1:2113", "`address` to serve gRPC on (port 0: any free port)")
	format := fs.String("log-format", "text", "log `format`: text or json")
	version := fs.String("server-version", esdbdouble.DefaultServerVersion, "EventStoreDB `version` to announce, MAJOR.MINOR.PATCH")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &config.CommandLineError{Err: err}
	}
	if fs.NArg() > 0 {
		return &configError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *dir == "" {
		return &configError{errors.New("--data is required")}
	}
	f, err := logging.ParseFormat(*format)
	if err != nil {
		return &configError{err}
	}
	logger := logging.New(stderr, slog.LevelInfo, f).With("component", "esdb-double")
	srv, err := esdbdouble.Start(*dir, *addr, esdbdouble.Options{Logger: logger, ServerVersion: *version})
	if err != nil {
		return err
	}
	<-ctx.Done()
	logger.Info("stopping")
	return srv.Close()
}

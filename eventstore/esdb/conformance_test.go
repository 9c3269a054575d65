package esdb_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/esdb/esdbdouble"
	"tvsm/eventstore/storetest"
)

// features are where EventStoreDB differs from the embedded store: sparse
// positions, event ids recognised only as retries within a stream, no
// multi-stream append.
var features = storetest.Features{StreamScopedIDs: true}

// startDouble starts a protocol double in a temporary directory, stopped
// at the end of the test.
func startDouble(t testing.TB, opts esdbdouble.Options) *esdbdouble.Server {
	t.Helper()
	srv, err := esdbdouble.Start(t.TempDir(), "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// open opens the backend on url, closed at the end of the test.
func open(t testing.TB, url string) *esdb.Store {
	t.Helper()
	s, err := esdb.Open(context.Background(), url, esdb.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConformance runs the suite against the backend on a fresh protocol
// double per test; Reopen opens a new client on the same double.
func TestConformance(t *testing.T) {
	f := features
	f.Reopen = func(t *testing.T, s eventstore.Store) eventstore.Store {
		url := s.(*esdb.Store).URL()
		_ = s.(*esdb.Store).Close()
		return open(t, url)
	}
	storetest.Run(t, func(t *testing.T) eventstore.Store {
		return open(t, startDouble(t, esdbdouble.Options{}).URL())
	}, f)
}

// TestConformanceRealServer runs the suite against the EventStoreDB that
// TVSM_ESDB_URL names (esdb://host:2113?tls=false), shared by every test.
func TestConformanceRealServer(t *testing.T) {
	url := os.Getenv("TVSM_ESDB_URL")
	if url == "" {
		t.Skip("TVSM_ESDB_URL not set")
	}
	f := features
	f.Shared = true
	f.Reopen = func(t *testing.T, s eventstore.Store) eventstore.Store {
		_ = s.(*esdb.Store).Close()
		return open(t, url)
	}
	storetest.Run(t, func(t *testing.T) eventstore.Store { return open(t, url) }, f)
}

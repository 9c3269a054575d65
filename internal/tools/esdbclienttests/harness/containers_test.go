//go:build tvsm_esdb_double

// This file is tvsm's, not EventStore-Client-Go's. The client's integration
// tests start EventStoreDB in Docker through the helpers of its
// esdb/containers_test.go; make esdb-client-tests copies the client module
// out of the module cache, puts this file in that one's place and runs the
// tests against tvsm's protocol double instead, whose address
// TVSM_ESDB_DOUBLE_ADDR gives. The helpers keep the names and signatures
// the tests call.

package esdb_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
)

// doubleAddrEnv names the variable with the double's host:port.
const doubleAddrEnv = "TVSM_ESDB_DOUBLE_ADDR"

// NAME_GENERATOR names streams; every name is new, so tests sharing the
// double's log never meet.
var NAME_GENERATOR nameGenerator

type nameGenerator struct{}

func (nameGenerator) Generate() string { return "stream-" + uuid.NewString() }

// Container is the double in place of a container: its address. It is
// started and stopped by make esdb-client-tests, not by the tests.
type Container struct {
	Endpoint string
}

// Close leaves the double running for the tests after.
func (*Container) Close() {}

// GetEnvOrDefault returns the environment variable key, or def when unset.
func GetEnvOrDefault(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// IsESDBVersion20 reports whether the server is EventStoreDB 20.x; the
// double announces a newer version.
func IsESDBVersion20() bool { return false }

// CreateEmptyDatabase returns the double and a client of it: an insecure
// node, as the tests' default (EVENTSTORE_INSECURE=true).
func CreateEmptyDatabase(t *testing.T) (*Container, *esdb.Client) {
	addr := os.Getenv(doubleAddrEnv)
	if addr == "" {
		t.Fatalf("%s is not set: run these tests with make esdb-client-tests", doubleAddrEnv)
	}
	c := &Container{Endpoint: addr}
	return c, GetClient(t, c)
}

// CreatePopulatedDatabase returns no database, as the client's own helper
// does in its cluster mode: the populated database is EventStoreDB's test
// data set, shipped only in a Docker image. The tests that need it skip
// themselves when given none, and make esdb-client-tests does not select
// them.
func CreatePopulatedDatabase(t *testing.T) (*Container, *esdb.Client) {
	return nil, nil
}

// GetClient returns a new client of the double.
func GetClient(t *testing.T, container *Container) *esdb.Client {
	return CreateClient(fmt.Sprintf("esdb://%s?tls=false", container.Endpoint), t)
}

// WaitForAdminToBeAvailable returns at once: the double has no users to
// wait for, and serves as soon as it listens.
func WaitForAdminToBeAvailable(t *testing.T, db *esdb.Client) {}

// CreateClient returns a client for the connection string connStr.
func CreateClient(connStr string, t *testing.T) *esdb.Client {
	config, err := esdb.ParseConnectionString(connStr)
	if err != nil {
		t.Fatalf("connection string %q: %v", connStr, err)
	}
	client, err := esdb.NewClient(config)
	if err != nil {
		t.Fatalf("client of %q: %v", connStr, err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

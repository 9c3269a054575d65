package chtest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
)

// Environment variables read by the harness.
const (
	// RequireEnv=1 (CI) states that ClickHouse must be there. Tests fail
	// without a server either way — none is skipped — but with it set the
	// failure says the run was meant to exercise ClickHouse.
	RequireEnv = "TVSM_REQUIRE_CLICKHOUSE"
	// URLEnv names an existing server for the shared tests
	// (clickhouse://[user:password@]host:port); a database name in it is
	// ignored, each test makes its own.
	URLEnv = "TVSM_CLICKHOUSE_URL"
)

// Target is where a package's tests find ClickHouse.
type Target struct {
	base   url.URL
	Server *Server // nil when the target is an external server
}

// URL returns the clickhouse:// URL of database db on the target.
func (t *Target) URL(db string) string {
	u := t.base
	u.Path = "/" + db
	return u.String()
}

var shared struct {
	once   sync.Once
	target *Target
	err    error
}

// Shared returns the package's shared target, starting its server on first
// use, or fails the test with the reason (the server's log included when it
// did not start).
func Shared(t testing.TB) *Target {
	t.Helper()
	shared.once.Do(func() { shared.target, shared.err = startShared() })
	if shared.err != nil {
		unusable(t, shared.err)
	}
	return shared.target
}

// StartOwn starts a server only the calling test uses (to stop and restart
// it); the test's cleanup closes it.
func StartOwn(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		unusable(t, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("chtest: close: %v", err)
		}
	})
	return s
}

// Main runs the package's tests and then stops the shared server if one was
// started: call it as os.Exit(chtest.Main(m)) from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.target != nil && shared.target.Server != nil {
		if err := shared.target.Server.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}

func startShared() (*Target, error) {
	if raw := os.Getenv(URLEnv); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "clickhouse" || u.Host == "" {
			return nil, fmt.Errorf("chtest: %s=%q is not a clickhouse://host:port URL", URLEnv, raw)
		}
		return &Target{base: *u}, nil
	}
	s, err := Start()
	if err != nil {
		return nil, err
	}
	return &Target{base: url.URL{Scheme: "clickhouse", Host: s.Addr}, Server: s}, nil
}

// unusable ends a test whose server could not be had. Only on a machine
// without any ClickHouse binary, and only when TVSM_REQUIRE_CLICKHOUSE is
// not 1, is that a skip (so `make test` works on a fresh machine; CI sets
// the variable and installs the server); every other failure fails.
func unusable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoBinary) && strings.TrimSpace(os.Getenv(RequireEnv)) != "1" {
		t.Skipf("%v; %s=1 makes this a failure", err, RequireEnv)
	}
	t.Fatal(failure(err))
}

func failure(err error) string {
	if strings.TrimSpace(os.Getenv(RequireEnv)) == "1" {
		return fmt.Sprintf("ClickHouse is required (%s=1) but unusable: %v", RequireEnv, err)
	}
	return fmt.Sprintf("these tests need a ClickHouse server and the one found is unusable: %v", err)
}

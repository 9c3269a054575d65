package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Binary returns the path of a tvsm binary built from this module, as make
// build builds it (-trimpath; no race detector), for tests that start tvsm
// processes or run its tools at full speed. It comes from Go's build cache
// (go run caches the executables it links): linked once, then shared by
// every test, package and run until the sources change, where a go build
// per test spent seconds linking it each time.
func Binary(tb testing.TB) string {
	tb.Helper()
	// go run -exec echo prints the executable instead of running it. The
	// first link of a version goes to a temporary directory that go run
	// removes when it ends; asked again, it answers from the cache.
	for range 2 {
		cmd := exec.Command("go", "run", "-trimpath", "-exec", "echo", "tvsm/cmd/tvsm")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			tb.Fatalf("testutil: build tvsm: %v\n%s", err, stderr.String())
		}
		path := strings.TrimSpace(string(out))
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	tb.Fatal("testutil: go run did not leave the tvsm binary in its cache")
	return ""
}

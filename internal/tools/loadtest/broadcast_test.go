package loadtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// TestBroadcastSmall runs the benchmark scenario at a small scale with the
// real binary: a `tvsm serve` process, two `tvsm simulate` processes from
// 127.0.0.2 and 127.0.0.3, a provider-wide message. Every device must get
// it exactly once (the simulators stop at their first command, and the
// server's deliveries are counted).
func TestBroadcastSmall(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tvsm")
	build := exec.Command("go", "build", "-o", bin, "tvsm/cmd/tvsm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	log := new(testutil.SyncBuffer)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Broadcast(ctx, BroadcastOptions{Binary: bin, Devices: 40, Procs: 2, Timeout: 2 * time.Minute, Log: log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log)
	}
	if res.Connected != 40 || res.Delivered != 40 {
		t.Fatalf("connected %d, delivered %d, want 40 each\n%s", res.Connected, res.Delivered, res)
	}
	if res.AllDelivered <= 0 || res.FirstDelivery > res.AllDelivered || res.RSSAfter <= 0 || res.HeapAfter <= 0 {
		t.Fatalf("implausible figures: %+v", res)
	}
	if s := res.String(); !strings.Contains(s, "all 40 devices after") {
		t.Errorf("report %q", s)
	}
	t.Log(res)
}

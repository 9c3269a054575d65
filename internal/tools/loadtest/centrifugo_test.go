//go:build centrifugo

package loadtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// TestCompareSmall runs the comparison at a small scale against a real
// Centrifugo (TVSM_CENTRIFUGO_BIN; make bench-vs-centrifugo builds one):
// one pair, each side's devices in two client processes, two messages;
// then again with tvsm's devices acknowledging nothing; then with both
// servers on one CPU and the clients on another. Every device of both sides
// must get both, and the report must hold both sides, say whether tvsm's
// devices acknowledged and where the processes ran.
//
//	TVSM_CENTRIFUGO_BIN=PATH go test -tags centrifugo -run TestCompareSmall ./internal/tools/loadtest/
func TestCompareSmall(t *testing.T) {
	centrifugo := os.Getenv("TVSM_CENTRIFUGO_BIN")
	if centrifugo == "" {
		t.Fatal("TVSM_CENTRIFUGO_BIN must name a Centrifugo executable")
	}
	cpus := allowedCPUsOfTest(t)
	placed := Placement{Servers: strconv.Itoa(cpus[0]), Clients: strconv.Itoa(cpus[len(cpus)-1])}
	for _, tc := range []struct {
		noReceipts bool
		placement  Placement
	}{{}, {noReceipts: true}, {placement: placed}} {
		noReceipts := tc.noReceipts
		t.Run(fmt.Sprintf("NoReceipts=%t,Placement=%+v", noReceipts, tc.placement), func(t *testing.T) {
			log := new(testutil.SyncBuffer)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := Compare(ctx, CompareOptions{Binary: testutil.Binary(t), Centrifugo: centrifugo, Devices: 40, Procs: 2, Pairs: 1,
				Messages: 2, Interval: 300 * time.Millisecond, Settle: 100 * time.Millisecond, Timeout: 2 * time.Minute, Log: log, NoReceipts: noReceipts,
				Placement: tc.placement})
			if err != nil {
				t.Fatalf("%v\nlog:\n%s", err, log)
			}
			for side, runs := range map[string][]BroadcastResult{"tvsm": res.Tvsm, "Centrifugo": res.Centrifugo} {
				if len(runs) != 1 {
					t.Fatalf("%s: %d runs", side, len(runs))
				}
				r := runs[0]
				if tc.placement != (Placement{}) && r.Placement != tc.placement {
					t.Errorf("%s: processes ran on %+v, put on %+v", side, r.Placement, tc.placement)
				}
				if r.Connected != 40 || r.Reached != 40 || r.Delivered != 80 || r.AllDelivered <= 0 || r.FirstDelivery > r.AllDelivered ||
					r.RSSAfter <= 0 || r.HeapAfter <= 0 || r.CPU.Nodes <= 0 || r.CPU.Clients <= 0 {
					t.Errorf("%s: implausible figures %+v", side, r)
				}
			}
			if s := res.String(); !strings.Contains(s, "devices that had every message: tvsm 40; Centrifugo 40 (of 40)") {
				t.Errorf("report:\n%s", s)
			}
			t.Log(res)
			if got := res.Tvsm[0].NoReceipts; got != noReceipts || res.NoReceipts != noReceipts {
				t.Errorf("NoReceipts: tvsm's run %t, the comparison's %t; want %t", got, res.NoReceipts, noReceipts)
			}
			if acked := strings.Contains(res.String(), "tvsm's devices acknowledge the message"); acked == noReceipts {
				t.Errorf("with NoReceipts %t the report reads:\n%s", noReceipts, res)
			}
		})
	}
}

package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"tvsm/internal/testkit/testutil"
)

// The import scenario at a small scale: every object of the source is
// written once per run, and the figures are those of the target.
func TestImportSmall(t *testing.T) {
	log := new(testutil.SyncBuffer)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Import(ctx, ImportOptions{Binary: testutil.Binary(t), Accounts: 25, Runs: 1, Workers: 4, PageSize: 10, Log: log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log)
	}
	if res.Objects != 2+4*25 || len(res.Runs) != 1 {
		t.Fatalf("objects %d, runs %d; want %d and 1", res.Objects, len(res.Runs), 2+4*25)
	}
	for _, run := range res.Runs {
		// The source's lists hold the accounts, their subscriptions and
		// devices; the import writes every object and appends at least an
		// event each.
		if run.Listed != 4*25 || run.Writes != res.Objects || run.Events < float64(run.Writes) || run.Fsyncs <= 0 || run.ListTime <= 0 ||
			run.TargetCPU <= 0 || run.ImporterCPU <= 0 {
			t.Errorf("implausible run: %+v", run)
		}
	}
	if s := res.String(); !strings.Contains(s, "events/s") || !strings.Contains(s, "import / source lists") {
		t.Errorf("the report lacks its figures:\n%s", s)
	}
}

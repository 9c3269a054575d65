package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"tvsm/internal/platform/backup"
	"tvsm/internal/testkit/testutil"
)

// BenchmarkBackupBesideHTTPWrites measures what tvsm backup costs the
// writes a node serves. A tvsm serve process holds a demo history of about
// a million events (TVSM_BACKUP_BENCH_ACCOUNTS accounts over 60 days;
// default 10,000, which writes about 1.0M events); 16 clients create accounts
// over HTTP on it the whole time. Each round counts their acknowledged
// creates for as long as nothing else runs, then while tvsm backup (run in
// this process, as an operator on the same host runs it) copies a full
// backup out of the node, then for as long again without it. The ratio is
// the creates/s during the backup over the mean of the two beside it, so
// that a drift of the machine's speed moves both sides alike.
//
//	go test -run '^$' -bench BackupBesideHTTPWrites -benchtime 3x ./cmd/tvsm/
func BenchmarkBackupBesideHTTPWrites(b *testing.B) {
	accounts := 10_000
	if v := os.Getenv("TVSM_BACKUP_BENCH_ACCOUNTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("TVSM_BACKUP_BENCH_ACCOUNTS=%q", v)
		}
		accounts = n
	}
	dir := b.TempDir()
	data := filepath.Join(dir, "data")
	if code, stdout, stderr := runTvsm(b, "demo", "--data", data, "--days", "60", "--accounts", strconv.Itoa(accounts), "--quiet"); code != exitOK {
		b.Fatalf("demo: exit %d\n%s%s", code, stdout, stderr)
	}
	n := startBackupNode(b, data)
	provider := n.create("/api/admin/providers", map[string]any{"name": "Bench ISP"})
	w := startAccountWriters(b, n, provider)
	w.waitFor(b, 200) // connections open, the node warm

	// createsFor is the writers' acknowledged creates per second while
	// work runs, and how long it ran.
	createsFor := func(work func()) (float64, time.Duration) {
		before, started := w.count.Load(), time.Now()
		work()
		d := time.Since(started)
		return float64(w.count.Load()-before) / d.Seconds(), d
	}
	var ratios, durations, rates []float64
	var events uint64
	var size int64
	d := 5 * time.Second // the first round's guess of a backup's time
	for i := 0; b.Loop(); i++ {
		before, _ := createsFor(func() { time.Sleep(d) })
		to := filepath.Join(dir, fmt.Sprint("backup-", i))
		during, took := createsFor(func() {
			if code, stdout, stderr := runTvsm(b, "backup", "--url", n.base, "--to", to); code != exitOK {
				b.Fatalf("backup: exit %d\n%s%s", code, stdout, stderr)
			}
		})
		d = took
		after, _ := createsFor(func() { time.Sleep(d) })
		m, err := backup.ReadManifest(to)
		if err != nil {
			b.Fatal(err)
		}
		events, size = m.Events, m.TotalSize()
		if err := os.RemoveAll(to); err != nil {
			b.Fatal(err)
		}
		ratios = append(ratios, during/((before+after)/2))
		durations = append(durations, float64(took.Milliseconds()))
		rates = append(rates, before, during, after)
	}
	b.StopTimer()
	w.end()
	b.ReportMetric(testutil.Median(ratios), "writes-during/without")
	b.ReportMetric(testutil.Median(durations), "backup-ms")
	b.Logf("%d events, %d MiB; creates/s during over beside %.2f; backup ms %v; creates/s before, during, after each: %.0f",
		events, size>>20, ratios, durations, rates)
}

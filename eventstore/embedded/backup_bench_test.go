package embedded_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// backupBenchEvents is the size of the store BenchmarkBackupBesideWrites
// backs up (TVSM_BACKUP_BENCH_EVENTS; default 1,000,000).
func backupBenchEvents(b *testing.B) int {
	if v := os.Getenv("TVSM_BACKUP_BENCH_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("TVSM_BACKUP_BENCH_EVENTS=%q", v)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkBackupBesideWrites measures what an online backup of a store of
// backupBenchEvents events costs the writes beside it: 16 appenders make
// single-event appends for as long as a backup takes (Checkpoint, then
// what the node and a client on the same host do with the files: hash
// them, copy them while hashing again), and alternately for as long
// without one. writes-during/without is the ratio of their appends/s;
// writes-during-checkpoint/without the same for a checkpoint alone;
// checkpoint-ms the flush and checkpoint, backup-ms the whole backup.
func BenchmarkBackupBesideWrites(b *testing.B) {
	events := backupBenchEvents(b)
	s, err := embedded.Open(b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fill(b, s, events)
	var ratios, cpRatios, cps, totals []float64
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
		// The checkpoint alone (the flush and the hard links).
		cpOnly, d := appendWhile(b, s, func() {
			if _, err := s.Checkpoint(context.Background(), filepath.Join(dir, "alone")); err != nil {
				b.Error(err)
			}
		})
		cpWithout, _ := appendWhile(b, s, func() { time.Sleep(d) })
		cpRatios = append(cpRatios, cpOnly/cpWithout)
		var cp, total time.Duration
		during, d := appendWhile(b, s, func() {
			started := time.Now()
			if _, err := s.Checkpoint(context.Background(), filepath.Join(dir, "staged")); err != nil {
				b.Error(err)
				return
			}
			cp = time.Since(started)
			if err := hashAndCopy(filepath.Join(dir, "staged"), filepath.Join(dir, "copy")); err != nil {
				b.Error(err)
			}
			total = time.Since(started)
		})
		without, _ := appendWhile(b, s, func() { time.Sleep(d) })
		ratios = append(ratios, during/without)
		cps = append(cps, float64(cp.Milliseconds()))
		totals = append(totals, float64(total.Milliseconds()))
		os.RemoveAll(dir)
	}
	b.ReportMetric(median(ratios), "writes-during/without")
	b.ReportMetric(median(cpRatios), "writes-during-checkpoint/without")
	b.ReportMetric(median(cps), "checkpoint-ms")
	b.ReportMetric(median(totals), "backup-ms")
	b.Logf("%d events; writes during/without %v (during the checkpoint alone %v), checkpoint ms %v, backup ms %v",
		events, ratios, cpRatios, cps, totals)
}

// fill appends n events in appends of 100 from 16 writers.
func fill(b *testing.B, s *embedded.Store, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for {
				first := int(next.Add(100)) - 100
				if first >= n {
					return
				}
				evs := make([]eventstore.EventData, 0, 100)
				for i := first; i < min(first+100, n); i++ {
					evs = append(evs, benchEvent("fill", i))
				}
				if _, err := s.Append(context.Background(), fmt.Sprintf("fill-%d-%d", w, first), eventstore.NoStream, evs...); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// appendWhile runs 16 single-event appenders while work runs and returns
// their appends/s and how long work took.
func appendWhile(b *testing.B, s *embedded.Store, work func()) (float64, time.Duration) {
	ctx, stop := context.WithCancel(context.Background())
	var count atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			stream := fmt.Sprintf("w-%d-%d", w, time.Now().UnixNano())
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := s.Append(ctx, stream, eventstore.Any, benchEvent(stream, i)); err != nil {
					if ctx.Err() == nil {
						b.Error(err)
					}
					return
				}
				count.Add(1)
			}
		})
	}
	started := time.Now()
	work()
	d := time.Since(started)
	stop()
	wg.Wait()
	return float64(count.Load()) / d.Seconds(), d
}

// hashAndCopy does with a staged backup what the node and a client do:
// hash every file, then copy each while hashing it again, synced.
func hashAndCopy(from, to string) error {
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		_, err = io.Copy(sha256.New(), src)
		if err == nil {
			_, err = src.Seek(0, io.SeekStart)
		}
		var dst *os.File
		if err == nil {
			dst, err = os.Create(filepath.Join(to, e.Name()))
		}
		if err == nil {
			_, err = io.Copy(io.MultiWriter(dst, sha256.New()), src)
			err = errors.Join(err, dst.Sync(), dst.Close())
		}
		src.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

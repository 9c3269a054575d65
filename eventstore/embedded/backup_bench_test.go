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
	"tvsm/internal/platform/backup"
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
	events, rate := backupBenchEvents(b), backupBenchRate(b)
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
			if err := hashAndCopy(filepath.Join(dir, "staged"), filepath.Join(dir, "copy"), rate); err != nil {
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
	b.Logf("%d events, paced at %d MiB/s; writes during/without %v (during the checkpoint alone %v), checkpoint ms %v, backup ms %v",
		events, rate>>20, ratios, cpRatios, cps, totals)
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

// backupBenchRate is the pace of the hashing and copying in bytes/s
// (TVSM_BACKUP_BENCH_RATE in MiB/s, 0 for none; default what the node and
// tvsm backup use).
func backupBenchRate(b *testing.B) int64 {
	if v := os.Getenv("TVSM_BACKUP_BENCH_RATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("TVSM_BACKUP_BENCH_RATE=%q", v)
		}
		return int64(n) << 20
	}
	return backup.DefaultRate
}

// hashAndCopy does with a staged backup what the node and a client do,
// each at rate: the node hashes every file, then the client copies each
// while hashing it again, synced as it goes.
func hashAndCopy(from, to string, rate int64) error {
	node := backup.NewPacer(rate)
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, _, err = backup.HashFilePaced(p, node)
		return err
	})
	if err != nil {
		return err
	}
	client := backup.NewPacer(rate)
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		dst, err := os.Create(filepath.Join(to, rel))
		if err != nil {
			return err
		}
		_, err = client.Copy(io.MultiWriter(dst, sha256.New()), src, dst)
		return errors.Join(err, dst.Close())
	})
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

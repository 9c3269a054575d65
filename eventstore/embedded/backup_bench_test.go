package embedded_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/internal/platform/backup"
	"tvsm/internal/testkit/testutil"
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
// checkpoint-ms the checkpoint, backup-ms the whole backup.
func BenchmarkBackupBesideWrites(b *testing.B) {
	events, rate := backupBenchEvents(b), backupBenchRate(b)
	s := filledStore(b, events)
	defer s.Close()
	var ratios, cpRatios, cps, totals []float64
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
		// The checkpoint alone (pebble's checkpoint and the unflushed segments).
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
	b.ReportMetric(testutil.Median(ratios), "writes-during/without")
	b.ReportMetric(testutil.Median(cpRatios), "writes-during-checkpoint/without")
	b.ReportMetric(testutil.Median(cps), "checkpoint-ms")
	b.ReportMetric(testutil.Median(totals), "backup-ms")
	b.Logf("%d events, paced at %d MiB/s; writes during/without %v (during the checkpoint alone %v), checkpoint ms %v, backup ms %v",
		events, rate>>20, ratios, cpRatios, cps, totals)
}

// filledStore opens a store in a temporary directory and fills it with n
// events.
func filledStore(b *testing.B, n int) *embedded.Store {
	s, err := embedded.Open(b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	fill(b, s, n)
	return s
}

// fill appends n events in appends of 100 from 16 writers.
func fill(b *testing.B, s *embedded.Store, n int) { appendBatches(b, s, n, "fill") }

// appendBatches appends n events in appends of 100 from 16 writers, to
// streams named after label.
func appendBatches(b *testing.B, s *embedded.Store, n int, label string) {
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
					evs = append(evs, benchEvent(label, i))
				}
				if _, err := s.Append(context.Background(), fmt.Sprintf("%s-%d-%d", label, w, first), eventstore.NoStream, evs...); err != nil {
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

// BenchmarkIncrementalBackup measures what an incremental backup saves: on
// a store of backupBenchEvents events, each round makes a full backup
// (Checkpoint, the node's hashing, the client's synced copy, both at the
// default pace), appends 1% more events, and makes an incremental backup
// since the full one (the same, leaving to the full backup what it holds).
// incremental/full is the ratio of their times.
func BenchmarkIncrementalBackup(b *testing.B) {
	events, rate := backupBenchEvents(b), backupBenchRate(b)
	s := filledStore(b, events)
	defer s.Close()
	var ratios, fulls, incs, incBytes []float64
	var incPhases []backupPhases
	cache := backup.NewHashCache() // the node's
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
		started := time.Now()
		full, _, err := stageAndCopy(s, filepath.Join(dir, "full"), nil, rate, cache)
		if err != nil {
			b.Fatal(err)
		}
		fullTime := time.Since(started)
		more(b, s, events/100, i)
		started = time.Now()
		inc, phases, err := stageAndCopy(s, filepath.Join(dir, "inc"), full, rate, cache)
		if err != nil {
			b.Fatal(err)
		}
		incTime := time.Since(started)
		incPhases = append(incPhases, phases)
		ratios = append(ratios, incTime.Seconds()/fullTime.Seconds())
		fulls = append(fulls, float64(fullTime.Milliseconds()))
		incs = append(incs, float64(incTime.Milliseconds()))
		incBytes = append(incBytes, float64(stored(inc))/float64(stored(full)))
		os.RemoveAll(dir)
	}
	b.ReportMetric(testutil.Median(ratios), "incremental/full")
	b.ReportMetric(testutil.Median(fulls), "full-ms")
	b.ReportMetric(testutil.Median(incs), "incremental-ms")
	b.Logf("%d events + 1%%, paced at %d MiB/s; incremental/full time %v, bytes copied %v; full ms %v, incremental ms %v",
		events, rate>>20, ratios, incBytes, fulls, incs)
	b.Logf("incremental phases: %v", incPhases)
}

// backupPhases is how long each part of stageAndCopy took.
type backupPhases struct{ checkpoint, hash, copy time.Duration }

func (p backupPhases) String() string {
	return fmt.Sprintf("checkpoint %v hash %v copy %v", p.checkpoint.Round(time.Millisecond),
		p.hash.Round(time.Millisecond), p.copy.Round(time.Millisecond))
}

// stageAndCopy does what the node and tvsm backup do: checkpoint into
// dir/staged, hash (since the earlier backup's files, when given), then
// copy the bytes the backup holds into dir/copy, synced; both at rate.
func stageAndCopy(s *embedded.Store, dir string, since []backup.File, rate int64, cache *backup.HashCache) ([]backup.File, backupPhases, error) {
	var took backupPhases
	staged := filepath.Join(dir, "staged")
	started := time.Now()
	if _, err := s.Checkpoint(context.Background(), filepath.Join(staged, backup.EventsDir)); err != nil {
		return nil, took, err
	}
	took.checkpoint = time.Since(started)
	started = time.Now()
	files, err := backup.HashTree(context.Background(), staged, since, backup.NewPacer(rate), cache)
	if err != nil {
		return nil, took, err
	}
	took.hash = time.Since(started)
	started = time.Now()
	client := backup.NewPacer(rate)
	for _, f := range files {
		if f.InParent {
			continue
		}
		to := filepath.Join(dir, "copy", filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return nil, took, err
		}
		src, err := os.Open(filepath.Join(staged, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, took, err
		}
		dst, err := os.Create(to)
		if err == nil {
			_, err = client.Copy(io.MultiWriter(dst, sha256.New()), src, dst)
			err = errors.Join(err, dst.Close())
		}
		src.Close()
		if err != nil {
			return nil, took, err
		}
	}
	took.copy = time.Since(started)
	return files, took, nil
}

// stored is the bytes a backup of files holds itself.
func stored(files []backup.File) int64 {
	return backup.Manifest{Files: files}.StoredSize()
}

// more appends n events in appends of 100 from 16 writers, as fill does.
func more(b *testing.B, s *embedded.Store, n, round int) {
	appendBatches(b, s, n, fmt.Sprintf("more-%d", round))
}

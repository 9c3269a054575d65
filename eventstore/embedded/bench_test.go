package embedded_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
	"tvsm/internal/testkit/testutil"
)

// benchPayload is a typical account event: about 200 bytes of JSON.
type benchPayload struct {
	AccountID int64  `json:"account_id"`
	Provider  int64  `json:"provider"`
	Login     string `json:"login"`
	Fullname  string `json:"fullname"`
	Enabled   bool   `json:"enabled"`
	Contract  string `json:"contract_info"`
	Address   string `json:"main_address"`
}

func (benchPayload) EventType() string { return "BenchAccountCreated.v1" }

func benchEvent(key string, i int) eventstore.EventData {
	data, _ := json.Marshal(benchPayload{
		AccountID: int64(i), Provider: 7, Login: "user" + strconv.Itoa(i), Fullname: "Subscriber Number " + strconv.Itoa(i),
		Enabled: true, Contract: "contract 2026/" + strconv.Itoa(i), Address: "1 Long Street, Flat " + strconv.Itoa(i%500),
	})
	return eventstore.EventData{
		ID: eventstore.DeriveEventID(key, i), Type: "BenchAccountCreated.v1", Data: data,
		Metadata: []byte(`{"occurred_at":"2026-11-22T17:59:41.123456789Z","actor":"admin:sync","request_id":"r-1"}`),
	}
}

// BenchmarkAppend measures durable single-event appends from 1, 4, 16, 64
// and 256 concurrent appenders, each making one append at a time and
// returning only after its fsync, against the raw fsync rate of the same
// disk measured in slices between theirs (see appendInterleaved).
// appends/raw-fsync is how many appends each fsync the disk can make
// carries: what group commit is for, ideally the number of appenders until
// the CPU is the limit.
func BenchmarkAppend(b *testing.B) {
	for _, appenders := range []int{1, 4, 16, 64, 256} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			dir := b.TempDir()
			s, err := embedded.Open(dir, embedded.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			appendInterleaved(b, s, dir, appenders, func(i int) error {
				_, err := s.Append(ctx, "account-"+strconv.Itoa(i%10000), eventstore.Any, benchEvent("bench", i))
				return err
			})
		})
	}
}

// BenchmarkAppendCreate measures what an account create asks of the store:
// one AppendMulti of a login reservation and a new account stream, from 64
// concurrent appenders (as the HTTP benchmarks' clients).
func BenchmarkAppendCreate(b *testing.B) {
	dir := b.TempDir()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	appendInterleaved(b, s, dir, 64, func(i int) error {
		_, err := s.AppendMulti(ctx,
			eventstore.StreamAppend{Stream: "login-7-user" + strconv.Itoa(i), Expect: eventstore.NoStream,
				Events: []eventstore.EventData{benchEvent("take", i)}},
			eventstore.StreamAppend{Stream: "account-" + strconv.Itoa(i+1), Expect: eventstore.NoStream,
				Events: []eventstore.EventData{benchEvent("create", i)}})
		return err
	})
}

// sliceTime is about how long each slice of appends, and of raw fsyncs
// between them, takes.
const sliceTime = 100 * time.Millisecond

// appendInterleaved makes appends 0 to b.N-1 to s from appenders
// goroutines, in slices of about sliceTime, each after a slice of raw
// fsyncs (testutil.RawFsync) as long as the slice of appends before it on
// the disk under dir, so that a disk whose speed drifts slows both alike.
// It reports:
//   - appends/s and raw-fsyncs/s, each over its own slices;
//   - appends/raw-fsync, their ratio;
//   - appends/fsync, the appends per fsync pebble really made (of any of its
//     files, counted at the system call);
//   - cpu-µs/append, the process's CPU time per append (mostly the
//     committer's and pebble's work).
func appendInterleaved(b *testing.B, s *embedded.Store, dir string, appenders int, appendOne func(i int) error) {
	raw := testutil.NewRawFsync(b, dir)
	raw.Run(b, sliceTime/10)
	var elapsed, cpu time.Duration
	fsyncs, walFsyncs, walTime := s.Fsyncs(), s.WALFsyncs(), s.WALFsyncTime()
	slice := appenders
	b.ResetTimer()
	for done := 0; done < b.N; {
		to := min(done+slice, b.N)
		b.StartTimer()
		cpuBefore, start := testutil.ProcessCPU(b), time.Now()
		appendRange(b, appenders, done, to, appendOne)
		took := time.Since(start)
		cpu += testutil.ProcessCPU(b) - cpuBefore
		b.StopTimer()
		elapsed += took
		raw.Run(b, took)
		// The next slice takes about sliceTime at the rate so far.
		slice = max(appenders, int(float64(to)/elapsed.Seconds()*sliceTime.Seconds()))
		done = to
	}
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "appends/s")
	b.ReportMetric(raw.Rate(), "raw-fsyncs/s")
	b.ReportMetric(rate/raw.Rate(), "appends/raw-fsync")
	b.ReportMetric(float64(b.N)/float64(max(s.Fsyncs()-fsyncs, 1)), "appends/fsync")
	walFsyncs = s.WALFsyncs() - walFsyncs
	b.ReportMetric(float64((s.WALFsyncTime()-walTime).Microseconds())/float64(max(walFsyncs, 1)), "wal-fsync-µs")
	b.ReportMetric(1e6/raw.Rate(), "raw-fsync-µs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/append")
}

// appendRange makes appends from to to-1 from appenders goroutines, each
// one append at a time.
func appendRange(b *testing.B, appenders, from, to int, appendOne func(i int) error) {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for range min(appenders, to-from) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < to; i = int(next.Add(1)) - 1 {
				if err := appendOne(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// replayEvents is the size of the log the replay benchmark reads; override
// with TVSM_BENCH_REPLAY_EVENTS.
func replayEvents() int {
	if n, err := strconv.Atoi(os.Getenv("TVSM_BENCH_REPLAY_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// populate fills a store with n events over n/10 streams, 1000 per append.
func populate(b *testing.B, dir string, n int) {
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const per = 1000
	for i := 0; i < n; i += per {
		evs := make([]eventstore.EventData, 0, per)
		for j := i; j < min(i+per, n); j++ {
			evs = append(evs, benchEvent("replay", j))
		}
		if _, err := s.Append(ctx, "account-"+strconv.Itoa(i/per), eventstore.Any, evs...); err != nil {
			b.Fatal(err)
		}
	}
	// Let flushes and compactions of the fresh data finish, so the replay
	// measures reading, not pebble competing for the two cores.
	db := s.PebbleDB()
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); db.Metrics().Compact.NumInProgress > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkReplay measures a full catch-up subscription over the log: events
// read from pebble and decoded into RecordedEvents, and, in the json case,
// additionally decoded into domain events through the registry.
func BenchmarkReplay(b *testing.B) {
	n := replayEvents()
	dir := b.TempDir()
	populate(b, dir, n)
	reg := domain.NewRegistry()
	reg.Register("BenchAccountCreated.v1", func() domain.Event { return benchPayload{} })

	for _, decode := range []string{"store", "json"} {
		b.Run("decode="+decode, func(b *testing.B) {
			s, err := embedded.Open(dir, embedded.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for iter := 0; iter < b.N; iter++ {
				sub, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for {
					batch, err := sub.Recv(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if decode == "json" {
						for _, e := range batch.Events {
							if _, err := reg.Decode(e.Type, e.Data); err != nil {
								b.Fatal(err)
							}
						}
					}
					got += len(batch.Events)
					if batch.CaughtUp {
						break
					}
				}
				sub.Close()
				if got != n {
					b.Fatalf("replayed %d events, want %d", got, n)
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkRawScan is the ceiling for BenchmarkReplay: pebble iterating the
// event range of the same log without decoding anything.
func BenchmarkRawScan(b *testing.B) {
	dir := b.TempDir()
	populate(b, dir, replayEvents())
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		it, err := s.PebbleDB().NewIter(&pebble.IterOptions{LowerBound: []byte{'e'}, UpperBound: []byte{'f'}})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if _, err := it.ValueAndErr(); err != nil {
				b.Fatal(err)
			}
			n++
		}
		it.Close()
		if n != replayEvents() {
			b.Fatalf("scanned %d events, want %d", n, replayEvents())
		}
	}
	b.ReportMetric(float64(replayEvents()*b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkFdatasync compares what the commit log's fsyncs cost with what
// they would on a file that grows: 4 KiB written then fdatasync'd, at the
// end of a growing file (as the raw fsync reference does), and over blocks
// a file already has (a commit log segment, filled with zeros before use).
// Overwriting spares fdatasync the metadata commit of a new size and new
// blocks.
func BenchmarkFdatasync(b *testing.B) {
	const fileSize = 64 << 20
	block := make([]byte, 4096)
	for _, mode := range []string{"append", "overwrite"} {
		b.Run(mode, func(b *testing.B) {
			f, err := os.Create(b.TempDir() + "/f")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if mode == "overwrite" {
				if _, err := f.Write(make([]byte, fileSize)); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				at := int64(i) * int64(len(block)) // append: always past the end
				if mode == "overwrite" {
					at %= fileSize
				}
				if _, err := f.WriteAt(block, at); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Fdatasync(int(f.Fd())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendAfterIdle measures a lone durable append made after the
// process and the disk have had nothing to do for a while (a send on a
// quiet node, whose first device waits for it), beside a raw write and
// fdatasync over a block a file already has (what the commit log's own
// fsync is) after the same idle time. Each round: idle, the raw write,
// idle, the append. It reports the medians of both and their ratio, and the
// commit log's fsync alone (the store's fsync timer): append-µs minus
// wal-fsync-µs is what the store adds to the disk on a cold machine, the
// hand-offs between its goroutines and the staging. On a VM whose idle
// virtual CPUs halt, both grow with the idle time.
func BenchmarkAppendAfterIdle(b *testing.B) {
	for _, idle := range []time.Duration{2 * time.Millisecond, 150 * time.Millisecond} {
		b.Run("idle="+idle.String(), func(b *testing.B) {
			dir := b.TempDir()
			s, err := embedded.Open(dir, embedded.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			raw, err := os.Create(dir + "/raw")
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			const rawSize = 1 << 20
			if _, err := raw.Write(make([]byte, rawSize)); err != nil {
				b.Fatal(err)
			}
			if err := raw.Sync(); err != nil {
				b.Fatal(err)
			}
			record := make([]byte, 512) // about a send's record with its claim's first devices
			ctx := context.Background()
			walFsyncs, walTime := s.WALFsyncs(), s.WALFsyncTime()
			appends, raws := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				time.Sleep(idle)
				start := time.Now()
				if _, err := raw.WriteAt(record, int64(i*len(record))%rawSize); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Fdatasync(int(raw.Fd())); err != nil {
					b.Fatal(err)
				}
				raws = append(raws, time.Since(start))
				time.Sleep(idle)
				start = time.Now()
				if _, err := s.Append(ctx, "command-"+strconv.Itoa(i+1), eventstore.NoStream, benchEvent("idle", i)); err != nil {
					b.Fatal(err)
				}
				appends = append(appends, time.Since(start))
			}
			b.StopTimer()
			median := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2].Nanoseconds()) / 1e3
			}
			a, r := median(appends), median(raws)
			b.ReportMetric(a, "append-µs")
			b.ReportMetric(r, "raw-fsync-µs")
			b.ReportMetric(a/r, "append/raw")
			b.ReportMetric(float64((s.WALFsyncTime()-walTime).Nanoseconds())/1e3/float64(max(s.WALFsyncs()-walFsyncs, 1)), "wal-fsync-µs")
		})
	}
}

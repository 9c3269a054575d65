package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// bigEvent is an event of about 1 KiB, so that a few thousand fill several
// commit log segments (the first is 1 MiB).
func bigEvent(key string, i int) eventstore.EventData {
	e := event(key, i)
	e.Data = fmt.Appendf(nil, `{"i":%d,"pad":%q}`, i, strings.Repeat("x", 1000))
	return e
}

// appendStreams appends each events to streams streams from one appender
// per stream and returns the head.
func appendStreams(t *testing.T, s *embedded.Store, streams, each int) uint64 {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for w := range streams {
		wg.Go(func() {
			stream := fmt.Sprintf("log-%d", w)
			for i := range each {
				expect := eventstore.NoStream
				if i > 0 {
					expect = eventstore.Exact(uint64(i - 1))
				}
				if _, err := s.Append(ctx, stream, expect, bigEvent(stream, i)); err != nil {
					errs <- fmt.Errorf("%s #%d: %w", stream, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	head, _ := s.Head(ctx)
	return head.Commit
}

// requireStreams checks that every stream holds its each events, in order.
func requireStreams(t *testing.T, s *embedded.Store, streams, each int) {
	t.Helper()
	for w := range streams {
		stream := fmt.Sprintf("log-%d", w)
		got, err := s.ReadStream(context.Background(), stream, eventstore.Any, 0)
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		if len(got) != each {
			t.Fatalf("%s holds %d events, want %d", stream, len(got), each)
		}
		for i, e := range got {
			if want := bigEvent(stream, i); e.ID != want.ID || e.Revision != uint64(i) || !bytes.Equal(e.Data, want.Data) {
				t.Fatalf("%s event %d: id %v revision %d, want %v at %d with its data", stream, i, e.ID, e.Revision, want.ID, i)
			}
		}
	}
}

// Given acknowledged appends that pebble has not all flushed, when the
// process dies, then the next Open replays
// them from the log: every event is there once, and appends go on after.
func TestCommitLogReplaysAfterACrash(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const streams, each = 8, 500 // about 4 MiB: segments of 1 and 2 MiB, and a third
	head := appendStreams(t, s, streams, each)
	if head != streams*each {
		t.Fatalf("head %d, want %d", head, streams*each)
	}
	if err := s.CloseAsCrash(); err != nil {
		t.Fatal(err)
	}
	flushed, err := embedded.FlushedEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	if flushed >= head {
		t.Fatalf("pebble flushed all %d events before the crash: the test needs some only in the log", flushed)
	}
	t.Logf("%d of %d events come back from the commit log", head-flushed, head)

	s = openStore(t, dir)
	requireStreams(t, s, streams, each)
	res, err := s.Append(context.Background(), "after", eventstore.NoStream, event("after", 0))
	if err != nil {
		t.Fatal(err)
	}
	if res.Position.Commit != head+1 {
		t.Fatalf("first append after the crash at %d, want %d", res.Position.Commit, head+1)
	}
}

// Given a crash in the middle of writing a group's record, the record
// fails its checksum: Open ends the log before it, and the appends before
// it are all there. That group was never acknowledged: its fsync had not
// returned.
func TestCommitLogEndsAtATornRecord(t *testing.T) {
	for name, tear := range map[string]func(b []byte) []byte{
		"payload byte flipped": func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b },
		"cut short":            func(b []byte) []byte { return b[:len(b)-7] },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := embedded.Open(dir, embedded.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i := range 10 { // one group each
				if _, err := s.Append(ctx, "torn", eventstore.Any, event("torn", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.CloseAsCrash(); err != nil {
				t.Fatal(err)
			}
			path := embedded.CommitLogSegmentPath(dir, 1)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			end := bytes.LastIndex(data, []byte(`{"i":9}`)) + len(`{"i":9}`)
			torn := tear(bytes.Clone(data[:end]))
			rest := make([]byte, len(data)-len(torn)) // the zeros of the rest of the segment
			if err := os.WriteFile(path, append(torn, rest...), 0o644); err != nil {
				t.Fatal(err)
			}

			s = openStore(t, dir)
			got, err := s.ReadStream(ctx, "torn", eventstore.Any, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 9 {
				t.Fatalf("%d events after the torn record, want the 9 before it", len(got))
			}
			res, err := s.Append(ctx, "torn", eventstore.Exact(8), event("torn", 9))
			if err != nil {
				t.Fatalf("append again where the torn record was: %v", err)
			}
			if res.Position.Commit != 10 {
				t.Fatalf("the append again is at %d, want 10", res.Position.Commit)
			}
		})
	}
}

// Segments whose records pebble has flushed are recycled or removed: the
// log stays a few segments long however much is written, and what was
// written is all there after a crash and after a clean close, which
// leaves the log empty.
func TestCommitLogRecyclesFlushedSegments(t *testing.T) {
	dir := t.TempDir()
	// Segments of 64 KiB, 128 KiB, 256 KiB...: about 1.3 MiB of appends go
	// through five of them, as 16 MiB would with the usual first megabyte.
	opts := embedded.WithSmallSegments(embedded.Options{}, 64<<10)
	s, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	const streams, each = 16, 80 // about 1.3 MiB
	appendStreams(t, s, streams, each)
	// Recycling waits for pebble's flush; a few more appends let the
	// committer see it has ended.
	deadline := time.Now().Add(10 * time.Second)
	var files []string
	for i := 0; ; i++ {
		files, _ = embedded.CommitLogFiles(dir)
		if len(files) <= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("commit log files after 1.3 MiB: %v, want at most 4 (segments not flushed yet, the current one, a spare)", files)
		}
		if _, err := s.Append(context.Background(), "tick", eventstore.Any, event("tick", i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if seq := newestSegment(t, files); seq < 5 {
		t.Fatalf("commit log files %v: the newest is segment %d, want the fifth or later (the appends filled four)", files, seq)
	}
	if err := s.CloseAsCrash(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	requireStreams(t, s, streams, each)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A clean close flushed pebble: the log has nothing left to replay.
	if files, _ := embedded.CommitLogFiles(dir); len(files) != 0 {
		t.Fatalf("commit log files after a clean close: %v, want none", files)
	}
	s = openStore(t, dir)
	requireStreams(t, s, streams, each)
}

// newestSegment is the highest sequence number among the commit log's
// segment files (NNNN.seg).
func newestSegment(t *testing.T, files []string) uint64 {
	t.Helper()
	var newest uint64
	for _, f := range files {
		if name, ok := strings.CutSuffix(f, ".seg"); ok {
			seq, err := strconv.ParseUint(name, 10, 64)
			if err != nil {
				t.Fatalf("segment file %s: %v", f, err)
			}
			newest = max(newest, seq)
		}
	}
	return newest
}

// A store whose commit log fsync failed closes without a flush (pebble
// writes nothing more) and opens again with what was acknowledged. The
// failed append's outcome is unknown: its record may have reached the disk.
func TestCommitLogCloseAfterAFailedFsync(t *testing.T) {
	h := newHeldFsyncer()
	dir := t.TempDir()
	s, err := embedded.Open(dir, embedded.WithFsyncer(embedded.Options{}, h))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Append(ctx, "kept", eventstore.NoStream, event("kept", 0)); err != nil {
		t.Fatal(err)
	}
	eio := error(errors.New("injected EIO"))
	h.fail.Store(&eio)
	h.armed.Store(true)
	failed := appendAsync(s, "lost")
	waitFor(t, h.entered, "the failing fsync")
	h.release <- struct{}{}
	if err := <-failed; err == nil {
		t.Fatal("append acknowledged after its fsync failed")
	}
	h.armed.Store(false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	if _, err := s.ReadStream(ctx, "kept", eventstore.Any, 0); err != nil {
		t.Fatalf("the acknowledged append: %v", err)
	}
}

// Given a power loss that kept the next segment's first record but lost
// the one before it, the last of its segment (records are written before
// the fsyncs of the groups before them end), when the store opens, then
// the log ends before the lost record: the event after it, never
// acknowledged, is not served, positions stay dense, and appends go on at
// the lost record's position, also after a second crash (the segment past
// the hole does not come back).
func TestCommitLogEndsAtAHoleAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const total = 40 // one group each, all in the first segment
	for i := range total {
		if _, err := s.Append(ctx, "holes", eventstore.Any, bigEvent("holes", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CloseAsCrash(); err != nil {
		t.Fatal(err)
	}
	if flushed, err := embedded.FlushedEvents(dir); err != nil || flushed >= total-1 {
		t.Fatalf("pebble flushed %d events (%v): the test needs the last two only in the log", flushed, err)
	}
	records, err := embedded.CommitLogRecords(dir, 1)
	if err != nil || len(records) != total {
		t.Fatalf("segment 1 holds %d records (%v), want %d", len(records), err, total)
	}
	// The power loss: the last record went on in segment 2 and survived;
	// the one before it, the last of segment 1, was lost.
	path := embedded.CommitLogSegmentPath(dir, 1)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last, lost := records[total-1], records[total-2]
	next := embedded.ReencodeRecord(data[last[0]:last[1]], 1, 2)
	clear(data[lost[0]:])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(embedded.CommitLogSegmentPath(dir, 2), next, 0o644); err != nil {
		t.Fatal(err)
	}

	check := func(s *embedded.Store, want int) {
		t.Helper()
		got, err := s.ReadStream(ctx, "holes", eventstore.Any, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Fatalf("%d events, want %d: the log must end before the lost record", len(got), want)
		}
		for i, e := range got {
			if e.Revision != uint64(i) || e.Position.Commit != uint64(i+1) {
				t.Fatalf("event %d at revision %d, position %v: not a prefix", i, e.Revision, e.Position)
			}
		}
		if head, _ := s.Head(ctx); head.Commit != uint64(want) {
			t.Fatalf("head %v, want %d", head, want)
		}
	}
	s = openStore(t, dir)
	check(s, total-2)
	res, err := s.Append(ctx, "holes", eventstore.Exact(total-3), bigEvent("holes", total-2))
	if err != nil || res.Position.Commit != total-1 {
		t.Fatalf("append where the lost record was: %v at %v, want position %d", err, res.Position, total-1)
	}
	if err := s.CloseAsCrash(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	check(s, total-1)
}

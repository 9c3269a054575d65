package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// Once the committer has dropped the filters of keys pebble flushed, appends
// and reads still find those keys in the sstables: a repeated append is
// answered with its original result, its ids in another stream are
// duplicates, and heads give the right expectations and reads.
func TestKeysFoundAfterTheirFilterIsDropped(t *testing.T) {
	s, err := embedded.Open(t.TempDir(), embedded.WithSmallKeyFilters(embedded.Options{}, 8))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const streams = 40
	results := make([]eventstore.AppendResult, streams)
	for i := range results {
		if results[i], err = s.Append(ctx, fmt.Sprintf("f-%d", i), eventstore.NoStream, event(fmt.Sprintf("f-%d", i), 0)); err != nil {
			t.Fatal(err)
		}
	}
	// Drops happen between groups once a flush is done: keep appending
	// until one has happened.
	for deadline := time.Now().Add(30 * time.Second); s.DroppedKeyFilters() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no key filter was dropped")
		}
		if _, err := s.Append(ctx, "filler", eventstore.Any, event(fmt.Sprintf("filler-%d", time.Now().UnixNano()), 0)); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range results {
		stream := fmt.Sprintf("f-%d", i)
		got, err := s.Append(ctx, stream, eventstore.NoStream, event(stream, 0))
		if err != nil || got != want {
			t.Fatalf("retry on %s: %+v, %v; want the original %+v", stream, got, err, want)
		}
		if _, err := s.Append(ctx, "other", eventstore.Any, event(stream, 0)); !errors.Is(err, eventstore.ErrDuplicateEventID) {
			t.Fatalf("id of %s in another stream: %v, want ErrDuplicateEventID", stream, err)
		}
		if _, err := s.Append(ctx, stream, eventstore.NoStream, event(stream, 1)); !errors.Is(err, eventstore.ErrWrongExpectedRevision) {
			t.Fatalf("NoStream on existing %s: %v, want ErrWrongExpectedRevision", stream, err)
		}
		if _, err := s.Append(ctx, stream, eventstore.Exact(0), event(stream, 1)); err != nil {
			t.Fatalf("append at revision 1 of %s: %v", stream, err)
		}
		recs, err := s.ReadStream(ctx, stream, eventstore.Start, 0)
		if err != nil || len(recs) != 2 {
			t.Fatalf("read %s: %d events, %v; want 2", stream, len(recs), err)
		}
	}
	if _, err := s.ReadStream(ctx, "f-absent", eventstore.Start, 0); !errors.Is(err, eventstore.ErrStreamNotFound) {
		t.Fatalf("read of an absent stream: %v, want ErrStreamNotFound", err)
	}
}

package embedded_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// Given streams of one and of several events, the store keeps a head key
// only for those past revision 0, and an append that takes a stream past it
// writes one.
func TestHeadKeysOnlyForStreamsPastRevisionZero(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	mustAppend(t, s, "single", eventstore.NoStream, event("single", 0))
	mustAppend(t, s, "triple", eventstore.NoStream, event("triple", 0), event("triple", 1), event("triple", 2))
	mustAppend(t, s, "grown", eventstore.NoStream, event("grown", 0))
	requireHeads(t, s, map[string]uint64{"triple": 2})

	mustAppend(t, s, "grown", eventstore.Exact(0), event("grown", 1))
	requireHeads(t, s, map[string]uint64{"triple": 2, "grown": 1})

	// Without a head key, "single" still exists and ends at revision 0.
	_, err := s.Append(ctx, "single", eventstore.NoStream, event("single", 9))
	var wrong *eventstore.WrongRevisionError
	if !errors.As(err, &wrong) || wrong.Actual != eventstore.Exact(0) {
		t.Fatalf("no-stream append to a one-event stream: %v, want wrong revision, actual 0", err)
	}
	requireRead(t, s, "single", 1)
	requireRead(t, s, "grown", 2)
}

// Given a store written by a format-2 build (a head key for every stream),
// Open upgrades it to the current format in place, replaying what pebble
// wrote to its WAL, and every stream keeps its revision;
// a format it does not know is refused.
func TestOpenUpgradesFormat2(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "single", eventstore.NoStream, event("single", 0))
	mustAppend(t, s, "double", eventstore.NoStream, event("double", 0), event("double", 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := embedded.RewriteAsFormat2(dir); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir)
	requireHeads(t, s, map[string]uint64{"single": 0, "double": 1}) // format 2's keys stay valid
	mustAppend(t, s, "single", eventstore.Exact(0), event("single", 1))
	mustAppend(t, s, "double", eventstore.Exact(1), event("double", 2))
	mustAppend(t, s, "new", eventstore.NoStream, event("new", 0))
	requireHeads(t, s, map[string]uint64{"single": 1, "double": 2})
	requireRead(t, s, "single", 2)
	requireRead(t, s, "double", 3)
	requireRead(t, s, "new", 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if v, err := embedded.ReadFormatMarker(dir); err != nil || v != 4 {
		t.Fatalf("format marker after the upgrade: %d, %v; want 4", v, err)
	}
	for _, version := range []uint64{1, 5} {
		if err := embedded.WriteFormatMarker(dir, version); err != nil {
			t.Fatal(err)
		}
		if s, err := embedded.Open(dir, embedded.Options{}); err == nil || !strings.Contains(err.Error(), "data format") {
			if s != nil {
				s.Close()
			}
			t.Fatalf("open format %d: %v, want refused", version, err)
		}
	}
}

func mustAppend(t *testing.T, s *embedded.Store, stream string, expect eventstore.Revision, events ...eventstore.EventData) {
	t.Helper()
	if _, err := s.Append(context.Background(), stream, expect, events...); err != nil {
		t.Fatalf("append %s (%v): %v", stream, expect, err)
	}
}

func requireHeads(t *testing.T, s *embedded.Store, want map[string]uint64) {
	t.Helper()
	got, err := s.HeadKeys()
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("head keys %v, want %v", got, want)
	}
}

// requireRead checks that stream holds n events, revisions 0 to n-1, and
// that reading past its end gives nothing.
func requireRead(t *testing.T, s *embedded.Store, stream string, n int) {
	t.Helper()
	ctx := context.Background()
	recs, err := s.ReadStream(ctx, stream, eventstore.Start, 0)
	if err != nil {
		t.Fatalf("read %s: %v", stream, err)
	}
	if len(recs) != n {
		t.Fatalf("read %s: %d events, want %d", stream, len(recs), n)
	}
	for i, r := range recs {
		if r.Revision != uint64(i) {
			t.Fatalf("read %s: event %d has revision %d", stream, i, r.Revision)
		}
	}
	past, err := s.ReadStream(ctx, stream, eventstore.Exact(uint64(n)), 0)
	if err != nil || len(past) != 0 {
		t.Fatalf("read %s past its end: %d events, %v", stream, len(past), err)
	}
}

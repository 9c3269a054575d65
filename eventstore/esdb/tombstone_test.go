package esdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/esdb/esdbdouble"
)

// TestTombstoneSurvivesServerRestart: the tombstone is the server's, not
// the client's: it holds when the server restarts.
func TestTombstoneSurvivesServerRestart(t *testing.T) {
	r := newRestartable(t)
	s, err := esdb.Open(t.Context(), r.srv.URL(), fastReconnect)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ev := testEvent("gone")
	if _, err := s.Append(t.Context(), "gone", eventstore.NoStream, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.Tombstone(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	r.stop()
	r.start()
	appendUntilOK(t, s, "other", testEvent("other"))

	if _, err := s.ReadStream(t.Context(), "gone", eventstore.Start, 0); !errors.Is(err, eventstore.ErrStreamDeleted) {
		t.Fatalf("read after the restart: %v, want ErrStreamDeleted", err)
	}
	if _, err := s.Append(t.Context(), "gone", eventstore.NoStream, ev); !errors.Is(err, eventstore.ErrStreamDeleted) {
		t.Fatalf("retried append after the restart: %v, want ErrStreamDeleted", err)
	}
	if err := s.Tombstone(t.Context(), "gone"); err != nil {
		t.Fatalf("second tombstone after the restart: %v, want nil", err)
	}
}

// TestSubscriptionAcrossTombstone: as on EventStoreDB until a scavenge,
// $all still delivers the events the stream held; the tombstone
// EventStoreDB writes to $all is not delivered, but the checkpoint passes
// it.
func TestSubscriptionAcrossTombstone(t *testing.T) {
	s := open(t, startDouble(t, esdbdouble.Options{}).URL())
	ctx := t.Context()
	sub, err := s.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	gone := []eventstore.EventData{testEvent("gone-0"), testEvent("gone-1")}
	if _, err := s.Append(ctx, "gone", eventstore.NoStream, gone...); err != nil {
		t.Fatal(err)
	}
	if err := s.Tombstone(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var got []eventstore.RecordedEvent
	var checkpoint eventstore.Position
	deadline := time.Now().Add(10 * time.Second)
	for checkpoint.Compare(head) < 0 {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		b, err := sub.Recv(rctx)
		cancel()
		if err != nil {
			t.Fatalf("Recv (checkpoint %v, head %v): %v", checkpoint, head, err)
		}
		got = append(got, b.Events...)
		checkpoint = b.Checkpoint
	}
	if len(got) != 2 || got[0].ID != gone[0].ID || got[1].ID != gone[1].ID || string(got[1].Data) != "gone-1" {
		t.Fatalf("subscription delivered %d events %+v; want the two events of the tombstoned stream, and not the tombstone", len(got), got)
	}
	if checkpoint != head {
		t.Fatalf("checkpoint %v, want the tombstone's position %v", checkpoint, head)
	}
}

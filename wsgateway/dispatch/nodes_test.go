package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/memory"
	"tvsm/wsgateway"
	"tvsm/wsgateway/dispatch"
)

// received drains dev's messages until a marker and returns the delivery ids.
func (dev *device) received(t *testing.T) []string {
	t.Helper()
	dev.n.settle(t)
	if !dev.n.d.Hub().Send(dev.id, []byte(`{"type":"marker","id":"marker"}`)) {
		t.Fatalf("device %d: not connected for the marker", dev.id)
	}
	var ids []string
	for {
		m := dev.next(t)
		if m.Type == "marker" {
			return ids
		}
		ids = append(ids, m.ID)
	}
}

func TestTwoNodesDeliverOnceToADeviceMovingBetweenThem(t *testing.T) {
	e := newEnv(t)
	a := e.startNode(t, "a", t.TempDir(), wsgateway.Options{})
	b := e.startNode(t, "b", t.TempDir(), wsgateway.Options{})
	onA := a.connect(t, 1, 10, 1)
	send := e.issue(t, domain.RecipientAccounts, []int64{10}, message("once").until(t0.Add(time.Hour)))
	if m := onA.next(t); m.ID != domain.DeliveryID(send, 0, 1) {
		t.Fatalf("got %+v", m)
	}
	onA.hangUp(t)
	e.advance(t, time.Minute)
	onB := b.connect(t, 1, 10, 1)
	onB.nothingMore(t)
}

func TestTwoNodesRaceForOneDeviceAndOneWins(t *testing.T) {
	e := newEnv(t)
	a := e.startNode(t, "a", t.TempDir(), wsgateway.Options{})
	b := e.startNode(t, "b", t.TempDir(), wsgateway.Options{})
	// The same device holds a connection to each node (a half-open old one
	// and a new one, say): both see it connected at the send time.
	devs := []*device{a.connect(t, 1, 10, 1), b.connect(t, 1, 10, 1)}
	for i := 0; i < 20; i++ {
		send := e.issue(t, domain.RecipientDevices, []int64{1}, message("race").until(t0.Add(time.Hour)))
		var got []string
		for _, dev := range devs {
			got = append(got, dev.received(t)...)
		}
		if len(got) != 1 || got[0] != domain.DeliveryID(send, 0, 1) {
			t.Fatalf("send %d: delivered %v, want exactly one", send, got)
		}
	}
	sa, sb := a.d.Stats(), b.d.Stats()
	if sa.Deliveries+sb.Deliveries != 20 {
		t.Fatalf("deliveries %d + %d", sa.Deliveries, sb.Deliveries)
	}
	t.Logf("claims a=%d b=%d, conflicts a=%d b=%d", sa.Claims, sb.Claims, sa.ClaimConflicts, sb.ClaimConflicts)
}

func TestRestartKeepsPendingDelayedCommands(t *testing.T) {
	for _, tc := range []struct {
		name     string
		restored int64 // live sends New restores before reading the log
		damage   func(t *testing.T, dir string)
	}{
		{"from snapshot", 2, func(*testing.T, string) {}},
		{"snapshot missing", 0, func(t *testing.T, dir string) { remove(t, dir) }},
		{"snapshot damaged", 0, func(t *testing.T, dir string) {
			path := filepath.Join(dir, "dispatch.snapshot")
			if err := os.WriteFile(path, []byte("TVSMSNAP garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			dir := t.TempDir()
			n1 := e.startNode(t, "n1", dir, wsgateway.Options{})
			early := n1.connect(t, 1, 10, 1)
			ttl := e.issue(t, domain.RecipientDevices, []int64{1}, message("ttl").until(t0.Add(3*time.Hour)))
			if m := early.next(t); m.ID != domain.DeliveryID(ttl, 0, 1) {
				t.Fatalf("got %+v", m)
			}
			delayed := e.issue(t, domain.RecipientProviders, []int64{1}, message("delayed").at(t0.Add(time.Hour)).until(t0.Add(2*time.Hour)))
			n1.stop(t)
			if _, err := os.Stat(filepath.Join(dir, "dispatch.snapshot")); err != nil {
				t.Fatalf("no snapshot after Close: %v", err)
			}
			tc.damage(t, dir)
			if got := restored(t, e, dir); got != tc.restored {
				t.Fatalf("New restored %d live sends, want %d", got, tc.restored)
			}

			n2 := e.startNode(t, "n2", dir, wsgateway.Options{})
			if s := n2.d.Stats(); s.LiveSends != 2 {
				t.Fatalf("live sends after restart: %d, want 2", s.LiveSends)
			}
			e.advance(t, 30*time.Minute)
			dev := n2.connect(t, 1, 10, 1) // had the ttl command before the restart
			dev.nothingMore(t)
			e.advance(t, 30*time.Minute) // post_time
			if got := dev.received(t); len(got) != 1 || got[0] != domain.DeliveryID(delayed, 0, 1) {
				t.Fatalf("after post_time got %v", got)
			}
			e.advance(t, time.Minute)
			if got := dev.received(t); len(got) != 0 {
				t.Fatalf("delivered again: %v", got)
			}
		})
	}
}

// restored opens a dispatcher on dir without running it and returns how
// many live sends it restored from the snapshot.
func restored(t *testing.T, e *env, dir string) int64 {
	t.Helper()
	d, err := dispatch.New(dispatch.Options{Store: e.store, Registry: e.reg, Clock: e.clock, Node: "probe", Logger: quiet(), DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return d.Stats().LiveSends
}

func remove(t *testing.T, dir string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "dispatch.snapshot")); err != nil {
		t.Fatal(err)
	}
}

func TestExpiryPassedWhileNoNodeRanIsAppendedOnStart(t *testing.T) {
	e := newEnv(t)
	send := e.issue(t, domain.RecipientProviders, []int64{1}, message("missed").until(t0.Add(time.Hour)))
	e.clock.Advance(2 * time.Hour)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	e.waitEvents(t, domain.CommandStream(send), "CommandExpired", func(evs []domain.Event) bool {
		return len(evs) == 2 && evs[1] == domain.Event(domain.CommandExpired{SendID: send, Index: 0})
	})
	dev := n.connect(t, 1, 10, 1)
	dev.nothingMore(t)
	if s := n.d.Stats(); s.LiveCommands != 0 {
		t.Fatalf("stats %+v", s)
	}
	// A second node starting later finds the expiry and appends nothing.
	e.startNode(t, "n2", t.TempDir(), wsgateway.Options{})
	if evs := e.events(t, domain.CommandStream(send)); len(evs) != 2 {
		t.Fatalf("stream has %d events, want 2", len(evs))
	}
}

func TestRestartDoesNotReplayOldImmediateCommands(t *testing.T) {
	e := newEnv(t)
	n1 := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n1.connect(t, 1, 10, 1)
	send := e.issue(t, domain.RecipientDevices, []int64{1}, message("now"))
	if m := dev.next(t); m.ID != domain.DeliveryID(send, 0, 1) {
		t.Fatalf("got %+v", m)
	}
	n1.stop(t)
	// A node without snapshot reads every command stream again.
	n2 := e.startNode(t, "n2", t.TempDir(), wsgateway.Options{})
	again := n2.connect(t, 1, 10, 1)
	again.nothingMore(t)
	if s := n2.d.Stats(); s.LiveSends != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestReceiptsAcceptedByAnotherNode: a device that got a confirm message
// on one node and moved to another before answering acks and confirms
// there; a receipt for a delivery nobody made is still refused.
func TestReceiptsAcceptedByAnotherNode(t *testing.T) {
	e := newEnv(t)
	a := e.startNode(t, "a", t.TempDir(), wsgateway.Options{})
	b := e.startNode(t, "b", t.TempDir(), wsgateway.Options{})
	onA := a.connect(t, 1, 10, 1)
	send := e.issue(t, domain.RecipientDevices, []int64{1}, confirmMessage("pay?").until(t0.Add(time.Hour)))
	id := domain.DeliveryID(send, 0, 1)
	if m := onA.next(t); m.ID != id {
		t.Fatalf("got %+v", m)
	}
	onA.hangUp(t)
	b.settle(t) // b has applied a's claim
	onB := b.connect(t, 1, 10, 1)
	onB.reply(t, "ack", id)
	onB.reply(t, "confirm", id)
	onB.reply(t, "ack", domain.DeliveryID(send, 1, 1)) // no such command
	e.waitEvents(t, domain.ReceiptStream(send), "the ack and the confirm", func(evs []domain.Event) bool {
		var acked, confirmed bool
		for _, ev := range evs {
			switch ev := ev.(type) {
			case domain.CommandsAcked:
				acked = acked || (ev.Index == 0 && len(ev.Devices) == 1 && ev.Devices[0] == 1)
			case domain.CommandsConfirmed:
				confirmed = confirmed || (ev.Index == 0 && len(ev.Devices) == 1 && ev.Devices[0] == 1)
			}
		}
		return acked && confirmed
	})
	// The counters move after the append returns.
	waitFor(t, func() bool {
		s := b.d.Stats()
		return s.Acks == 1 && s.Confirms == 1 && s.ReceiptsRejected == 1
	}, "node b to count 1 ack, 1 confirm and 1 rejected receipt")
}

// TestClaimLostToAnUnreadableAppendPausesAndWins: a server may refuse an
// append because of another one it has not made readable yet (the
// EventStoreDB double decides appends before their fsync). A node whose
// claim lost that way reads nothing new; it must pause and claim again,
// not spend its retries at once and leave its devices to the next round a
// second later (the test's clock never moves, so that round never comes).
func TestClaimLostToAnUnreadableAppendPausesAndWins(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	e := newEnvOn(&lateReads{Store: store, lag: 30 * time.Millisecond, fresh: map[string][]freshAppend{}})
	a := e.startNode(t, "a", t.TempDir(), wsgateway.Options{})
	b := e.startNode(t, "b", t.TempDir(), wsgateway.Options{})
	for i := range 5 {
		onA, onB := a.connect(t, int64(10*i+1), 10, 1), b.connect(t, int64(10*i+2), 20, 1)
		send := e.issue(t, domain.RecipientDevices, []int64{onA.id, onB.id}, message("both").until(t0.Add(time.Hour)))
		for _, dev := range []*device{onA, onB} {
			if m := dev.next(t); m.ID != domain.DeliveryID(send, 0, dev.id) {
				t.Fatalf("send %d, device %d: got %+v", send, dev.id, m)
			}
		}
		onA.hangUp(t)
		onB.hangUp(t)
	}
	if f := a.d.Stats().ClaimFailures + b.d.Stats().ClaimFailures; f != 0 {
		t.Fatalf("%d delivery rounds given up", f)
	}
}

// lateReads hides the events of command streams from ReadStream for lag
// after their append (subscriptions see them at once).
type lateReads struct {
	eventstore.Store
	lag   time.Duration
	mu    sync.Mutex
	fresh map[string][]freshAppend
}

type freshAppend struct {
	first uint64 // revision of the append's first event
	at    time.Time
}

func (l *lateReads) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	res, err := l.Store.Append(ctx, stream, expect, events...)
	if err == nil && strings.HasPrefix(stream, "command-") {
		l.mu.Lock()
		l.fresh[stream] = append(l.fresh[stream], freshAppend{first: res.NextExpected + 1 - uint64(len(events)), at: time.Now()})
		l.mu.Unlock()
	}
	return res, err
}

func (l *lateReads) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	recs, err := l.Store.ReadStream(ctx, stream, from, max)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.fresh[stream] {
		if time.Since(f.at) < l.lag {
			recs = slices.DeleteFunc(recs, func(r eventstore.RecordedEvent) bool { return r.Revision >= f.first })
		}
	}
	return recs, err
}

// A round larger than one append may hold (EventStoreDB refuses an append
// over its size limit) is claimed a part at a time, and every device gets
// the command once.
func TestALargeRoundIsClaimedAPartAtATime(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	limited := &claimSizes{Store: store, max: 3}
	e := newEnvOn(limited)
	e.tune = func(o *dispatch.Options) { o.ClaimAppendMax = 3 }
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	var devs []*device
	for id := int64(1); id <= 8; id++ {
		devs = append(devs, n.connect(t, id, 10+id, 1))
	}
	send := e.issue(t, domain.RecipientProviders, []int64{1}, message("many"))
	for _, dev := range devs {
		if got := dev.received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, dev.id)}) {
			t.Fatalf("device %d got %v", dev.id, got)
		}
	}
	var claimed []int64
	for _, c := range e.sentEvents(t, send) {
		claimed = append(claimed, c.Devices...)
	}
	if slices.Sort(claimed); !slices.Equal(claimed, []int64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("claimed %v", claimed)
	}
	if limited.appends.Load() != 3 || limited.refused.Load() != 0 {
		t.Fatalf("%d claim appends, %d refused; want 3 within the bound", limited.appends.Load(), limited.refused.Load())
	}
}

// claimSizes refuses a claim append listing more than max devices, as
// EventStoreDB refuses one over its size limit, and counts the others.
type claimSizes struct {
	eventstore.Store
	max              int
	appends, refused atomic.Int64
}

func (c *claimSizes) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	devices := 0
	for _, e := range events {
		if e.Type == domain.CommandsSentType {
			var sent domain.CommandsSent
			if err := json.Unmarshal(e.Data, &sent); err != nil {
				return eventstore.AppendResult{}, err
			}
			devices += len(sent.Devices)
		}
	}
	if devices > c.max {
		c.refused.Add(1)
		return eventstore.AppendResult{}, fmt.Errorf("%w: %d devices in one append", eventstore.ErrInvalidAppend, devices)
	}
	if devices > 0 {
		c.appends.Add(1)
	}
	return c.Store.Append(ctx, stream, expect, events...)
}

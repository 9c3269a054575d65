package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/memory"
	"tvsm/wsgateway"
	"tvsm/wsgateway/dispatch"
)

// A send taken by a node carries that node's claim in its own append
// (ClaimWithSend), so the devices there get it after one durable append.

// appendSend appends issued and events in one append, as the send path
// does, and returns the stream's last revision and the log position.
func (e *env) appendSend(t *testing.T, issued domain.CommandsIssued, claims []domain.Event) (uint64, eventstore.Position) {
	t.Helper()
	md, err := domain.EncodeMetadata(domain.Envelope{OccurredAt: e.clock.Now(), Actor: domain.AdminActor("admin"), RequestID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var data []eventstore.EventData
	for _, ev := range append([]domain.Event{issued}, claims...) {
		typ, b, err := e.reg.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, eventstore.EventData{ID: eventstore.NewEventID(), Type: typ, Data: b, Metadata: md})
	}
	res, err := e.store.Append(context.Background(), domain.CommandStream(issued.SendID), eventstore.NoStream, data...)
	if err != nil {
		t.Fatal(err)
	}
	return res.NextExpected, res.Position
}

// sendVia makes a send the way n's send path does: n's claim goes into the
// send's append and, when report is set, n hears that the append is durable
// (an append whose outcome was unknown is not reported); then every running
// node applies it. It returns the claim.
func (e *env) sendVia(t *testing.T, n *node, issued domain.CommandsIssued, report bool) []domain.Event {
	t.Helper()
	claims := n.d.ClaimWithSend(context.Background(), issued)
	rev, pos := e.appendSend(t, issued, claims)
	if report {
		n.d.SendAppended(issued.SendID, rev)
	}
	e.waitApplied(t, pos)
	return claims
}

// waitApplied waits until every running node has applied the log to pos.
func (e *env) waitApplied(t *testing.T, pos eventstore.Position) {
	t.Helper()
	for _, n := range e.nodes {
		if n.stopped {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := n.d.WaitApplied(ctx, pos)
		cancel()
		if err != nil {
			t.Fatalf("%s did not apply the log to %v: %v", n.name, pos, err)
		}
	}
}

// claimsOf returns the CommandsSent events among events.
func claimsOf(events []domain.Event) []domain.CommandsSent {
	var out []domain.CommandsSent
	for _, ev := range events {
		if c, ok := ev.(domain.CommandsSent); ok {
			out = append(out, c)
		}
	}
	return out
}

// sameClaims reports whether got holds exactly the claims want, in order.
func sameClaims(got, want []domain.CommandsSent) bool {
	return slices.EqualFunc(got, want, func(a, b domain.CommandsSent) bool {
		return a.SendID == b.SendID && a.Index == b.Index && a.Node == b.Node && a.Late == b.Late && slices.Equal(a.Devices, b.Devices)
	})
}

func TestASendTakenHereCarriesThisNodesClaim(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	devs := fleet(t, n)
	issued := e.prepare(t, domain.RecipientProviders, []int64{1}, message("hello"))
	claims := e.sendVia(t, n, issued, true)

	send := issued.SendID
	want := []domain.CommandsSent{{SendID: send, Index: 0, Devices: []int64{1, 2, 3}, Node: "n1"}}
	if !sameClaims(claimsOf(claims), want) || len(claims) != 1 {
		t.Fatalf("claim %+v, want %+v", claims, want)
	}
	events := e.events(t, domain.CommandStream(send))
	if len(events) != 2 || !sameClaims(claimsOf(events), want) {
		t.Fatalf("stream %+v, want the send and its claim only", events)
	}
	for _, id := range []int64{1, 2, 3} {
		if got := devs[id].received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, id)}) {
			t.Fatalf("device %d got %v", id, got)
		}
	}
	devs[4].nothingMore(t)
	if st := n.d.Stats(); st.SendClaims != 1 || st.Claims != 0 || st.Deliveries != 3 {
		t.Fatalf("stats: %d claims with the send, %d on their own, %d deliveries", st.SendClaims, st.Claims, st.Deliveries)
	}
}

func TestOtherNodesClaimTheirDevicesAfterASendsClaim(t *testing.T) {
	e := newEnv(t)
	a := e.startNode(t, "a", t.TempDir(), wsgateway.Options{})
	b := e.startNode(t, "b", t.TempDir(), wsgateway.Options{})
	one, two := a.connect(t, 1, 10, 1), b.connect(t, 2, 20, 1)
	// Device 3 holds a connection to each node (a half-open old one and a
	// new one): only the claim in the send's append may reach it.
	threeOnA, threeOnB := a.connect(t, 3, 30, 1), b.connect(t, 3, 30, 1)
	issued := e.prepare(t, domain.RecipientProviders, []int64{1}, message("once").until(t0.Add(time.Hour)))
	e.sendVia(t, a, issued, true)

	send := issued.SendID
	for _, c := range []struct {
		dev  *device
		want []string
	}{
		{one, []string{domain.DeliveryID(send, 0, 1)}},
		{two, []string{domain.DeliveryID(send, 0, 2)}},
		{threeOnA, []string{domain.DeliveryID(send, 0, 3)}},
		{threeOnB, nil},
	} {
		if got := c.dev.received(t); !slices.Equal(got, c.want) {
			t.Fatalf("device %d on %s got %v, want %v", c.dev.id, c.dev.n.name, got, c.want)
		}
	}
	want := []domain.CommandsSent{
		{SendID: send, Index: 0, Devices: []int64{1, 3}, Node: "a"},
		{SendID: send, Index: 0, Devices: []int64{2}, Node: "b"},
	}
	if got := claimsOf(e.events(t, domain.CommandStream(send))); !sameClaims(got, want) {
		t.Fatalf("claims %+v, want %+v", got, want)
	}
}

func TestAClaimTheLogShowsBeforeItsAppendIsReportedDelivers(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n.connect(t, 1, 10, 1)
	// The append's outcome was unknown to the send path (a timeout), but it
	// landed: the log shows the claim, and the node writes then.
	issued := e.prepare(t, domain.RecipientDevices, []int64{1}, message("landed"))
	claims := e.sendVia(t, n, issued, false)
	if len(claims) != 1 {
		t.Fatalf("claim %+v", claims)
	}
	if got := dev.received(t); !slices.Equal(got, []string{domain.DeliveryID(issued.SendID, 0, 1)}) {
		t.Fatalf("got %v", got)
	}
	// A report coming after all writes nothing more.
	n.d.SendAppended(issued.SendID, 1)
	dev.nothingMore(t)

	// The next send goes the same way as ever.
	next := e.prepare(t, domain.RecipientDevices, []int64{1}, message("next"))
	e.sendVia(t, n, next, true)
	if got := dev.received(t); !slices.Equal(got, []string{domain.DeliveryID(next.SendID, 0, 1)}) {
		t.Fatalf("next send: got %v", got)
	}
	if st := n.d.Stats(); st.SendClaims != 2 || st.Claims != 0 || st.Deliveries != 2 {
		t.Fatalf("stats: %d claims with the send, %d on their own, %d deliveries", st.SendClaims, st.Claims, st.Deliveries)
	}
}

func TestDevicesConnectingWhileASendIsAppendedGetItsTTLCommand(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	first := n.connect(t, 1, 10, 1)
	issued := e.prepare(t, domain.RecipientProviders, []int64{1}, message("ttl").until(t0.Add(time.Hour)))
	claims := n.d.ClaimWithSend(context.Background(), issued)
	// Connected after the claim was made, before the append is reported:
	// the claim does not list it, and the state does not hold the send yet.
	second := n.connect(t, 2, 20, 1)
	n.settle(t)
	rev, pos := e.appendSend(t, issued, claims)
	n.d.SendAppended(issued.SendID, rev)
	e.waitApplied(t, pos)

	send := issued.SendID
	for _, dev := range []*device{first, second} {
		if got := dev.received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, dev.id)}) {
			t.Fatalf("device %d got %v", dev.id, got)
		}
	}
	want := []domain.CommandsSent{
		{SendID: send, Index: 0, Devices: []int64{1}, Node: "n1"},
		{SendID: send, Index: 0, Devices: []int64{2}, Node: "n1"},
	}
	if got := claimsOf(e.events(t, domain.CommandStream(send))); !sameClaims(got, want) {
		t.Fatalf("claims %+v, want %+v", got, want)
	}
	// The command stays live for devices connecting later.
	third := n.connect(t, 3, 30, 1)
	if got := third.received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, 3)}) {
		t.Fatalf("device 3 got %v", got)
	}
}

func TestASendPartlyDueNowClaimsTheRestAtItsTime(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n.connect(t, 1, 10, 1)
	issued := e.prepare(t, domain.RecipientDevices, []int64{1}, message("now"), message("later").at(t0.Add(time.Minute)))
	claims := e.sendVia(t, n, issued, true)

	send := issued.SendID
	want := []domain.CommandsSent{{SendID: send, Index: 0, Devices: []int64{1}, Node: "n1"}}
	if !sameClaims(claimsOf(claims), want) {
		t.Fatalf("claim %+v, want %+v", claims, want)
	}
	if got := dev.received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, 1)}) {
		t.Fatalf("now: got %v", got)
	}
	e.advance(t, time.Minute)
	if got := dev.received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 1, 1)}) {
		t.Fatalf("at the post time: got %v", got)
	}
}

func TestNoClaimWithASendThatHasNothingDueHere(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	devs := fleet(t, n)
	for _, c := range []struct {
		name string
		to   domain.Recipients
		ids  []int64
		cmd  func(now time.Time) spec
		// got lists the devices that get the command, claimed once the
		// log shows the send (or at its post time).
		got []int64
	}{
		{"a command for later", domain.RecipientDevices, []int64{1},
			func(now time.Time) spec { return message("later").at(now.Add(time.Minute)) }, []int64{1}},
		{"no target device here", domain.RecipientDevices, []int64{99},
			func(now time.Time) spec { return message("nobody").until(now.Add(time.Hour)) }, nil},
	} {
		issued := e.prepare(t, c.to, c.ids, c.cmd(e.clock.Now()))
		if claims := e.sendVia(t, n, issued, true); claims != nil {
			t.Fatalf("%s: claim %+v, want none", c.name, claims)
		}
		e.advance(t, time.Minute)
		for id, dev := range devs {
			want := []string(nil)
			if slices.Contains(c.got, id) {
				want = []string{domain.DeliveryID(issued.SendID, 0, id)}
			}
			if got := dev.received(t); !slices.Equal(got, want) {
				t.Fatalf("%s: device %d got %v, want %v", c.name, id, got, want)
			}
		}
	}
	if st := n.d.Stats(); st.SendClaims != 0 {
		t.Fatalf("%d claims with a send", st.SendClaims)
	}
}

// A round beyond SendClaimMax: the send's append lists the first devices
// the round met, and the others are claimed in an append of their own
// once those are written to.
func TestARoundBeyondSendClaimMaxClaimsItsFirstDevicesWithTheSend(t *testing.T) {
	e := newEnv(t)
	e.tune = func(o *dispatch.Options) { o.SendClaimMax = 2 }
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	devs := fleet(t, n)
	issued := e.prepare(t, domain.RecipientProviders, []int64{1}, message("many"))
	claims := e.sendVia(t, n, issued, true)

	send := issued.SendID
	head := claimsOf(claims)
	if len(head) != 1 || len(head[0].Devices) != 2 {
		t.Fatalf("claim with the send %+v, want one of 2 devices", claims)
	}
	for id, dev := range devs {
		want := []string(nil)
		if id != 4 { // of provider 2
			want = []string{domain.DeliveryID(send, 0, id)}
		}
		if got := dev.received(t); !slices.Equal(got, want) {
			t.Fatalf("device %d got %v, want %v", id, got, want)
		}
	}
	rest := slices.DeleteFunc([]int64{1, 2, 3}, func(id int64) bool { return slices.Contains(head[0].Devices, id) })
	want := []domain.CommandsSent{head[0], {SendID: send, Index: 0, Devices: rest, Node: "n1"}}
	if got := claimsOf(e.events(t, domain.CommandStream(send))); !sameClaims(got, want) {
		t.Fatalf("claims %+v, want %+v", got, want)
	}
	if st := n.d.Stats(); st.SendClaims != 1 || st.Claims != 1 || st.Deliveries != 3 {
		t.Fatalf("stats: %d claims with the send, %d on their own, %d deliveries", st.SendClaims, st.Claims, st.Deliveries)
	}
}

// A device is in the claim with the send for every command due or for
// none, so that each device gets a send's commands in index order.
func TestASendClaimedInPartKeepsEachDevicesCommandsInOrder(t *testing.T) {
	e := newEnv(t)
	e.tune = func(o *dispatch.Options) { o.SendClaimMax = 3 }
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	devs := fleet(t, n)
	issued := e.prepare(t, domain.RecipientProviders, []int64{1}, message("first"), message("second").until(t0.Add(time.Hour)))
	claims := claimsOf(e.sendVia(t, n, issued, true))
	// Two commands a device: the round stops after the second device.
	if len(claims) != 2 || len(claims[0].Devices) != 2 || !slices.Equal(claims[0].Devices, claims[1].Devices) {
		t.Fatalf("claim with the send %+v, want the same 2 devices for both commands", claims)
	}
	send := issued.SendID
	for _, id := range []int64{1, 2, 3} {
		want := []string{domain.DeliveryID(send, 0, id), domain.DeliveryID(send, 1, id)}
		if got := devs[id].received(t); !slices.Equal(got, want) {
			t.Fatalf("device %d got %v, want %v", id, got, want)
		}
	}
}

// The rest of a round claimed in part races other nodes' claims like any
// round: a device connected to two nodes gets the command once.
func TestTheRestOfARoundClaimedInPartRacesOtherNodesOnce(t *testing.T) {
	e := newEnv(t)
	e.tune = func(o *dispatch.Options) { o.SendClaimMax = 1 }
	a := e.startNode(t, "a", t.TempDir(), wsgateway.Options{})
	b := e.startNode(t, "b", t.TempDir(), wsgateway.Options{})
	one, two := a.connect(t, 1, 10, 1), b.connect(t, 2, 20, 1)
	// Device 3 holds a connection to each node (a half-open old one and a
	// new one): whichever claims it first reaches it, the other leaves it.
	threeOnA, threeOnB := a.connect(t, 3, 30, 1), b.connect(t, 3, 30, 1)
	issued := e.prepare(t, domain.RecipientProviders, []int64{1}, message("once").until(t0.Add(time.Hour)))
	if head := claimsOf(e.sendVia(t, a, issued, true)); len(head) != 1 || len(head[0].Devices) != 1 {
		t.Fatalf("claim with the send %+v, want one device", head)
	}
	send := issued.SendID
	for _, dev := range []*device{one, two} {
		if got := dev.received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, dev.id)}) {
			t.Fatalf("device %d got %v", dev.id, got)
		}
	}
	got := append(threeOnA.received(t), threeOnB.received(t)...)
	if !slices.Equal(got, []string{domain.DeliveryID(send, 0, 3)}) {
		t.Fatalf("device 3 got %v over its two connections, want it once", got)
	}
	claimed := map[int64]int{}
	for _, c := range claimsOf(e.events(t, domain.CommandStream(send))) {
		for _, dev := range c.Devices {
			claimed[dev]++
		}
	}
	if len(claimed) != 3 || claimed[1] != 1 || claimed[2] != 1 || claimed[3] != 1 {
		t.Fatalf("claims by device %v, want 1, 2 and 3 once each", claimed)
	}
}

// refusingClaims is a store that refuses, while refuse is set, an append
// of claims alone (a claim with its send goes through).
type refusingClaims struct {
	eventstore.Store
	refuse atomic.Bool
}

func (s *refusingClaims) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if s.refuse.Load() && len(events) > 0 && events[0].Type == domain.CommandsSentType {
		return eventstore.AppendResult{}, fmt.Errorf("refused for the test: %w", eventstore.ErrInvalidAppend)
	}
	return s.Store.Append(ctx, stream, expect, events...)
}

func TestTheRestOfARoundClaimedInPartIsRetriedWhenItsAppendFails(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	store := &refusingClaims{Store: mem}
	e := newEnvOn(store)
	e.tune = func(o *dispatch.Options) { o.SendClaimMax = 1 }
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	devs := fleet(t, n)
	store.refuse.Store(true)
	issued := e.prepare(t, domain.RecipientProviders, []int64{1}, message("no ttl"))
	head := claimsOf(e.sendVia(t, n, issued, true))
	if len(head) != 1 || len(head[0].Devices) != 1 {
		t.Fatalf("claim with the send %+v, want one device", head)
	}
	first := head[0].Devices[0]
	send := issued.SendID
	if got := devs[first].received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, first)}) {
		t.Fatalf("device %d, in the claim with the send, got %v", first, got)
	}
	if st := n.d.Stats(); st.ClaimFailures != 1 || st.Claims != 0 {
		t.Fatalf("stats: %d claims failed, %d appended on their own; want the rest's claim failed", st.ClaimFailures, st.Claims)
	}
	store.refuse.Store(false)
	e.advance(t, time.Second) // RetryDelay
	for _, id := range []int64{1, 2, 3} {
		want := []string{domain.DeliveryID(send, 0, id)}
		if id == first {
			want = nil // had it already
		}
		if got := devs[id].received(t); !slices.Equal(got, want) {
			t.Fatalf("device %d got %v, want %v", id, got, want)
		}
	}
	if st := n.d.Stats(); st.Deliveries != 3 {
		t.Fatalf("%d deliveries, want 3", st.Deliveries)
	}
}

func TestARestartAfterASendClaimDeliversNothingTwice(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	n := e.startNode(t, "n1", dir, wsgateway.Options{})
	dev := n.connect(t, 1, 10, 1)
	issued := e.prepare(t, domain.RecipientAccounts, []int64{10}, message("ttl").until(t0.Add(time.Hour)),
		message("no ttl"))
	e.sendVia(t, n, issued, true)
	send := issued.SendID
	if got := dev.received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, 1), domain.DeliveryID(send, 1, 1)}) {
		t.Fatalf("got %v", got)
	}
	n.stop(t)

	again := e.startNode(t, "n1", dir, wsgateway.Options{})
	back := again.connect(t, 1, 10, 1)
	back.nothingMore(t)
	other := again.connect(t, 2, 10, 1)
	if got := other.received(t); !slices.Equal(got, []string{domain.DeliveryID(send, 0, 2)}) {
		t.Fatalf("a device new to the account got %v", got)
	}
}

func TestASendDoesNotWaitBehindAnotherSendsClaim(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	gated := &gatedClaims{Store: store, entered: make(chan struct{}, 1), open: make(chan struct{})}
	e := newEnvOn(gated)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	dev := n.connect(t, 1, 10, 1)
	// A send appended elsewhere: the node's claim of it waits on the store.
	first := e.prepare(t, domain.RecipientDevices, []int64{1}, message("first"))
	e.publishAsync(t, first)
	select {
	case <-gated.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not claim the first send")
	}
	// A send taken here meanwhile is appended alone, at once.
	second := e.prepare(t, domain.RecipientDevices, []int64{1}, message("second"))
	if claims := n.d.ClaimWithSend(context.Background(), second); claims != nil {
		t.Fatalf("claim %+v while the loop waits on the store, want none", claims)
	}
	e.publishAsync(t, second)
	close(gated.open)
	want := []string{domain.DeliveryID(first.SendID, 0, 1), domain.DeliveryID(second.SendID, 0, 1)}
	if got := []string{dev.next(t).ID, dev.next(t).ID}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	dev.nothingMore(t)
}

// gatedClaims holds the dispatcher's claim appends (CommandsSent) until
// open is closed, telling entered when one waits.
type gatedClaims struct {
	eventstore.Store
	entered chan struct{}
	open    chan struct{}
}

func (g *gatedClaims) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if len(events) > 0 && events[0].Type == domain.CommandsSentType {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.open:
		case <-ctx.Done():
			return eventstore.AppendResult{}, ctx.Err()
		}
	}
	return g.Store.Append(ctx, stream, expect, events...)
}

package dispatch_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/internal/testkit/testutil"
	"tvsm/wsgateway"
)

func TestAcksAndConfirmsBecomeReceiptEvents(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{})
	d1, d2 := n.connect(t, 1, 10, 1), n.connect(t, 2, 10, 1)
	send := e.issue(t, domain.RecipientAccounts, []int64{10}, confirmMessage("ok?"), message("fyi"))
	for _, dev := range []*device{d1, d2} {
		for i := 0; i < 2; i++ {
			m := dev.next(t)
			dev.reply(t, "ack", m.ID)
			dev.reply(t, "ack", m.ID) // repeated: rejected, recorded once
		}
	}
	d1.reply(t, "confirm", domain.DeliveryID(send, 0, 1))
	d1.reply(t, "confirm", domain.DeliveryID(send, 1, 1)) // a notify: nothing to confirm
	d1.reply(t, "ack", domain.DeliveryID(send, 0, 2))     // another device's delivery
	d2.reply(t, "ack", domain.DeliveryID(send+1, 0, 2))   // never sent

	acked := map[int][]int64{}
	var confirmed []int64
	e.waitEvents(t, domain.ReceiptStream(send), "receipts", func(evs []domain.Event) bool {
		acked, confirmed = map[int][]int64{}, nil
		for _, ev := range evs {
			switch ev := ev.(type) {
			case domain.CommandsAcked:
				acked[ev.Index] = append(acked[ev.Index], ev.Devices...)
			case domain.CommandsConfirmed:
				confirmed = append(confirmed, ev.Devices...)
			}
		}
		return len(acked[0])+len(acked[1]) == 4 && len(confirmed) == 1
	})
	for idx, devs := range acked {
		slices.Sort(devs)
		if !slices.Equal(devs, []int64{1, 2}) {
			t.Fatalf("command %d acked by %v", idx, devs)
		}
	}
	if !slices.Equal(confirmed, []int64{1}) {
		t.Fatalf("confirmed by %v", confirmed)
	}
	// The counters move after the append returns, which the events above
	// may be seen before.
	waitFor(t, func() bool {
		s := n.d.Stats()
		return s.ReceiptsRejected == 7 && s.Acks == 4 && s.Confirms == 1
	}, "seven rejected receipts, four acks and one confirm counted")
	if s := n.d.Stats(); s.Acks != 4 || s.Confirms != 1 || s.ReceiptsDropped != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSlowConsumerIsClosedWithoutHoldingUpOthers(t *testing.T) {
	e := newEnv(t)
	n := e.startNode(t, "n1", t.TempDir(), wsgateway.Options{QueueSize: 32, WriteWait: 5 * time.Second})
	tiny := testutil.SmallBufferDialer()
	n.connectWith(t, 1, 10, 1, tiny, false) // never reads
	fast := n.connect(t, 2, 10, 1)
	big := message(strings.Repeat("x", domain.MaxCommandTextLen))
	batch := []spec{big, big, big, big, big, big, big, big, big, big, big, big, big, big, big, big}
	sends := 0
	for n.d.Hub().Connected(1) {
		if sends == 300 {
			t.Fatal("the stuck device was never closed")
		}
		send := e.issue(t, domain.RecipientAccounts, []int64{10}, batch...)
		sends++
		for i := range batch {
			if m := fast.next(t); m.ID != domain.DeliveryID(send, i, 2) {
				t.Fatalf("fast device got %s, want command %d of send %d", m.ID, i, send)
			}
		}
	}
	evs := e.waitEvents(t, domain.DeviceStream(1), "disconnect", func(evs []domain.Event) bool { return len(evs) == 2 })
	if dis := evs[1].(domain.DeviceDisconnected); dis.Code != 1013 || dis.Reason != "slow_consumer" {
		t.Fatalf("disconnect %+v", dis)
	}
	if n.d.Hub().Stats().SlowConsumers != 1 || !n.d.Hub().Connected(2) {
		t.Fatalf("hub %+v", n.d.Hub().Stats())
	}
	t.Logf("slow consumer closed after %d sends of %d messages", sends, len(batch))
}

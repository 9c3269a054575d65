package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/platform/supervise"
	"tvsm/wsgateway"
)

// receiptKind is what a device reported about a delivery.
type receiptKind uint8

const (
	receiptAck receiptKind = iota + 1
	receiptConfirm
)

// receipt is one accepted ack or confirm, waiting to be appended.
type receipt struct {
	send   int64
	device int64
	index  uint8
	kind   receiptKind
}

// receipts turns device acks and confirms into CommandsAcked and
// CommandsConfirmed events, in batches appended by one goroutine.
type receipts struct {
	d     *Dispatcher
	book  *sentBook
	queue *dropQueue[receipt]
	done  chan struct{}
}

func newReceipts(d *Dispatcher) *receipts {
	r := &receipts{
		d:     d,
		book:  newSentBook(d.opts.ReceiptsPerDevice, d.opts.ReceiptWindow),
		queue: newDropQueue[receipt](d.opts.ReceiptQueue),
		done:  make(chan struct{}),
	}
	go r.run()
	return r
}

// handle accepts a device message if it names a delivery made to the
// connection's device, by this node or (acceptFrom) another, and not
// reported yet. It runs on the connection's reader (a poller's goroutine
// that reads many connections) and never blocks: when the queue is full
// the receipt is dropped and counted.
func (r *receipts) handle(c *wsgateway.Conn, m wsgateway.DeviceMessage) {
	send, index, device, ok := domain.ParseDeliveryID(m.ID)
	kind := receiptAck
	if m.Type == wsgateway.MessageConfirm {
		kind = receiptConfirm
	}
	if !ok || device != c.DeviceID() || !r.book.report(device, send, index, kind) {
		r.d.stats.receiptsRejected.Add(1)
		return
	}
	if !r.queue.offer(receipt{send: send, device: device, index: uint8(index), kind: kind}) {
		r.d.stats.receiptsDropped.Add(1)
	}
}

// acceptFrom lets the devices of another node's claim report here: a
// device that got a command on one node may reconnect to another before
// it acks or (a person answering a confirm message takes minutes)
// confirms. Claims older than the receipt window are passed over, so a
// restart replaying old claims records nothing.
func (r *receipts) acceptFrom(c *claimed, at time.Time) {
	if r.d.clock.Now().Sub(at) > r.d.opts.ReceiptWindow {
		return
	}
	r.book.recordForeign(c.devices, c.send, c.index, c.confirmable, at)
}

// prune forgets deliveries older than the receipt window (a cron job).
func (r *receipts) prune() { r.book.prune(r.d.clock.Now()) }

// close appends what is queued and stops the batcher.
func (r *receipts) close() {
	r.queue.close()
	<-r.done
}

// run collects batches: up to ReceiptBatch receipts or ReceiptFlush after
// the first, whichever comes first.
func (r *receipts) run() {
	defer close(r.done)
	max, wait := r.d.opts.ReceiptBatch, r.d.opts.ReceiptFlush
	for first := range r.queue.ch {
		batch := []receipt{first}
		timer := time.NewTimer(wait)
	collect:
		for len(batch) < max {
			select {
			case x, ok := <-r.queue.ch:
				if !ok {
					break collect
				}
				batch = append(batch, x)
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		r.flush(batch)
	}
}

// flush appends a batch: per send one append to receipt-{send}, up to eight
// sends at a time.
func (r *receipts) flush(batch []receipt) {
	bySend := make(map[int64][]receipt)
	for _, x := range batch {
		bySend[x.send] = append(bySend[x.send], x)
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for send, xs := range bySend {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if supervise.Do(r.d.log, panicComponent, func() { r.appendSend(send, xs) }) != nil {
				r.d.stats.receiptFailures.Add(uint64(len(xs)))
			}
		}()
	}
	wg.Wait()
}

// receiptGroup is the devices of one receipt event.
type receiptGroup struct {
	kind  receiptKind
	index uint8
}

// appendSend appends the receipts of one send, one event per kind and
// command index. Event ids derive from the content, so repeating a batch
// (after a failed append whose outcome is unknown) stores it once.
func (r *receipts) appendSend(send int64, xs []receipt) {
	groups := make(map[receiptGroup][]int64)
	for _, x := range xs {
		g := receiptGroup{x.kind, x.index}
		groups[g] = append(groups[g], x.device)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b receiptGroup) int {
		return int(a.kind)*256 + int(a.index) - (int(b.kind)*256 + int(b.index))
	})
	events := make([]domain.Event, len(keys))
	ids := make([]eventstore.EventID, len(keys))
	for i, g := range keys {
		devices := slices.Compact(slices.Sorted(slices.Values(groups[g])))
		groups[g] = devices
		if g.kind == receiptAck {
			events[i] = domain.CommandsAcked{SendID: send, Index: int(g.index), Devices: devices}
		} else {
			events[i] = domain.CommandsConfirmed{SendID: send, Index: int(g.index), Devices: devices}
		}
	}
	stream := domain.ReceiptStream(send)
	for i, e := range events {
		ids[i] = receiptEventID(stream, e.EventType(), keys[i].index, groups[keys[i]])
	}
	b, err := r.d.recorder().Encode(events, r.d.systemMeta(), record.Explicit(ids...))
	if err != nil {
		r.fail(stream, len(xs), err)
		return
	}
	if err := r.d.appendAny(stream, b); err != nil {
		r.fail(stream, len(xs), err)
		return
	}
	for _, g := range keys {
		if g.kind == receiptAck {
			r.d.stats.acks.Add(uint64(len(groups[g])))
		} else {
			r.d.stats.confirms.Add(uint64(len(groups[g])))
		}
	}
}

func (r *receipts) fail(stream string, n int, err error) {
	r.d.stats.receiptFailures.Add(uint64(n))
	r.d.log.Warn("receipts lost", "stream", stream, "receipts", n, "error", err)
}

// receiptEventID names a receipt event by what it says.
func receiptEventID(stream, typ string, index uint8, devices []int64) eventstore.EventID {
	h := sha256.New()
	var b [8]byte
	for _, dev := range devices {
		binary.BigEndian.PutUint64(b[:], uint64(dev))
		h.Write(b[:])
	}
	name := "receipt|" + stream + "|" + typ + "|" + strconv.Itoa(int(index)) + "|" + hex.EncodeToString(h.Sum(nil)[:16])
	return record.Derived(name).ID(0)
}

// appendAny appends events whose ids are deterministic with Any, so that a
// repeat is a no-op. When some of them are stored already (the store then
// refuses the whole append), it appends them one at a time, skipping those.
func (d *Dispatcher) appendAny(stream string, b record.Batch) error {
	ctx := context.Background()
	_, err := d.appendEvents(ctx, stream, eventstore.Any, b)
	if !errors.Is(err, eventstore.ErrDuplicateEventID) || b.Len() == 1 {
		return err
	}
	for i := range b.Len() {
		if _, err := d.appendEvents(ctx, stream, eventstore.Any, b.Slice(i, i+1)); err != nil && !errors.Is(err, eventstore.ErrDuplicateEventID) {
			return err
		}
	}
	return nil
}

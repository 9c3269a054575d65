package dispatch

import (
	"strconv"
	"sync"
	"time"

	"tvsm/domain"
	"tvsm/eventstore/record"
	"tvsm/internal/platform/supervise"
	"tvsm/wsgateway"
)

// connEvent is a connection event waiting to be appended.
type connEvent struct {
	device int64
	seq    uint64 // the connection's Seq
	what   string // "open" or "close"
	at     time.Time
	event  domain.Event
}

// connEvents appends DeviceConnected and DeviceDisconnected events off the
// hub's goroutines: a fixed set of workers, each with a bounded queue, and a
// device always handled by the same worker so its events stay in order. A
// full queue drops the event (counted) instead of blocking the hub.
type connEvents struct {
	d      *Dispatcher
	queues []*dropQueue[connEvent]
	wg     sync.WaitGroup
}

func newConnEvents(d *Dispatcher) *connEvents {
	n := d.opts.EventWorkers
	per := max(d.opts.EventQueue/n, 1)
	ce := &connEvents{d: d, queues: make([]*dropQueue[connEvent], n)}
	for i := range ce.queues {
		ce.queues[i] = newDropQueue[connEvent](per)
		ce.wg.Add(1)
		go ce.work(ce.queues[i].ch)
	}
	return ce
}

// connected queues the DeviceConnected event of c.
func (ce *connEvents) connected(c *wsgateway.Conn) {
	id := c.Identity()
	ce.enqueue(connEvent{device: id.Device, seq: c.Seq(), what: "open", at: c.ConnectedAt(),
		event: domain.DeviceConnected{DeviceID: id.Device, Account: id.Account, Provider: id.Provider,
			Node: ce.d.opts.Node, Address: id.Address}})
}

// disconnected queues the DeviceDisconnected event of c.
func (ce *connEvents) disconnected(c *wsgateway.Conn, r wsgateway.CloseReason) {
	id := c.Identity()
	now := ce.d.clock.Now()
	ce.enqueue(connEvent{device: id.Device, seq: c.Seq(), what: "close", at: now,
		event: domain.DeviceDisconnected{DeviceID: id.Device, Account: id.Account, Provider: id.Provider,
			Node: ce.d.opts.Node, Code: c.CloseCode(), Reason: r.String(), Seconds: sinceSeconds(now, c.ConnectedAt())}})
}

func (ce *connEvents) enqueue(e connEvent) {
	if !ce.queues[uint64(e.device)%uint64(len(ce.queues))].offer(e) {
		ce.d.stats.connDropped.Add(1)
	}
}

// work appends the events of one queue until it is closed.
func (ce *connEvents) work(q <-chan connEvent) {
	defer ce.wg.Done()
	for e := range q {
		if supervise.Do(ce.d.log, panicComponent, func() { ce.append(e) }) != nil {
			ce.d.stats.connFailures.Add(1)
		}
	}
}

// append appends one event to device-{id}. Its id is fixed by the
// connection (this process, its Seq, open or close), so a repeat is a
// no-op.
func (ce *connEvents) append(e connEvent) {
	d := ce.d
	seq := strconv.FormatUint(e.seq, 10)
	meta := domain.Metadata{OccurredAt: e.at, Actor: domain.DeviceActor(e.device), RequestID: "ws:" + d.opts.Node + ":" + seq}
	b, err := d.recorder().Encode([]domain.Event{e.event}, meta, record.Derived("conn|"+d.instance+"|"+seq+"|"+e.what))
	if err == nil {
		err = d.appendAny(domain.DeviceStream(e.device), b)
	}
	if err != nil {
		d.stats.connFailures.Add(1)
		d.log.Warn("connection event lost", "device", e.device, "event", e.event.EventType(), "error", err)
		return
	}
	d.stats.connEvents.Add(1)
}

// close appends what is queued and stops the workers.
func (ce *connEvents) close() {
	for _, q := range ce.queues {
		q.close()
	}
	ce.wg.Wait()
}

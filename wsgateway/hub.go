package wsgateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/connlimit"
)

// numShards is the number of registry shards; a power of two.
const numShards = 64

// shard is one lock-protected part of the registry.
type shard struct {
	mu     sync.RWMutex
	conns  map[int64]*Conn
	closed bool
}

// Hub is a sharded registry of device connections. It is safe for
// concurrent use. Create it with NewHub.
type Hub struct {
	opts     Options
	upgrader websocket.Upgrader
	shards   [numShards]shard
	closing  atomic.Bool
	pumps    sync.WaitGroup // one per registered connection until OnClose returned
	seq      atomic.Uint64  // last Conn.Seq handed out
	stats    counters
	addrs    *connlimit.Counter // websockets per client address
	// lanes write to the polled connections with something to write.
	lanes writeLanes
	// polls read the connections' TCP sockets (on Linux).
	polls pollSet
	// providers lists the registered connections by provider.
	providers byProvider
	// sweep is the timer of the next sweepConns, armed while the hub has
	// connections and is not shutting down.
	sweep struct {
		sync.Mutex
		timer *time.Timer
	}
}

// NewHub returns a hub configured by opts.
func NewHub(opts Options) *Hub {
	o := opts.withDefaults()
	h := &Hub{opts: o, addrs: connlimit.NewCounter(o.MaxPerAddress), lanes: newWriteLanes()}
	h.upgrader = websocket.Upgrader{
		HandshakeTimeout: o.WriteWait,
		// gorilla does the handshake only (see Conn): the HTTP server's
		// buffers serve it, and none is allocated for the connection.
		EnableCompression: false,
		CheckOrigin:       o.CheckOrigin,
	}
	for i := range h.shards {
		h.shards[i].conns = make(map[int64]*Conn)
	}
	return h
}

// shardFor picks the shard of a device by Fibonacci hashing of its id.
func (h *Hub) shardFor(deviceID int64) *shard {
	return &h.shards[(uint64(deviceID)*0x9E3779B97F4A7C15)>>(64-6)]
}

// Register adds c to the hub. A connection already registered for the same
// device is replaced and closed with ReasonReplaced. When the hub is shut
// down, c is closed with ReasonShutdown instead. Upgrade calls Register.
func (h *Hub) Register(c *Conn) {
	if !h.add(c) {
		c.close(ReasonShutdown)
	}
}

// add registers c and accounts for its pumps; false when the hub is closed.
func (h *Hub) add(c *Conn) bool {
	s := h.shardFor(c.deviceID)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	h.pumps.Add(1)
	old := s.conns[c.deviceID]
	s.conns[c.deviceID] = c
	h.providers.replace(old, c)
	s.mu.Unlock()
	h.armSweep()
	h.stats.accepted.Add(1)
	if old != nil {
		old.close(ReasonReplaced)
	}
	return true
}

// Unregister removes c if it is still the device's registered connection.
// It does not close c; closing a connection unregisters it.
func (h *Hub) Unregister(c *Conn) {
	s := h.shardFor(c.deviceID)
	s.mu.Lock()
	if s.conns[c.deviceID] == c {
		delete(s.conns, c.deviceID)
		h.providers.remove(c)
	}
	s.mu.Unlock()
}

// lookup returns the device's registered connection or nil.
func (h *Hub) lookup(deviceID int64) *Conn {
	s := h.shardFor(deviceID)
	s.mu.RLock()
	c := s.conns[deviceID]
	s.mu.RUnlock()
	return c
}

// Send queues msg for the device's connection without blocking and reports
// whether a connection took it. msg is not copied: it may be shared between
// devices but must not be modified afterwards. A connection whose queue is
// full is closed as a slow consumer and Send returns false.
func (h *Hub) Send(deviceID int64, msg []byte) bool {
	if c := h.lookup(deviceID); c != nil && c.Send(msg) {
		return true
	}
	h.stats.misses.Add(1)
	return false
}

// CloseAfterFlush closes the device's connection for reason r once the
// messages already queued for it have been written (see
// Conn.CloseAfterFlush). It reports whether the device had a connection.
func (h *Hub) CloseAfterFlush(deviceID int64, r CloseReason) bool {
	c := h.lookup(deviceID)
	return c != nil && c.CloseAfterFlush(r)
}

// Connected reports whether the device has a registered connection.
func (h *Hub) Connected(deviceID int64) bool {
	return h.lookup(deviceID) != nil
}

// Count returns the number of registered connections.
func (h *Hub) Count() int {
	n := 0
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.RLock()
		n += len(s.conns)
		s.mu.RUnlock()
	}
	return n
}

// Lookup returns the device's registered connection.
func (h *Hub) Lookup(deviceID int64) (*Conn, bool) {
	c := h.lookup(deviceID)
	return c, c != nil
}

// Range calls fn for every registered connection until fn returns false. fn
// runs without hub locks held, so it may call Send; devices connecting or
// leaving meanwhile may or may not be visited.
func (h *Hub) Range(fn func(c *Conn) bool) {
	var conns []*Conn
	for i := range h.shards {
		s := &h.shards[i]
		conns = conns[:0]
		s.mu.RLock()
		for _, c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.RUnlock()
		for _, c := range conns {
			if !fn(c) {
				return
			}
		}
	}
}

// Stats returns a snapshot of the hub's counters.
func (h *Hub) Stats() Stats {
	return Stats{
		Connections:    h.Count(),
		Accepted:       h.stats.accepted.Load(),
		MessagesSent:   h.stats.sent.Load(),
		SendMisses:     h.stats.misses.Load(),
		SlowConsumers:  h.stats.slow.Load(),
		BadMessages:    h.stats.bad.Load(),
		Replaced:       h.stats.replaced.Load(),
		Timeouts:       h.stats.timeouts.Load(),
		ClosedByClient: h.stats.clientClosed.Load(),
		AddressFull:    h.stats.addressFull.Load(),
	}
}

// armSweep arms the timer of the next sweep unless it is armed or the hub
// is shutting down. A sweep comes every quarter of WriteWait or PongWait,
// whichever is shorter.
func (h *Hub) armSweep() {
	h.sweep.Lock()
	defer h.sweep.Unlock()
	if h.sweep.timer == nil && !h.closing.Load() {
		h.sweep.timer = time.AfterFunc(min(h.opts.WriteWait, h.opts.PongWait)/4, h.sweepConns)
	}
}

// sweepConns closes the connections whose message write has lasted longer
// than WriteWait (their device stopped reading and the socket's buffers
// are full; closing the socket ends the write), and the polled ones silent
// for longer than PongWait (those the runtime polls have a read deadline).
// It arms the next sweep while connections remain.
func (h *Hub) sweepConns() {
	writeLimit, readLimit := int64(h.opts.WriteWait), int64(h.opts.PongWait)
	now := time.Now().UnixNano()
	var stuck, silent []*Conn
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.RLock()
		for _, c := range s.conns {
			if started := c.writeStarted.Load(); started != 0 && now-started > writeLimit {
				stuck = append(stuck, c)
			} else if c.polled && now-c.readAt.Load() > readLimit {
				silent = append(silent, c)
			}
		}
		s.mu.RUnlock()
	}
	for _, c := range stuck {
		c.close(ReasonWriteError)
	}
	for _, c := range silent {
		c.close(ReasonTimeout)
	}
	h.sweep.Lock()
	h.sweep.timer = nil
	h.sweep.Unlock()
	if h.Count() > 0 {
		h.armSweep()
	}
}

// Shutdown refuses new connections, sends a going-away close frame to every
// connection and waits until all of them have finished (OnClose returned) or
// ctx is done, whichever comes first; it returns ctx.Err() in the latter case.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.closing.Store(true)
	h.sweep.Lock()
	if h.sweep.timer != nil {
		h.sweep.timer.Stop()
		h.sweep.timer = nil
	}
	h.sweep.Unlock()
	var all []*Conn
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.Lock()
		s.closed = true
		for _, c := range s.conns {
			all = append(all, c)
		}
		s.mu.Unlock()
	}
	for _, c := range all {
		c.close(ReasonShutdown)
	}
	done := make(chan struct{})
	go func() {
		h.pumps.Wait()
		h.polls.stop() // no connection is polled any more
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close shuts the hub down like Shutdown, waiting at most as long as a
// connection's teardown can take (two write waits plus the close grace).
func (h *Hub) Close() {
	ctx, cancel := context.WithTimeout(context.Background(),
		2*h.opts.WriteWait+h.opts.CloseGrace+time.Second)
	defer cancel()
	_ = h.Shutdown(ctx)
}

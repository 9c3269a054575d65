package wsgateway

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/supervise"
)

// Conn is one device connection. It is created by Hub.Upgrade. A reader
// goroutine runs for its whole life; a writer goroutine only while there is
// something to write (messages, a ping), so that an idle connection holds
// one goroutine's stack, not two. Pings are due by a runtime timer.
type Conn struct {
	hub         *Hub
	ws          *websocket.Conn
	deviceID    int64
	id          Identity
	seq         uint64 // unique within the hub
	connectedAt time.Time
	// slot is the connection's place in its provider's list of the hub
	// (byProvider), -1 outside it; guarded by that list's lock.
	slot     int
	peerCode atomic.Int32 // close code the device sent, if any
	// release gives back the connection's place among its address's
	// (Options.MaxPerAddress) once its socket is closed.
	release func()

	q       queue
	pingDue atomic.Bool
	// writeStarted is when the message write under way began (Unix
	// nanoseconds), 0 between writes: the hub's sweep closes a connection
	// whose write has lasted longer than WriteWait (Hub.sweepWrites).
	writeStarted atomic.Int64
	done         chan struct{} // closed when the connection must end
	readerDone   chan struct{} // closed when the reader goroutine returned
	closeOnce    sync.Once
	reason       CloseReason // set once before done is closed
	// life says whether the connection was started and closed: finish runs
	// once both are true, whichever comes second.
	life struct {
		sync.Mutex
		started, closed bool
		pinger          *time.Timer // the next ping
	}
}

// newConn wraps an upgraded socket.
func newConn(h *Hub, ws *websocket.Conn, id Identity) *Conn {
	return &Conn{
		hub:         h,
		ws:          ws,
		deviceID:    id.Device,
		id:          id,
		seq:         h.seq.Add(1),
		connectedAt: h.opts.Clock(),
		slot:        -1,
		done:        make(chan struct{}),
		readerDone:  make(chan struct{}),
	}
}

// Identity is who is connected: the device, its account and provider, as
// established by authentication before the upgrade.
type Identity struct {
	Device   int64
	Account  int64
	Provider int64
	// Address is the client's IP address, for connection events.
	Address string
}

// DeviceID returns the id of the connected device.
func (c *Conn) DeviceID() int64 { return c.deviceID }

// Identity returns who is connected.
func (c *Conn) Identity() Identity { return c.id }

// ConnectedAt returns when the connection was established (Options.Clock).
func (c *Conn) ConnectedAt() time.Time { return c.connectedAt }

// Seq returns the connection's number, unique among the hub's connections
// (1, 2, 3, ... in order of upgrade), to name per-connection events.
func (c *Conn) Seq() uint64 { return c.seq }

// CloseCode returns the close code that ended the connection: the server's
// for a close it initiated (1001, 1008, 1013, 4001, 4003), the device's for
// one the device initiated (1005 when its frame had no code), 1009 for an
// over-long device message (gorilla sends it), and 1006 (abnormal closure)
// when no close frame was exchanged. Meaningful once the connection has
// ended (in OnClose).
func (c *Conn) CloseCode() int {
	select {
	case <-c.done:
	default:
		return 0
	}
	if code, _, ok := c.reason.closeFrame(); ok {
		return code
	}
	switch c.reason {
	case ReasonClientClosed:
		if code := c.peerCode.Load(); code != 0 {
			return int(code)
		}
		return websocket.CloseNoStatusReceived
	case ReasonMessageTooBig:
		return websocket.CloseMessageTooBig
	}
	return websocket.CloseAbnormalClosure
}

// CloseAfterFlush closes the connection for reason r once every message
// queued before the call has been written: used to deliver a last message
// (an update command) and then end the connection. Messages queued after it
// are not written. It reports false when the connection had already ended.
func (c *Conn) CloseAfterFlush(r CloseReason) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	c.q.pushClose(r)
	c.kick()
	return true
}

// Close ends the connection for reason r (ReasonRevoked, typically) with
// its close frame; it returns at once.
func (c *Conn) Close(r CloseReason) { c.close(r) }

// Send queues msg without blocking and reports whether it was taken. When the
// queue is full the connection is closed as a slow consumer.
func (c *Conn) Send(msg []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	if !c.q.push(msg, c.hub.opts.QueueSize) {
		c.close(ReasonSlowConsumer)
		return false
	}
	c.kick()
	return true
}

// close asks the connection to end for reason r and unregisters it at once,
// so no more messages are routed to it. Only the first reason counts. The
// teardown (finish) runs once the connection has also been started.
func (c *Conn) close(r CloseReason) {
	c.closeOnce.Do(func() {
		c.reason = r
		close(c.done)
		c.hub.Unregister(c)
		c.life.Lock()
		c.life.closed = true
		started := c.life.started
		c.life.Unlock()
		if started {
			go c.finish()
		}
	})
}

// start launches the reader and the ping timer. The caller (an HTTP
// handler) may return at once, so memory it references can be collected.
func (c *Conn) start() {
	go c.readPump()
	c.life.Lock()
	c.life.started = true
	closed := c.life.closed
	c.life.Unlock()
	c.armPing()
	if closed {
		go c.finish()
	}
}

// armPing sets the timer of the next ping, unless the connection is closed.
func (c *Conn) armPing() {
	c.life.Lock()
	defer c.life.Unlock()
	if !c.life.closed {
		c.life.pinger = time.AfterFunc(c.hub.opts.PingPeriod, c.ping)
	}
}

// ping makes a ping due, has a writer send it, and arms the next one.
func (c *Conn) ping() {
	c.pingDue.Store(true)
	c.kick()
	c.armPing()
}

// kick makes sure a writer runs while there is something to write: it
// starts one unless one is running (or the connection is being torn down).
func (c *Conn) kick() {
	if c.q.claimWriter() {
		go c.writeLoop()
	}
}

// writeLoop writes a due ping and the queued messages, and ends when there
// is nothing more to write or the connection is closing.
func (c *Conn) writeLoop() {
	defer supervise.Recover(c.hub.opts.Logger, panicComponent, func(*supervise.Panic) {
		c.close(ReasonInternalError)
		c.q.releaseWriter(true, false)
	})
	for {
		if c.pingDue.Swap(false) {
			if err := c.ws.WriteControl(websocket.PingMessage, nil, c.deadline()); err != nil {
				c.close(ReasonWriteError)
			}
		}
		c.flush()
		select {
		case <-c.done:
			c.q.releaseWriter(true, false)
			return
		default:
		}
		if c.q.releaseWriter(false, c.pingDue.Load()) {
			return
		}
	}
}

// readPump reads device messages until the socket fails.
func (c *Conn) readPump() {
	defer close(c.readerDone)
	defer supervise.Recover(c.hub.opts.Logger, panicComponent, func(*supervise.Panic) { c.close(ReasonInternalError) })
	o := &c.hub.opts
	c.ws.SetReadLimit(o.ReadLimit)
	// Every pong moves the read deadline PongWait ahead. A message does
	// only once a tenth of PongWait has passed since it last moved: moving
	// it takes the runtime's timer locks, which on every acknowledgement
	// of a broadcast cost about as much as reading it. So a device that
	// sends messages but answers no ping may be dropped after 9/10 of
	// PongWait of silence; one that answers pings, never early.
	var extended time.Time
	extend := func(now time.Time) {
		extended = now
		_ = c.ws.SetReadDeadline(now.Add(o.PongWait))
	}
	extend(time.Now())
	c.ws.SetPongHandler(func(string) error { extend(time.Now()); return nil })
	bad := 0
	for {
		kind, buf, err := readMessage(c.ws)
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); ok {
				c.peerCode.Store(int32(ce.Code))
			}
			c.close(readReason(err))
			return
		}
		if now := time.Now(); now.Sub(extended) >= o.PongWait/10 {
			extend(now)
		}
		m, err := ParseDeviceMessage(*buf)
		messageBuffers.Put(buf) // m holds copies
		if kind != websocket.TextMessage || err != nil {
			c.hub.stats.bad.Add(1)
			bad++
			if o.MaxBadMessages > 0 && bad >= o.MaxBadMessages {
				c.close(ReasonBadMessages)
				return
			}
			continue
		}
		if o.OnMessage != nil && !c.hook(func() { o.OnMessage(c, m) }) {
			return
		}
	}
}

// messageBuffers hold device messages while they are parsed. gorilla's
// ReadMessage allocates a buffer for every message (from 512 bytes, as
// io.ReadAll does): in a broadcast, one per acknowledgement, and the
// collections they brought scanned every connection's reader stack. A
// buffer kept by each connection would cost every idle one its size.
var messageBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// readMessage reads the next message of ws into a buffer of
// messageBuffers, for the caller to put back.
func readMessage(ws *websocket.Conn) (kind int, buf *[]byte, err error) {
	kind, r, err := ws.NextReader()
	if err != nil {
		return 0, nil, err
	}
	buf = messageBuffers.Get().(*[]byte)
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		*buf = b
		switch {
		case err == io.EOF:
			return kind, buf, nil
		case err != nil:
			messageBuffers.Put(buf)
			return 0, nil, err
		}
	}
}

// deadline returns the deadline for a write starting now.
func (c *Conn) deadline() time.Time { return time.Now().Add(c.hub.opts.WriteWait) }

// flush writes queued messages until the queue is empty or the connection is
// closing.
func (c *Conn) flush() {
	for {
		select {
		case <-c.done:
			return
		default:
		}
		msg, ok := c.q.pop()
		if !ok {
			return
		}
		if msg == nil { // CloseAfterFlush's marker
			c.close(c.q.closeReason())
			return
		}
		// No write deadline: setting one takes the runtime's timer locks,
		// which cost a broadcast about a twentieth of its CPU; the hub's
		// sweep bounds the write instead.
		c.writeStarted.Store(time.Now().UnixNano())
		err := c.ws.WriteMessage(websocket.TextMessage, msg)
		c.writeStarted.Store(0)
		if err != nil {
			c.close(ReasonWriteError)
			return
		}
		c.hub.stats.sent.Add(1)
	}
}

// finish sends the close frame for a server-initiated close (WriteControl
// may run beside a writer), waits briefly for the device's reply, closes the
// socket, waits for the reader and any writer, and reports the end.
func (c *Conn) finish() {
	c.life.Lock()
	if c.life.pinger != nil {
		c.life.pinger.Stop()
	}
	c.life.Unlock()
	o := &c.hub.opts
	if code, text, ok := c.reason.closeFrame(); ok {
		err := c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), c.deadline())
		if err == nil {
			t := time.NewTimer(o.CloseGrace)
			select {
			case <-c.readerDone:
			case <-t.C:
			}
			t.Stop()
		}
	}
	_ = c.ws.Close()
	if c.release != nil {
		c.release()
	}
	<-c.readerDone
	c.q.stopWriter()
	c.hub.stats.closed(c.reason)
	if o.OnClose != nil {
		c.hook(func() { o.OnClose(c, c.reason) })
	}
	c.hub.pumps.Done()
}

// panicComponent names the gateway's connections in panic logs and
// metrics.
const panicComponent = "websocket"

// hook runs one of the hub's hooks for c and reports whether it returned.
// A panic is recovered, logged and counted, and closes the connection with
// ReasonInternalError: the device reconnects; the hub and its other
// connections go on.
func (c *Conn) hook(f func()) bool {
	if p := supervise.Do(c.hub.opts.Logger, panicComponent, f); p != nil {
		c.close(ReasonInternalError)
		return false
	}
	return true
}

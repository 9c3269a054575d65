package wsgateway

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/internal/platform/supervise"
	"tvsm/internal/platform/wsframe"
)

// Conn is one device connection. It is created by Hub.Upgrade. Its TCP
// socket is read by one of the hub's pollers (on Linux); any other
// connection has a reader goroutine for its whole life. Queued messages
// are written by a turn on the hub's write lanes (a polled socket), or by
// a writer goroutine that runs only while there is something to write and
// may wait on the socket (a full socket, a ping, any other connection), so
// that an idle polled connection holds no goroutine. Pings are due by a
// runtime timer.
type Conn struct {
	hub *Hub
	// nc is the device's connection once the handshake is done. sock is its
	// own descriptor of the TCP socket, read by a poller, when the hub took
	// it from the runtime (polled): nc is then closed underneath and only
	// its wrappers' Close is left to call.
	nc          net.Conn
	polled      bool
	sock        socket
	rd          frameReader // the device's frames: a poller's or readPump's
	readAt      atomic.Int64
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
	// wmu serialises the frames written to the socket: a writer's
	// messages and pings, the reader's pongs and close replies, finish's
	// close frame. closeSent (no frame may follow a close frame) is under
	// it.
	wmu        sync.Mutex
	closeSent  bool
	ended      atomic.Bool   // the connection must end: reason is set
	readerDone chan struct{} // closed when reading ended
	closeOnce  sync.Once
	reason     CloseReason // set once before ended
	// life says whether the connection was started and closed: finish runs
	// once both are true, whichever comes second.
	life struct {
		sync.Mutex
		started, closed bool
		pinger          *time.Timer // the next ping
	}
}

// newConn wraps an upgraded socket.
func newConn(h *Hub, nc net.Conn, id Identity) *Conn {
	c := &Conn{
		hub:         h,
		nc:          nc,
		deviceID:    id.Device,
		id:          id,
		seq:         h.seq.Add(1),
		connectedAt: h.opts.Clock(),
		slot:        -1,
		readerDone:  make(chan struct{}),
	}
	if c.polled = h.takeSocket(&c.sock, nc, c.seq); c.polled {
		c.readAt.Store(time.Now().UnixNano()) // the sweep may come before start
	}
	return c
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
// over-long device message (the reader sends it), and 1006 (abnormal closure)
// when no close frame was exchanged. Meaningful once the connection has
// ended (in OnClose).
func (c *Conn) CloseCode() int {
	if !c.ended.Load() {
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
	if c.ended.Load() {
		return false
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
	if c.ended.Load() {
		return false
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
		c.ended.Store(true)
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

// start has the socket read (by a poller, or a reader goroutine) and arms
// the ping timer. The caller (an HTTP handler) may return at once, so
// memory it references can be collected.
func (c *Conn) start() {
	c.rd = frameReader{c: c, dec: wsframe.Decoder{Masked: true, Limit: int(c.hub.opts.ReadLimit)}}
	c.rd.extend(time.Now())
	if c.polled {
		if err := c.sock.register(c); err != nil {
			c.hub.opts.Logger.Error("wsgateway: poll a socket", "err", err)
			close(c.readerDone)
			c.close(ReasonInternalError)
		}
	} else {
		go c.readPump()
	}
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
// starts one unless one is running (or the connection is being torn down),
// as a turn on the hub's write lanes for a TCP socket.
func (c *Conn) kick() {
	if c.q.claimWriter() {
		if c.polled {
			c.hub.lanes.schedule(c)
		} else {
			go c.writeLoop()
		}
	}
}

// writerPanicked ends a connection whose writer (a turn, writeRest or
// writeLoop) panicked, giving up the writer role.
func (c *Conn) writerPanicked(*supervise.Panic) {
	c.close(ReasonInternalError)
	c.q.releaseWriter(true, false)
}

// writeLoop writes a due ping and the queued messages, and ends when there
// is nothing more to write or the connection is closing.
func (c *Conn) writeLoop() {
	defer supervise.Recover(c.hub.opts.Logger, panicComponent, c.writerPanicked)
	for {
		if c.pingDue.Swap(false) {
			if err := c.writeControl(wsframe.OpPing, nil); err != nil {
				c.close(ReasonWriteError)
			}
		}
		c.flush()
		if c.ended.Load() {
			c.q.releaseWriter(true, false)
			return
		}
		if c.q.releaseWriter(false, c.pingDue.Load()) {
			return
		}
	}
}

// flush writes queued messages until the queue is empty or the connection
// is closing. Messages queued together go out in one write, up to
// maxBatch bytes of frames.
func (c *Conn) flush() {
	buf := frameBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxKeptFrameBuffer {
			frameBuffers.Put(buf)
		}
	}()
	for {
		if c.ended.Load() {
			return
		}
		b, msgs, closing := c.q.frames((*buf)[:0])
		*buf = b
		if msgs > 0 {
			if err := c.writeFrames(b); err != nil {
				c.close(ReasonWriteError)
				return
			}
			c.hub.stats.sent.Add(uint64(msgs))
		}
		if closing {
			c.close(c.q.closeReason())
			return
		}
		if msgs == 0 {
			return
		}
	}
}

// maxBatch bounds the frames one write takes, unless a single message is
// longer; maxKeptFrameBuffer, the buffer kept for the next flush.
const (
	maxBatch           = 16 << 10
	maxKeptFrameBuffer = 64 << 10
)

// frameBuffers hold the frames of a flush: an idle connection holds none.
var frameBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// errCloseSent refuses a frame after the close frame.
var errCloseSent = errors.New("wsgateway: close frame already sent")

// writeFrames writes whole frames of data messages.
func (c *Conn) writeFrames(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent {
		return errCloseSent
	}
	return c.writeLocked(b)
}

// writeControl writes a control frame (a payload of at most 125 bytes).
func (c *Conn) writeControl(op byte, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.controlLocked(op, payload)
}

// controlLocked writes a control frame with wmu held; after a close frame
// nothing more is written.
func (c *Conn) controlLocked(op byte, payload []byte) error {
	var room [2 + 125]byte
	f, err := c.controlFrame(room[:0], op, payload)
	if err != nil {
		return err
	}
	return c.writeLocked(f)
}

// controlFrame appends the control frame to dst, with wmu held, and
// notes a close frame; after a close frame it refuses.
func (c *Conn) controlFrame(dst []byte, op byte, payload []byte) ([]byte, error) {
	if c.closeSent {
		return nil, errCloseSent
	}
	if op == wsframe.OpClose {
		c.closeSent = true
	}
	return wsframe.AppendFrame(dst, op, payload, false), nil
}

// replyControl writes a control frame in reply to the device (a pong, a
// close frame). A poller's reader must not wait: the frame goes out now if
// the lock is free and the socket takes it whole, else a goroutine writes
// it, or its rest.
func (c *Conn) replyControl(op byte, payload []byte) {
	if !c.polled {
		_ = c.writeControl(op, payload) // a failure is the writer's to find
		return
	}
	if !c.wmu.TryLock() {
		payload = append([]byte(nil), payload...)
		go func() { _ = c.writeControl(op, payload) }()
		return
	}
	var room [2 + 125]byte
	f, err := c.controlFrame(room[:0], op, payload)
	if err != nil {
		c.wmu.Unlock()
		return
	}
	n, err := c.sock.write(f, false)
	if err != nil || n == len(f) {
		c.wmu.Unlock()
		return
	}
	rest := append([]byte(nil), f[n:]...)
	go func() {
		defer c.wmu.Unlock()
		_ = c.writeLocked(rest)
	}()
}

// writeLocked writes b to the socket with wmu held. No write deadline:
// setting one takes the runtime's timer locks, which cost a broadcast
// about a twentieth of its CPU; the hub's sweep bounds the write instead
// (writeStarted), and finish when the hub is shutting down.
func (c *Conn) writeLocked(b []byte) error {
	c.writeStarted.Store(time.Now().UnixNano())
	defer c.writeStarted.Store(0)
	if !c.polled {
		_, err := c.nc.Write(b)
		return err
	}
	_, err := c.sock.write(b, true)
	return err
}

// writeNow writes what of b the socket takes at once, with wmu held, and
// returns how much that was: a write turn (writeTurn) never waits.
func (c *Conn) writeNow(b []byte) (int, error) {
	if c.closeSent {
		return 0, errCloseSent
	}
	return c.sock.write(b, false)
}

// lockForClose takes wmu for finish's close frame. A write under way
// that lasts longer than WriteWait has the socket closed under it: the
// hub's sweep does the same, but it stops when the hub shuts down.
func (c *Conn) lockForClose() {
	if c.wmu.TryLock() {
		return
	}
	t := time.AfterFunc(c.hub.opts.WriteWait, c.abort)
	c.wmu.Lock()
	t.Stop()
}

// abort ends a write under way, and the reading: the socket is shut down,
// or closed if the runtime has it.
func (c *Conn) abort() {
	if c.polled {
		c.sock.abort()
	} else {
		_ = c.nc.Close()
	}
}

// closeSocket closes the socket; a write under way is ended first.
func (c *Conn) closeSocket() {
	if c.polled {
		if !c.wmu.TryLock() {
			c.sock.abort()
			c.wmu.Lock()
		}
		c.sock.close(c)
		c.wmu.Unlock()
	}
	_ = c.nc.Close() // for a polled socket, its wrappers: connlimit's place
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
		c.lockForClose()
		err := c.controlLocked(wsframe.OpClose, websocket.FormatCloseMessage(code, text))
		c.wmu.Unlock()
		if err == nil {
			t := time.NewTimer(o.CloseGrace)
			select {
			case <-c.readerDone:
			case <-t.C:
			}
			t.Stop()
		}
	}
	c.closeSocket()
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

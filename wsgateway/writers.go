package wsgateway

import (
	"runtime"
	"sync"

	"tvsm/internal/platform/supervise"
)

// A connection with something to write used to get a goroutine of its
// own for it: in a broadcast, one started and ended per message, and with
// them the scheduler's work, about a tenth of the node's CPU. Now a TCP
// connection is listed on one of the hub's write lanes (one per core),
// and a drainer goroutine gives up to turnsPerDrainer listed connections
// their turn, writing to each without waiting on its socket. Only a
// connection whose socket is full, or whose lock is taken (a pong, a close
// frame under way), or that has a ping due, gets a writer goroutine
// (writeLoop) that may wait; the others never hold a drainer up.
//
// Drainers end after their turns rather than drain the lane for as long as
// it has work: a goroutine started by the dispatcher's loop runs before
// the acknowledgements' readers the poller woke meanwhile, while one that
// ran on was preempted behind all of them, and the devices written last
// waited for every acknowledgement read before them (the last device of a
// broadcast to 18,000 came 10% later with long-running lanes, 15% sooner
// with drainers of 64).

// writeLanes are the hub's write lanes.
type writeLanes []writeLane

// writeLane lists the connections whose turn to write has come. Drainer
// goroutines take up to turnsPerDrainer of them each and end; one is
// started for every turnsPerDrainer listed beyond what the started ones
// that took nothing yet (waiting) will take.
type writeLane struct {
	mu      sync.Mutex
	queue   []*Conn
	waiting int
}

// turnsPerDrainer is how many turns one drainer goroutine gives.
const turnsPerDrainer = 64

func newWriteLanes() writeLanes { return make(writeLanes, runtime.GOMAXPROCS(0)) }

// schedule gives c a turn on its lane; the caller holds c's writer role.
func (ls writeLanes) schedule(c *Conn) {
	l := &ls[c.seq%uint64(len(ls))]
	l.mu.Lock()
	l.queue = append(l.queue, c)
	start := l.needDrainer()
	l.mu.Unlock()
	if start {
		go l.drain()
	}
}

// needDrainer reports, with mu held, whether a drainer is to be started
// for the connections listed beyond what the waiting ones will take, and
// counts it as waiting. So the waiting drainers always take every listed
// connection (len(queue) ≤ waiting × turnsPerDrainer after each schedule
// and each take), and a drainer need not look again when it ends.
func (l *writeLane) needDrainer() bool {
	if len(l.queue) <= l.waiting*turnsPerDrainer {
		return false
	}
	l.waiting++
	return true
}

// drain gives up to turnsPerDrainer listed connections their turns.
func (l *writeLane) drain() {
	var frames []byte // the turns' frames, reused
	l.mu.Lock()
	l.waiting--
	n := min(len(l.queue), turnsPerDrainer)
	turns := l.queue[:n:n] // no longer the queue's: appends go past it
	l.queue = l.queue[n:]
	if len(l.queue) == 0 {
		l.queue = nil
	}
	l.mu.Unlock()
	for i, c := range turns {
		frames = c.writeTurn(frames)
		if cap(frames) > maxKeptFrameBuffer {
			frames = nil
		}
		turns[i] = nil
	}
}

// writeTurn writes what c has queued without waiting on its socket, with
// buf as room for the frames, and returns buf for the next turn. The
// writer role ends here, or passes to a writer goroutine.
func (c *Conn) writeTurn(buf []byte) []byte {
	defer supervise.Recover(c.hub.opts.Logger, panicComponent, c.writerPanicked)
	for {
		if c.ended.Load() {
			c.q.releaseWriter(true, false)
			return buf
		}
		if c.pingDue.Load() {
			go c.writeLoop()
			return buf
		}
		var msgs int
		var closing bool
		buf, msgs, closing = c.q.frames(buf[:0])
		if msgs > 0 {
			if !c.wmu.TryLock() {
				go c.writeRest(append([]byte(nil), buf...), msgs, false)
				return buf
			}
			n, err := c.writeNow(buf)
			switch {
			case err != nil:
				c.wmu.Unlock()
				c.close(ReasonWriteError)
				c.q.releaseWriter(true, false)
				return buf
			case n < len(buf):
				// The socket is full: a goroutine waits to write the rest,
				// holding the lock, so that no frame comes between.
				go c.writeRest(append([]byte(nil), buf[n:]...), msgs, true)
				return buf
			}
			c.wmu.Unlock()
			c.hub.stats.sent.Add(uint64(msgs))
		}
		if closing {
			c.close(c.q.closeReason())
			c.q.releaseWriter(true, false)
			return buf
		}
		if msgs == 0 && c.q.releaseWriter(false, c.pingDue.Load()) {
			return buf
		}
	}
}

// writeRest writes frames of msgs messages left over by a turn, then goes
// on as the connection's writer goroutine. locked says the turn left wmu
// taken for it.
func (c *Conn) writeRest(frames []byte, msgs int, locked bool) {
	defer supervise.Recover(c.hub.opts.Logger, panicComponent, c.writerPanicked)
	if !locked {
		c.wmu.Lock()
	}
	err := errCloseSent
	if !c.closeSent {
		err = c.writeLocked(frames)
	}
	c.wmu.Unlock()
	if err != nil {
		c.close(ReasonWriteError)
		c.q.releaseWriter(true, false)
		return
	}
	c.hub.stats.sent.Add(uint64(msgs))
	c.writeLoop()
}

package wsgateway

import (
	"sync"

	"tvsm/internal/platform/wsframe"
)

// queue is a bounded FIFO of outgoing messages. Unlike a buffered channel it
// holds no memory while empty, which matters for many idle connections.
type queue struct {
	mu    sync.Mutex
	items [][]byte
	// closeWith is the reason of the first pushClose; its marker is a nil
	// item.
	closeWith CloseReason
	// writing says a writer goroutine runs; stopping that the connection is
	// torn down (no writer starts again); stopped is closed when the writer
	// that ran when stopping began has returned.
	writing, stopping bool
	stopped           chan struct{}
}

// claimWriter reports whether the caller is to start the writer: none runs
// and the connection is not being torn down.
func (q *queue) claimWriter() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing || q.stopping {
		return false
	}
	q.writing = true
	return true
}

// releaseWriter ends the writer's turn and reports true, unless there is
// more to write (queued messages, or pingDue) and the connection is not
// ending: then the writer goes on. Checked under the lock a pusher takes, so
// a message pushed meanwhile either is seen here or starts a new writer.
func (q *queue) releaseWriter(ending, pingDue bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !ending && !q.stopping && (len(q.items) > 0 || pingDue) {
		return false
	}
	q.writing = false
	if q.stopped != nil {
		close(q.stopped)
		q.stopped = nil
	}
	return true
}

// stopWriter keeps writers from starting again and waits for a running one
// to return.
func (q *queue) stopWriter() {
	q.mu.Lock()
	q.stopping = true
	if !q.writing {
		q.mu.Unlock()
		return
	}
	stopped := make(chan struct{})
	q.stopped = stopped
	q.mu.Unlock()
	<-stopped
}

// push appends msg unless the queue already holds limit messages.
func (q *queue) push(msg []byte, limit int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) >= limit {
		return false
	}
	q.items = append(q.items, msg)
	return true
}

// frames pops queued messages and appends each to dst as a text frame,
// until dst holds maxBatch bytes or more, or the close marker is reached:
// closing says it was (and it is popped too).
func (q *queue) frames(dst []byte) (_ []byte, msgs int, closing bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := 0
	for i < len(q.items) && len(dst) < maxBatch {
		msg := q.items[i]
		q.items[i] = nil
		i++
		if msg == nil { // CloseAfterFlush's marker
			closing = true
			break
		}
		dst = wsframe.AppendFrame(dst, wsframe.OpText, msg, false)
		msgs++
	}
	q.items = q.items[i:]
	if len(q.items) == 0 {
		q.items = nil // release the backing array
	}
	return dst, msgs, closing
}

// pushClose appends a marker (a nil item) that tells the writer to close the
// connection for r once it reaches it. It ignores the limit: the marker is
// not a message. Only the first marker's reason counts.
func (q *queue) pushClose(r CloseReason) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closeWith == 0 {
		q.closeWith = r
	}
	q.items = append(q.items, nil)
}

// closeReason returns the reason given to the first pushClose.
func (q *queue) closeReason() CloseReason {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closeWith
}

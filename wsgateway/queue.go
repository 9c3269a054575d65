package wsgateway

import "sync"

// queue is a bounded FIFO of outgoing messages. Unlike a buffered channel it
// holds no memory while empty, which matters for many idle connections.
type queue struct {
	mu    sync.Mutex
	items [][]byte
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

// pop removes the oldest message; ok is false when the queue is empty.
func (q *queue) pop() (msg []byte, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil, false
	}
	msg = q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil // release the backing array
	}
	return msg, true
}

package dispatch

import "sync"

// dropQueue is a bounded queue that never blocks its producers: offer fails
// when the queue is full or closed. Consumers range over ch.
type dropQueue[T any] struct {
	mu     sync.RWMutex
	ch     chan T
	closed bool
}

func newDropQueue[T any](size int) *dropQueue[T] {
	return &dropQueue[T]{ch: make(chan T, size)}
}

// offer queues v and reports whether it was taken.
func (q *dropQueue[T]) offer(v T) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return false
	}
	select {
	case q.ch <- v:
		return true
	default:
		return false
	}
}

// close ends the queue; consumers drain what is in it.
func (q *dropQueue[T]) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
}

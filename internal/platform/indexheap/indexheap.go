// Package indexheap is a min-heap of elements that know their place in it,
// so that one can be removed or re-sorted where it stands (a timer
// rescheduled, a waiter giving up) in O(log n). It wraps container/heap,
// whose adapter every such heap would otherwise write again.
package indexheap

import "container/heap"

// Elem is a pointer to an element: it orders itself against another and
// holds its index in the heap, which the heap keeps current (-1 once the
// element is out).
type Elem[T any] interface {
	*T
	Less(other *T) bool
	HeapIndex() *int
}

// Heap is a min-heap by Less. The zero value is empty and ready to use. It
// is not safe for concurrent use.
type Heap[T any, P Elem[T]] struct{ items []P }

// Len returns the number of elements.
func (h *Heap[T, P]) Len() int { return len(h.items) }

// Min returns the least element without removing it; nil when empty.
func (h *Heap[T, P]) Min() P {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// Push adds x.
func (h *Heap[T, P]) Push(x P) { heap.Push(h.adapter(), x) }

// Pop removes and returns the least element; the heap must not be empty.
func (h *Heap[T, P]) Pop() P { return heap.Pop(h.adapter()).(P) }

// Remove takes x, which must be in the heap, out of it.
func (h *Heap[T, P]) Remove(x P) { heap.Remove(h.adapter(), *x.HeapIndex()) }

// Fix restores the order after x, which must be in the heap, changed how it
// compares.
func (h *Heap[T, P]) Fix(x P) { heap.Fix(h.adapter(), *x.HeapIndex()) }

func (h *Heap[T, P]) adapter() *adapter[T, P] { return (*adapter[T, P])(h) }

// adapter is Heap seen as a heap.Interface.
type adapter[T any, P Elem[T]] Heap[T, P]

func (a *adapter[T, P]) Len() int           { return len(a.items) }
func (a *adapter[T, P]) Less(i, j int) bool { return a.items[i].Less(a.items[j]) }

func (a *adapter[T, P]) Swap(i, j int) {
	a.items[i], a.items[j] = a.items[j], a.items[i]
	*a.items[i].HeapIndex() = i
	*a.items[j].HeapIndex() = j
}

func (a *adapter[T, P]) Push(x any) {
	p := x.(P)
	*p.HeapIndex() = len(a.items)
	a.items = append(a.items, p)
}

func (a *adapter[T, P]) Pop() any {
	n := len(a.items) - 1
	p := a.items[n]
	a.items[n] = nil
	a.items = a.items[:n]
	*p.HeapIndex() = -1
	return p
}

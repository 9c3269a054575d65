package projections

import (
	"runtime"
	"sync"
	"sync/atomic"

	"tvsm/eventstore"
)

// decodeChunk is how many events one decoding goroutine takes at a time:
// large enough to amortise the hand-over, small enough that applying starts
// soon after a batch arrives.
const decodeChunk = 128

// decodeAhead calls apply for every event of events in order, on the
// calling goroutine, with what decode made of it; decode runs on up to
// GOMAXPROCS goroutines, chunk by chunk ahead of apply. Replaying a log is
// mostly JSON decoding, which is independent per event, while applying
// must follow log order: this way both cores work during a replay. The
// value apply gets is valid during the call only.
//
// The first error, of decode or apply, in log order, ends the call:
// events after it are neither applied nor (beyond chunks already taken)
// decoded. decodeAhead returns only after every goroutine it started has.
func decodeAhead[T any](events []eventstore.RecordedEvent, decode func(*eventstore.RecordedEvent, *T) error,
	apply func(*eventstore.RecordedEvent, *T) error) error {
	workers := min(runtime.GOMAXPROCS(0), (len(events)+decodeChunk-1)/decodeChunk)
	if workers <= 1 {
		var v T // one value for the whole batch: apply must not keep it
		for i := range events {
			err := decode(&events[i], &v)
			if err == nil {
				err = apply(&events[i], &v)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	d := &decoding[T]{events: events, decode: decode, out: make([]decoded[T], len(events)),
		ready: make([]chan struct{}, (len(events)+decodeChunk-1)/decodeChunk)}
	for c := range d.ready {
		d.ready[c] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(d.work)
	}
	defer wg.Wait()
	defer d.stop.Store(true)
	for c, ready := range d.ready {
		<-ready
		for i := c * decodeChunk; i < min(len(events), (c+1)*decodeChunk); i++ {
			err := d.out[i].err
			if err == nil {
				err = apply(&events[i], &d.out[i].v)
			}
			if err != nil {
				return err
			}
		}
		clear(d.out[c*decodeChunk : min(len(events), (c+1)*decodeChunk)]) // let applied values go
	}
	return nil
}

type decoded[T any] struct {
	v   T
	err error
}

// decoding is one decodeAhead call's shared state: workers take chunks in
// order (next) and close a chunk's ready channel once its events are
// decoded.
type decoding[T any] struct {
	events []eventstore.RecordedEvent
	decode func(*eventstore.RecordedEvent, *T) error
	out    []decoded[T]
	ready  []chan struct{}
	next   atomic.Int64
	stop   atomic.Bool
}

func (d *decoding[T]) work() {
	for !d.stop.Load() {
		c := int(d.next.Add(1) - 1)
		if c >= len(d.ready) {
			return
		}
		for i := c * decodeChunk; i < min(len(d.events), (c+1)*decodeChunk); i++ {
			d.out[i].err = d.decode(&d.events[i], &d.out[i].v)
		}
		close(d.ready[c])
	}
}

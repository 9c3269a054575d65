package node

import "context"

// cleanup holds how to undo each part of a node that Start built: a Start
// that fails half-way and Close both unwind it, newest first, so every part
// is stopped after what was built on it and before what it was built on.
type cleanup struct{ undo []func() }

// push registers how to undo the part just started.
func (c *cleanup) push(undo func()) { c.undo = append(c.undo, undo) }

// unwind runs the undo functions newest first. Each is dropped before it
// runs, so each runs once even if unwind is called again.
func (c *cleanup) unwind() {
	for len(c.undo) > 0 {
		last := len(c.undo) - 1
		undo := c.undo[last]
		c.undo = c.undo[:last]
		undo()
	}
}

// goUntilStopped runs f in a goroutine and returns the function that stops
// it: it cancels f's context and waits for f to return. The context keeps
// ctx's values but not its cancellation: Start's context bounds the
// start-up, not the life of the node.
func goUntilStopped(ctx context.Context, f func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"tvsm/eventstore"
)

// conn holds the process's EventStoreDB client and replaces it when it
// fails.
//
// One client serves every call (the client multiplexes them on one gRPC
// connection). But the v4 client gives up for good once it fails to
// reconnect (its connection loop ends and every later call says the
// connection is closed), and a client closed while a call is still inside
// it can panic. So conn tracks the calls in flight on each client: on a
// connection failure it stops handing that client out and fails new calls
// at once with eventstore.ErrUnavailable, while one goroutine builds new
// clients with jittered backoff until one answers a read; the old client is
// closed only when its last call has returned.
type conn struct {
	cfg  client.Configuration
	log  *slog.Logger
	opts Options

	mu       sync.Mutex
	cur      *generation // nil while the store is unreachable
	closed   bool
	reviving bool
	lastErr  error         // why the last client was dropped
	up       chan struct{} // closed when a client is installed after an outage
	stop     chan struct{} // closed by close
	wg       sync.WaitGroup
}

// generation is one client and the calls in flight on it.
type generation struct {
	c        *client.Client
	inflight atomic.Int64
	dropped  atomic.Bool // no longer handed out: close once idle
	once     sync.Once
}

func newConn(cfg client.Configuration, log *slog.Logger, opts Options) (*conn, error) {
	c := &conn{cfg: cfg, log: log, opts: opts, stop: make(chan struct{}), up: make(chan struct{})}
	g, err := c.newGeneration()
	if err != nil {
		return nil, err
	}
	c.cur = g
	return c, nil
}

func (c *conn) newGeneration() (*generation, error) {
	cfg := c.cfg // each client gets its own copy
	cl, err := client.NewClient(&cfg)
	if err != nil {
		return nil, err
	}
	return &generation{c: cl}, nil
}

// acquire returns the current client with one more call in flight, or
// fails with ErrClosed or ErrUnavailable.
func (c *conn) acquire() (*generation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, eventstore.ErrClosed
	case c.cur == nil:
		return nil, fmt.Errorf("%w: %w", eventstore.ErrUnavailable, c.lastErr)
	}
	c.cur.inflight.Add(1)
	return c.cur, nil
}

// release ends a call on g, closing g if it was dropped and this was its
// last call.
func (c *conn) release(g *generation) {
	if g.inflight.Add(-1) == 0 && g.dropped.Load() {
		g.close()
	}
}

func (g *generation) close() {
	g.once.Do(func() { _ = g.c.Close() })
}

// do runs op with the current client and reports a connection failure.
// op runs in its own goroutine: the client can block beyond ctx when it
// loses its server, and the caller must not.
func (c *conn) do(ctx context.Context, op func(*client.Client) error) error {
	g, err := c.acquire()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer c.release(g)
		done <- op(g.c)
	}()
	select {
	case err := <-done:
		c.failed(g, err)
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failed drops g when err says its connection is gone.
func (c *conn) failed(g *generation, err error) {
	if !connectionLost(err) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != g || c.closed {
		return
	}
	c.log.Warn("event store connection lost; reconnecting", "error", err)
	c.cur, c.lastErr = nil, err
	g.dropped.Store(true)
	if g.inflight.Load() == 0 {
		g.close()
	}
	if !c.reviving {
		c.reviving = true
		c.up = make(chan struct{})
		c.wg.Go(c.revive)
	}
}

// revive builds clients until one answers, from a server recent enough,
// then installs it.
func (c *conn) revive() {
	delay := c.opts.ReconnectMin
	for attempt := 1; ; attempt++ {
		wait := delay/2 + rand.N(delay/2+1)
		select {
		case <-c.stop:
			return
		case <-time.After(wait):
		}
		g, err := c.newGeneration()
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.ProbeTimeout)
			_, err = readHead(ctx, g.c)
			cancel()
			if err == nil {
				// The server back may be another node, or an older
				// build put in its place.
				err = checkServerVersion(g.c)
			}
			if err != nil {
				g.close()
			}
		}
		if err == nil {
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				g.close()
				return
			}
			c.cur, c.reviving, c.lastErr = g, false, nil
			close(c.up)
			c.mu.Unlock()
			c.log.Info("event store connection restored", "attempts", attempt)
			return
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		if errors.Is(err, ErrServerTooOld) {
			c.log.Error("event store refused", "attempt", attempt, "error", err)
		} else {
			c.log.Debug("event store still unreachable", "attempt", attempt, "error", err)
		}
		delay = min(delay*2, c.opts.ReconnectMax)
	}
}

// available returns a channel closed once a client is installed (at once
// when one is).
func (c *conn) available() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return c.up
}

// close stops handing out clients, waits up to timeout for the calls in
// flight, and closes the clients nobody is inside any more.
func (c *conn) close(timeout time.Duration) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	g := c.cur
	c.cur = nil
	close(c.stop)
	c.mu.Unlock()
	c.wg.Wait()
	if g == nil {
		return
	}
	g.dropped.Store(true)
	deadline := time.Now().Add(timeout)
	for g.inflight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if g.inflight.Load() == 0 {
		g.close()
	}
	// Otherwise a call is stuck inside the client: closing it under that
	// call could panic, so the last release closes it.
}

// connectionLost reports whether err means the client lost its server
// (rather than the server answering no).
func connectionLost(err error) bool {
	if err == nil {
		return false
	}
	var e *client.Error
	if errors.As(err, &e) {
		switch e.Code() {
		case client.ErrorUnavailable, client.ErrorCodeConnectionClosed:
			return true
		}
		err = e.Err()
		// gRPC's SendMsg answers io.EOF once the stream was ended under it
		// (the server went away while an append was being sent); the client
		// wraps it with an unknown code. A bare io.EOF, the end of a read,
		// is not wrapped.
		if errors.Is(err, io.EOF) {
			return true
		}
	}
	switch status.Code(err) {
	case codes.Unavailable:
		return true
	}
	return false
}

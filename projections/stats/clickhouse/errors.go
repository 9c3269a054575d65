package clickhouse

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"syscall"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"tvsm/projections/stats"
)

// An operation that failed because the server could not be reached is tried
// again after each of these pauses; the first retry also covers a pooled
// connection the server closed while it restarted. Every write is an
// idempotent upsert, so a retry after an unknown outcome is safe.
var retryPauses = []time.Duration{200 * time.Millisecond}

// busyCodes are server exceptions that say "not now" rather than "wrong":
// TIMEOUT_EXCEEDED, SOCKET_TIMEOUT, NETWORK_ERROR, TOO_MANY_SIMULTANEOUS_QUERIES,
// TOO_MANY_PARTS, ABORTED (server shutting down), and UNKNOWN_TABLE: a
// rebuild on another node swaps the tables (Replace), which takes a few
// renames during which a table is missing.
var busyCodes = []int32{159, 209, 210, 202, 252, 236, 60}

// unreachable reports whether err says the server could not be reached or
// could not serve now.
func unreachable(err error) bool {
	var ex *ch.Exception
	if errors.As(err, &ex) {
		return slices.Contains(busyCodes, ex.Code)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, ch.ErrAcquireConnTimeout) || errors.Is(err, driver.ErrBadConn)
}

// verbatim carries an error retry returns as it is, neither retried nor
// wrapped: the caller's callback failed, or a stream failed after rows went
// to the callback (a retry would deliver them twice).
type verbatim struct{ err error }

func (e verbatim) Error() string { return e.err.Error() }

// retry runs op with the store's query settings, again after a pause when
// the server was unreachable, and returns its error named after opName and
// wrapping stats.ErrUnavailable when the server stayed unreachable.
func (s *Store) retry(ctx context.Context, opName string, op func(context.Context) error) error {
	if s.closed.Load() {
		return fmt.Errorf("%w: clickhouse %s: store closed", stats.ErrUnavailable, opName)
	}
	if len(s.settings) > 0 {
		ctx = ch.Context(ctx, ch.WithSettings(s.settings))
	}
	for attempt := 0; ; attempt++ {
		s.swap.RLock()
		err := op(ctx)
		s.swap.RUnlock()
		if err == nil {
			return nil
		}
		if v, ok := err.(verbatim); ok {
			return v.err
		}
		if !unreachable(err) || ctx.Err() != nil || attempt == len(retryPauses) {
			return wrap(ctx, opName, err)
		}
		select {
		case <-ctx.Done():
			return wrap(ctx, opName, err)
		case <-time.After(retryPauses[attempt]):
		}
	}
}

func wrap(ctx context.Context, opName string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("stats: clickhouse %s: %w (%v)", opName, ctx.Err(), err)
	case unreachable(err):
		return fmt.Errorf("%w: clickhouse %s: %w", stats.ErrUnavailable, opName, err)
	default:
		return fmt.Errorf("stats: clickhouse %s: %w", opName, err)
	}
}

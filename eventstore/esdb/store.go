// Package esdb is the event store backend on EventStoreDB, through
// EventStore-Client-Go v4 (github.com/EventStore/EventStore-Client-Go/v4,
// pinned at v4.2.0). It implements eventstore.Store, eventstore.HeadReader
// and eventstore.Tombstoner (EventStoreDB's hard delete); it does not
// implement eventstore.MultiAppender: EventStoreDB appends to one stream at
// a time.
//
// Where EventStoreDB differs from the embedded store (the conformance
// suite's Features say so):
//   - Positions are EventStoreDB's, byte offsets in its log: increasing
//     but sparse.
//   - Event ids are recognised only as part of a retried append, per
//     stream: a repeat of an append with the same event ids at the same
//     expected revision is a no-op answered with where the events are
//     (https://developers.eventstore.com/clients/grpc/appending-events.html);
//     with Any that is best effort (the server checks a bounded cache of
//     recent ids). The same ids appended elsewhere are stored again.
//   - No multi-stream atomic append.
//
// One client serves the process (see conn): calls that find the server
// unreachable fail with eventstore.ErrUnavailable while the client is
// rebuilt in the background. Subscriptions are not resumed here: a dropped
// subscription fails its Recv, and the projection runner resubscribes
// after its last checkpoint with jittered backoff (and a watchdog notices
// one that stalls silently).
//
// Subscriptions to $all are unfiltered on the server and filtered here. A
// server-side filter reports checkpoints only every checkpointInterval ×
// maxSearchWindow events it scans, so while the events a projection wants
// are rare its checkpoint would stay behind the log: read-your-writes
// waits on other streams' events would time out, and the watchdog would
// see a head it never reaches. Filtering here, every event moves the
// checkpoint, at the price of every subscription receiving the whole log.
// Events of system streams ("$...") are skipped, and so are the tombstones
// EventStoreDB writes to $all; the events a tombstoned stream held are
// not: $all delivers them until a scavenge removes them.
package esdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"tvsm/eventstore"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultReconnectMin   = 100 * time.Millisecond
	DefaultReconnectMax   = 5 * time.Second
	DefaultProbeTimeout   = 2 * time.Second
	DefaultCloseTimeout   = 5 * time.Second
)

// Options configure a Store. The zero value gives the defaults.
type Options struct {
	Logger *slog.Logger
	// ConnectTimeout bounds how long Open waits for the server to answer.
	ConnectTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the jittered, doubling pause
	// between attempts to reach the server after losing it.
	ReconnectMin, ReconnectMax time.Duration
	// ProbeTimeout bounds each of those attempts.
	ProbeTimeout time.Duration
	// CloseTimeout bounds how long Close waits for calls in flight.
	CloseTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = DefaultReconnectMin
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = max(DefaultReconnectMax, o.ReconnectMin)
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	return o
}

// Store is the EventStoreDB backend. Safe for concurrent use.
type Store struct {
	url  string
	conn *conn
	log  *slog.Logger

	mu      sync.Mutex
	closed  bool
	closing chan struct{}
}

// Open connects to the EventStoreDB that url names (esdb://host:port?tls=false,
// esdb+discover://..., as EventStoreDB's connection strings) and waits, up
// to Options.ConnectTimeout or ctx, until it answers a read. It refuses a
// server older than MinServerVersion with ErrServerTooOld.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	cfg, err := client.ParseConnectionString(url)
	if err != nil {
		return nil, fmt.Errorf("esdb: connection string: %w", err)
	}
	log := opts.Logger.With("component", "eventstore")
	cfg.Logger = clientLogger(log)
	// The client's own discovery retries block every call behind them and
	// end its life when they run out; conn replaces a failed client
	// instead, so one attempt is enough.
	cfg.MaxDiscoverAttempts = 1
	c, err := newConn(*cfg, log, opts)
	if err != nil {
		return nil, fmt.Errorf("esdb: %w", err)
	}
	s := &Store{url: url, conn: c, log: log, closing: make(chan struct{})}
	if err := s.waitReachable(ctx, opts.ConnectTimeout); err != nil {
		s.Close()
		return nil, fmt.Errorf("esdb: %s: %w", redact(url), err)
	}
	if err := s.conn.do(ctx, checkServerVersion); err != nil {
		s.Close()
		return nil, fmt.Errorf("esdb: %s: %w", redact(url), err)
	}
	return s, nil
}

// URL is the connection string the store was opened with.
func (s *Store) URL() string { return s.url }

// waitReachable waits until the server answers a read of the head.
func (s *Store) waitReachable(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		_, err := s.Head(ctx)
		if err == nil || !errors.Is(err, eventstore.ErrUnavailable) {
			return err
		}
		select {
		case <-s.conn.available():
		case <-ctx.Done():
			return fmt.Errorf("not reachable within %v: %w", timeout, err)
		}
	}
}

// redact drops the password of a connection string for messages.
func redact(url string) string {
	cfg, err := client.ParseConnectionString(url)
	if err != nil || cfg.Password == "" {
		return url
	}
	return "(connection string with credentials)"
}

func clientLogger(log *slog.Logger) client.LoggingFunc {
	return func(level client.LogLevel, format string, args ...any) {
		// The client logs every dropped call and subscription as an
		// error, including those this package ends itself; what matters
		// is logged by the store.
		log.Debug(fmt.Sprintf(format, args...), "source", "esdb-client", "level", level)
	}
}

// Close ends every subscription and the client. Calls after Close fail
// with eventstore.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	s.conn.close(DefaultCloseTimeout)
	return nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Append implements eventstore.Store.
func (s *Store) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if s.isClosed() {
		return eventstore.AppendResult{}, fmt.Errorf("esdb: append: %w", eventstore.ErrClosed)
	}
	if err := eventstore.ValidateAppend(stream, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	proposed := make([]client.EventData, len(events))
	for i, e := range events {
		ct := client.ContentTypeBinary
		if len(e.Data) > 0 && json.Valid(e.Data) {
			ct = client.ContentTypeJson
		}
		proposed[i] = client.EventData{EventID: uuid.UUID(e.ID), EventType: e.Type, ContentType: ct, Data: e.Data, Metadata: e.Metadata}
	}
	var wr *client.WriteResult
	err := s.conn.do(ctx, func(c *client.Client) (err error) {
		wr, err = c.AppendToStream(ctx, stream, client.AppendToStreamOptions{ExpectedRevision: expectedRevision(expect)}, proposed...)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return eventstore.AppendResult{}, fmt.Errorf("esdb: append to %q: %w", stream, ctx.Err())
		}
		return eventstore.AppendResult{}, appendError(err, stream, expect)
	}
	return eventstore.AppendResult{
		NextExpected: wr.NextExpectedVersion,
		Position:     eventstore.Position{Commit: wr.CommitPosition, Prepare: wr.PreparePosition},
	}, nil
}

func expectedRevision(r eventstore.Revision) client.ExpectedRevision {
	switch {
	case r.IsNoStream():
		return client.NoStream{}
	case r.IsStreamExists():
		return client.StreamExists{}
	}
	if n, ok := r.Exact(); ok {
		return client.Revision(n)
	}
	return client.Any{}
}

// ReadStream implements eventstore.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	if s.isClosed() {
		return nil, fmt.Errorf("esdb: read: %w", eventstore.ErrClosed)
	}
	start, err := eventstore.ValidateRead(stream, from)
	if err != nil {
		return nil, err
	}
	count := uint64(math.MaxInt64)
	if max > 0 {
		count = uint64(max)
	}
	var out []eventstore.RecordedEvent
	err = s.conn.do(ctx, func(c *client.Client) error {
		rs, err := c.ReadStream(ctx, stream, client.ReadStreamOptions{From: client.Revision(start)}, count)
		if err != nil {
			return err
		}
		defer rs.Close()
		for {
			ev, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if r := ev.OriginalEvent(); r != nil {
				out = append(out, recorded(r))
			}
		}
	})
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("esdb: read %q: %w", stream, ctx.Err())
	case notFound(err):
		return nil, fmt.Errorf("esdb: read %q: %w", stream, eventstore.ErrStreamNotFound)
	case streamDeleted(err):
		return nil, fmt.Errorf("esdb: read %q: %w", stream, eventstore.ErrStreamDeleted)
	}
	return nil, fmt.Errorf("esdb: read %q: %w", stream, classify(err))
}

// Tombstone implements eventstore.Tombstoner with EventStoreDB's hard
// delete, expecting any revision. The server answers once the tombstone is
// committed, so it is durable on return. A stream tombstoned before makes
// the server answer "stream deleted", which is the no-op the port asks
// for.
//
// The stream's events stay in EventStoreDB's chunk files, and in what $all
// delivers, until an operator runs a scavenge; the tombstone itself stays
// for good (as a "$streamDeleted" event of the stream, which
// subscriptions skip).
func (s *Store) Tombstone(ctx context.Context, stream string) error {
	if s.isClosed() {
		return fmt.Errorf("esdb: tombstone: %w", eventstore.ErrClosed)
	}
	if err := eventstore.ValidateStreamName(stream); err != nil {
		return err
	}
	err := s.conn.do(ctx, func(c *client.Client) error {
		_, err := c.TombstoneStream(ctx, stream, client.TombstoneStreamOptions{ExpectedRevision: client.Any{}})
		return err
	})
	switch {
	case err == nil, streamDeleted(err):
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("esdb: tombstone %q: %w", stream, ctx.Err())
	}
	return fmt.Errorf("esdb: tombstone %q: %w", stream, classify(err))
}

// tombstoneRevision is the revision EventStoreDB gives the tombstone of a
// stream (its EventNumber.DeletedStream, 2^63-1).
const tombstoneRevision = math.MaxInt64

// isTombstone reports whether r is the event EventStoreDB writes to $all
// when it tombstones a stream: not an event anyone appended.
func isTombstone(r *client.RecordedEvent) bool {
	return r.EventType == "$streamDeleted" && r.EventNumber == tombstoneRevision
}

// Head implements eventstore.HeadReader: the position of the newest event
// in $all (system events included).
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	if s.isClosed() {
		return eventstore.Position{}, fmt.Errorf("esdb: head: %w", eventstore.ErrClosed)
	}
	var head eventstore.Position
	err := s.conn.do(ctx, func(c *client.Client) (err error) {
		head, err = readHead(ctx, c)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return eventstore.Position{}, fmt.Errorf("esdb: head: %w", ctx.Err())
		}
		return eventstore.Position{}, fmt.Errorf("esdb: head: %w", classify(err))
	}
	return head, nil
}

// readHead reads the position of the last event of $all.
func readHead(ctx context.Context, c *client.Client) (eventstore.Position, error) {
	rs, err := c.ReadAll(ctx, client.ReadAllOptions{Direction: client.Backwards, From: client.End{}}, 1)
	if err != nil {
		return eventstore.Position{}, err
	}
	defer rs.Close()
	ev, err := rs.Recv()
	if errors.Is(err, io.EOF) {
		return eventstore.Beginning, nil
	}
	if err != nil {
		return eventstore.Position{}, err
	}
	p := ev.OriginalEvent().Position
	return eventstore.Position{Commit: p.Commit, Prepare: p.Prepare}, nil
}

// recorded converts the client's event.
func recorded(r *client.RecordedEvent) eventstore.RecordedEvent {
	return eventstore.RecordedEvent{
		ID:       eventstore.EventID(r.EventID),
		Stream:   r.StreamID,
		Revision: r.EventNumber,
		Position: eventstore.Position{Commit: r.Position.Commit, Prepare: r.Position.Prepare},
		Type:     r.EventType,
		Data:     r.Data,
		Metadata: r.UserMetadata,
		Created:  r.CreatedDate.UTC(),
	}
}

// Package clickhouse keeps statistics facts in ClickHouse (a stats.FactStore)
// over the native protocol with github.com/ClickHouse/clickhouse-go/v2.
//
// Tables are ReplacingMergeTree partitioned by month with provider_id first
// in the sorting key. A row written again with the same key replaces the
// older one, the higher version winning, but only when parts merge, at an
// unknown time: every read therefore uses FINAL (or an aggregate that
// duplicates cannot change), never the raw rows.
//
// The DDL and SQL are valid on Debian's ClickHouse 18.16 and on current
// releases: no DateTime64, Map, Bool, TTL, window functions, JOINs or {p:Type}
// parameters, and dates are bound as 'YYYY-MM-DD' strings.
package clickhouse

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tvsm/projections/stats"
)

// DefaultDatabase is used when the URL names none.
const DefaultDatabase = "tvsm"

// defaultDialTimeout keeps an unreachable server from holding an API request
// for the driver's default 30 s; dial_timeout in the URL overrides it.
const defaultDialTimeout = 5 * time.Second

// Store is the ClickHouse fact store. Safe for concurrent use.
type Store struct {
	conn driver.Conn
	opts *ch.Options
	db   string // validated database name, used in qualified table names
	// swap is held shared by every operation and exclusively by Replace,
	// which renames the tables under them.
	swap sync.RWMutex
	// settings go with every query: async_insert=0 where the server knows
	// the setting (18.16 does not and would reject it).
	settings ch.Settings

	seenMu sync.Mutex
	seen   map[classKey]stats.Day // earliest day this store wrote

	// The driver's Close blocks forever when called twice and leaves the
	// pool usable; closed makes Close idempotent and later calls fail.
	closeOnce sync.Once
	closed    atomic.Bool
}

var _ stats.Replacer = (*Store)(nil)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Open connects to the server named by rawURL,
//
//	clickhouse://[user[:password]@]host:port[/database][?dial_timeout=5s&...]
//
// (query parameters as clickhouse-go reads them; unknown ones are sent as
// server settings), creates the database and migrates its schema. A server
// that cannot be reached gives an error wrapping stats.ErrUnavailable.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	opts, db, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return open(ctx, opts, db)
}

// open connects with opts to database db, creating and migrating it.
func open(ctx context.Context, opts *ch.Options, db string) (*Store, error) {
	conn, err := ch.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("stats: clickhouse: %w", err)
	}
	s := &Store{conn: conn, opts: opts, db: db, seen: make(map[classKey]stats.Day)}
	if err := s.start(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// parseURL returns the driver options and the database of rawURL.
func parseURL(rawURL string) (*ch.Options, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "clickhouse" || u.Host == "" {
		return nil, "", fmt.Errorf("stats: clickhouse URL %q: want clickhouse://host:port/database", redact(rawURL))
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		db = DefaultDatabase
	}
	if !identifier.MatchString(db) {
		return nil, "", fmt.Errorf("stats: clickhouse URL: database %q: want letters, digits and _", db)
	}
	opts, err := ch.ParseDSN(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("stats: clickhouse URL %q: %v", redact(rawURL), err)
	}
	// The connection starts in the user's default database: ours may not
	// exist yet. Every statement names its tables with the database.
	opts.Auth.Database = ""
	if opts.DialTimeout == 0 {
		opts.DialTimeout = defaultDialTimeout
	}
	return opts, db, nil
}

// redact hides a password in a URL for error messages.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// start checks the server, chooses the per-query settings and migrates.
func (s *Store) start(ctx context.Context) error {
	var known uint64
	err := s.retry(ctx, "open", func(ctx context.Context) error {
		return s.conn.QueryRow(ctx,
			"SELECT count() FROM system.settings WHERE name = 'async_insert'").Scan(&known)
	})
	if err != nil {
		return err
	}
	if known > 0 {
		s.settings = ch.Settings{"async_insert": 0}
	}
	return s.migrate(ctx)
}

// Close closes the connections. Later calls of the store's methods fail
// with stats.ErrUnavailable.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		err = s.conn.Close()
	})
	return err
}

// Package embedded is the default statistics backend: facts kept in pebble
// in a directory and aggregated in Go, needing no server. It implements
// stats.FactStore and passes stats/statstest, the suite the ClickHouse
// backend runs too.
//
// Why pebble rather than an embedded SQL engine: pebble is already the
// event store's engine (no cgo, no extra build time), and the three
// questions the Statistics API asks are scans of key ranges laid out for
// them (docs/statistics.md): subscription rows by provider and day, facts
// by provider and day for device totals, facts by provider and account for
// per-account totals streamed in account order. Upserts with "higher
// version wins" are a read-modify-write under one lock.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"tvsm/projections/stats"
)

// formatVersion is stored under metaKey("format"); Open refuses others.
const formatVersion = "1"

// Options configure a Store. The zero value gives the defaults.
type Options struct {
	Logger *slog.Logger
	// CacheSize is pebble's block cache in bytes (default 32 MiB).
	CacheSize int64
}

// Store is the embedded fact store. Safe for concurrent use.
type Store struct {
	dir  string
	opts Options
	db   *pebble.DB
	// mu serialises the read-modify-write upserts (subscription rows, class
	// first seen); plain fact writes and reads need no lock of their own.
	mu sync.Mutex
	// life is held shared by every operation and exclusively by Close and
	// Replace, so the database is never closed under one.
	life   sync.RWMutex
	closed bool
}

var _ stats.Replacer = (*Store)(nil)

// Open opens (creating if needed) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 32 << 20
	}
	db, err := openDB(dir, opts)
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, opts: opts, db: db}, nil
}

// openDB opens the database in dir and checks its format.
func openDB(dir string, opts Options) (*pebble.DB, error) {
	cache := pebble.NewCache(opts.CacheSize)
	defer cache.Unref()
	popts := &pebble.Options{
		Cache:              cache,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             logger{opts.Logger.With("component", "stats-pebble")},
	}
	for i := range popts.Levels {
		popts.Levels[i].BlockSize = 32 << 10 // long range scans
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("embedded stats: open %s: %w", dir, err)
	}
	if err := checkFormat(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded stats: open %s: %w", dir, err)
	}
	return db, nil
}

func checkFormat(db *pebble.DB) error {
	v, closer, err := db.Get(metaKey("format"))
	if errors.Is(err, pebble.ErrNotFound) {
		return db.Set(metaKey("format"), []byte(formatVersion), pebble.Sync)
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if string(v) != formatVersion {
		return fmt.Errorf("data format %q, this build reads %q", v, formatVersion)
	}
	return nil
}

// Close closes the database, after the operations under way. Later calls
// fail with stats.ErrUnavailable.
func (s *Store) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// begin starts an operation: it fails once the store is closed. The caller
// must call s.life.RUnlock when it returns nil.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.life.RLock()
	if s.closed {
		s.life.RUnlock()
		return fmt.Errorf("embedded stats: %w: closed", stats.ErrUnavailable)
	}
	return nil
}

// WriteViewing implements stats.FactStore: each fact is set under its two
// keys, both derived from the fact, so a rewrite replaces it.
func (s *Store) WriteViewing(ctx context.Context, facts []stats.ViewingFact) error {
	if len(facts) == 0 {
		return nil
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.life.RUnlock()
	b := s.db.NewBatch()
	defer b.Close()
	for i := range facts {
		f := &facts[i]
		if err := b.Set(dayKey(f), encodeDayFact(f), nil); err != nil {
			return err
		}
		if err := b.Set(accountKey(f), encodeAccountFact(f), nil); err != nil {
			return err
		}
	}
	return s.commit(b)
}

func (s *Store) commit(b *pebble.Batch) error {
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("embedded stats: write: %w", err)
	}
	return nil
}

// WriteSubscriptionDays implements stats.FactStore: per key the row with
// the highest version (the later one of equal versions) is kept.
func (s *Store) WriteSubscriptionDays(ctx context.Context, rows []stats.SubscriptionDay) error {
	best := make(map[string]*stats.SubscriptionDay, len(rows))
	for i := range rows {
		k := string(subKey(&rows[i]))
		if cur, ok := best[k]; !ok || rows[i].Version >= cur.Version {
			best[k] = &rows[i]
		}
	}
	return s.upsert(ctx, len(best), func(b *pebble.Batch) error {
		for k, r := range best {
			old, found, err := s.get([]byte(k))
			if err != nil {
				return err
			}
			if found {
				prev, err := decodeSub([]byte(k), old)
				if err != nil {
					return err
				}
				if prev.Version > r.Version {
					continue
				}
			}
			if err := b.Set([]byte(k), encodeSub(r), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteClassSeen implements stats.FactStore, keeping the earliest day.
func (s *Store) WriteClassSeen(ctx context.Context, rows []stats.DeviceClassSeen) error {
	earliest := make(map[string]stats.Day, len(rows))
	for _, r := range rows {
		k := string(seenKey(r.Provider, r.Class))
		if d, ok := earliest[k]; !ok || r.Day < d {
			earliest[k] = r.Day
		}
	}
	return s.upsert(ctx, len(earliest), func(b *pebble.Batch) error {
		for k, d := range earliest {
			old, found, err := s.get([]byte(k))
			if err != nil {
				return err
			}
			if found && len(old) == dayLen && getDay(old) <= d {
				continue
			}
			if err := b.Set([]byte(k), putDay(nil, d), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// upsert runs fill under the upsert lock and commits what it set.
func (s *Store) upsert(ctx context.Context, n int, fill func(*pebble.Batch) error) error {
	if n == 0 {
		return nil
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.life.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	if err := fill(b); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	return s.commit(b)
}

// get returns a copy of the value under key.
func (s *Store) get(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("embedded stats: read: %w", err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), true, nil
}

// logger routes pebble's errors to slog; its info messages are dropped.
type logger struct{ l *slog.Logger }

func (logger) Infof(string, ...any)             {}
func (p logger) Errorf(format string, a ...any) { p.l.Error(fmt.Sprintf(format, a...)) }
func (p logger) Fatalf(format string, a ...any) {
	p.l.Error(fmt.Sprintf(format, a...), "fatal", true)
	panic(fmt.Sprintf(format, a...))
}

package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"tvsm/projections/stats"
)

// factTables are the tables a rebuild replaces (schema_version stays).
var factTables = []string{"subscription_days", "viewing", "class_seen"}

// Suffixes of the databases beside a store's: where a rebuild writes, and
// where Replace moves the old tables before it drops them.
const (
	besideSuffix = "_rebuild"
	oldSuffix    = "_old"
)

// Beside implements stats.Replacer: an empty store in the database named
// after s's with "_rebuild", on the same server (an earlier one is dropped
// first).
func (s *Store) Beside(ctx context.Context) (stats.FactStore, error) {
	db := s.db + besideSuffix
	err := s.retry(ctx, "beside", func(ctx context.Context) error {
		return s.conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+db+"`")
	})
	if err != nil {
		return nil, err
	}
	return open(ctx, s.opts, db)
}

// Replace implements stats.Replacer. It waits for the operations under way
// on s (and holds new ones), then renames s's fact tables into a database
// named after s's with "_old" and beside's into s's, in one RENAME, and
// drops what s's tables held. ClickHouse 18.16 has no EXCHANGE TABLES
// (it needs an Atomic database), and a RENAME of several tables is not
// atomic: other nodes on the database may find a table missing for the
// moment it takes, which they retry (UNKNOWN_TABLE is among the busy codes).
func (s *Store) Replace(ctx context.Context, beside stats.FactStore) error {
	b, ok := beside.(*Store)
	if !ok || b.db != s.db+besideSuffix {
		return fmt.Errorf("stats: clickhouse replace: %T is not a store from Beside", beside)
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("stats: clickhouse replace: %w", err)
	}
	s.swap.Lock()
	defer s.swap.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("%w: clickhouse replace: store closed", stats.ErrUnavailable)
	}
	old := s.db + oldSuffix
	renames := make([]string, 0, 2*len(factTables))
	statements := []string{"DROP DATABASE IF EXISTS `" + old + "`", "CREATE DATABASE `" + old + "`"}
	for _, t := range factTables {
		renames = append(renames, fmt.Sprintf("{db}.%s TO `%s`.%s", t, old, t), fmt.Sprintf("`%s`.%s TO {db}.%s", b.db, t, t))
	}
	statements = append(statements, "RENAME TABLE "+strings.Join(renames, ", "),
		"DROP DATABASE `"+old+"`", "DROP DATABASE `"+b.db+"`")
	if len(s.settings) > 0 {
		ctx = ch.Context(ctx, ch.WithSettings(s.settings))
	}
	if err := s.exec(ctx, statements...); err != nil {
		return wrap(ctx, "replace", err)
	}
	// What the store wrote to the old tables says nothing of the new ones.
	s.seenMu.Lock()
	clear(s.seen)
	s.seenMu.Unlock()
	return nil
}

// Discard implements stats.Replacer.
func (s *Store) Discard(beside stats.FactStore) error {
	b, ok := beside.(*Store)
	if !ok || b.db != s.db+besideSuffix {
		return fmt.Errorf("stats: clickhouse discard: %T is not a store from Beside", beside)
	}
	err := s.retry(context.Background(), "discard", func(ctx context.Context) error {
		return s.conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+b.db+"`")
	})
	return errors.Join(b.Close(), err)
}

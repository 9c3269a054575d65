package clickhouse

import (
	"context"
	"fmt"
	"strings"
)

// migrations[i] brings the schema to version i+1. Append new steps, never
// edit old ones. Every statement is idempotent (IF NOT EXISTS), so nodes
// starting together may both run a step.
//
// Sorting keys are the deduplication keys of ReplacingMergeTree:
//   - subscription_days: one row per (provider, day, tariff); version is the
//     log position of its computation, the highest wins.
//   - viewing: one row per fact (position, idx). provider_id and date are
//     functions of the fact's event, so a re-delivered fact has the same key;
//     they come first so that ranges of days read few granules. A short key
//     keeps FINAL cheap: it reads and compares every key column.
//   - class_seen: one row per (provider, class, day); reads take the minimum
//     day, so only the earliest day matters and duplicates do not.
var migrations = [][]string{
	{
		`CREATE TABLE IF NOT EXISTS {db}.subscription_days (
			date Date,
			provider_id Int64,
			tariff_id Int64,
			enabled Int64,
			enabled_devices Int64,
			active Int64,
			disabled Int64,
			enabled_with_devices Int64,
			version UInt64
		) ENGINE = ReplacingMergeTree(version)
		PARTITION BY toYYYYMM(date)
		ORDER BY (provider_id, date, tariff_id)`,
		`CREATE TABLE IF NOT EXISTS {db}.viewing (
			date Date,
			provider_id Int64,
			account_id Int64,
			channel_id Int64,
			device_id Int64,
			class String,
			live UInt8,
			seconds Int64,
			position UInt64,
			idx Int32
		) ENGINE = ReplacingMergeTree
		PARTITION BY toYYYYMM(date)
		ORDER BY (provider_id, date, position, idx)`,
		`CREATE TABLE IF NOT EXISTS {db}.class_seen (
			provider_id Int64,
			class String,
			date Date
		) ENGINE = ReplacingMergeTree
		PARTITION BY tuple()
		ORDER BY (provider_id, class, date)`,
	},
}

// SchemaVersion is the schema version this package writes and reads.
var SchemaVersion = len(migrations)

// migrate creates the database and the schema_version table, then applies
// the steps the database has not seen. A database migrated by a newer
// binary is refused rather than read with the wrong assumptions.
func (s *Store) migrate(ctx context.Context) error {
	return s.retry(ctx, "migrate", func(ctx context.Context) error {
		if err := s.exec(ctx,
			"CREATE DATABASE IF NOT EXISTS {db}",
			`CREATE TABLE IF NOT EXISTS {db}.schema_version (version UInt32, applied DateTime)
			ENGINE = ReplacingMergeTree ORDER BY version`,
		); err != nil {
			return err
		}
		var current uint32
		if err := s.conn.QueryRow(ctx, s.sql("SELECT max(version) FROM {db}.schema_version")).Scan(&current); err != nil {
			return err
		}
		if int(current) > SchemaVersion {
			return fmt.Errorf("database %s has schema version %d, newer than this binary's %d", s.db, current, SchemaVersion)
		}
		for v := int(current) + 1; v <= SchemaVersion; v++ {
			if err := s.exec(ctx, migrations[v-1]...); err != nil {
				return fmt.Errorf("schema version %d: %w", v, err)
			}
			if err := s.exec(ctx, fmt.Sprintf("INSERT INTO {db}.schema_version SELECT %d, now()", v)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) exec(ctx context.Context, statements ...string) error {
	for _, st := range statements {
		if err := s.conn.Exec(ctx, s.sql(st)); err != nil {
			return err
		}
	}
	return nil
}

// sql puts the quoted database name in place of {db}.
func (s *Store) sql(query string) string { return strings.ReplaceAll(query, "{db}", "`"+s.db+"`") }

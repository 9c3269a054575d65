package embedded

import "github.com/cockroachdb/pebble/v2"

// PebbleDB exposes the database to tests and benchmarks in this directory.
func (s *Store) PebbleDB() *pebble.DB { return s.db }

// WithSmallKeyFilters makes the committer start a new recent-key filter, and
// flush pebble, after every n id and head keys, so that tests go through
// many rotations.
func WithSmallKeyFilters(o Options, n int) Options {
	o.filterGenKeys = n
	return o
}

// DroppedKeyFilters is how many recent-key filters the committer has
// dropped after pebble flushed their keys.
func (s *Store) DroppedKeyFilters() int64 { return s.recent.dropped.Load() }

// Fsyncer makes a file's data, or data and metadata, durable.
type Fsyncer = fsyncer

// WithFsyncer makes the store's fsyncs go through f.
func WithFsyncer(o Options, f Fsyncer) Options {
	o.fsyncer = f
	return o
}

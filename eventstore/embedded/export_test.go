package embedded

import "github.com/cockroachdb/pebble/v2"

// PebbleDB exposes the database to tests and benchmarks in this directory.
func (s *Store) PebbleDB() *pebble.DB { return s.db }

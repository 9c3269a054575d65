package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"tvsm/internal/platform/fsutil"
	"tvsm/projections/stats"
)

// Suffixes of the directories beside a store's: where a rebuild writes,
// and where Replace moves the old facts before it removes them.
const (
	besideSuffix = ".rebuild"
	oldSuffix    = ".old"
)

// Beside implements stats.Replacer: an empty store in the directory
// beside s's, named after it with ".rebuild".
func (s *Store) Beside(context.Context) (stats.FactStore, error) {
	dir := s.dir + besideSuffix
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("embedded stats: beside: %w", err)
	}
	return Open(dir, s.opts)
}

// Replace implements stats.Replacer. It waits for the operations under
// way, closes both databases, moves s's directory aside and beside's in
// its place, opens it, and removes the old one. A crash in between leaves
// s's directory absent or holding either set of facts; the projector's
// snapshot is removed before (stats.Projector.TakeOver), so the next start
// recomputes the statistics from the log whichever it finds.
func (s *Store) Replace(_ context.Context, beside stats.FactStore) error {
	b, ok := beside.(*Store)
	if !ok || b.dir != s.dir+besideSuffix {
		return fmt.Errorf("embedded stats: replace: %T is not a store from Beside", beside)
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("embedded stats: replace: %w", err)
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return fmt.Errorf("embedded stats: %w: closed", stats.ErrUnavailable)
	}
	// From here until the new database is open, operations fail as on a
	// closed store.
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("embedded stats: replace: %w", err)
	}
	old := s.dir + oldSuffix
	err := errors.Join(os.RemoveAll(old), os.Rename(s.dir, old))
	if err == nil {
		err = errors.Join(os.Rename(b.dir, s.dir), fsutil.SyncDir(filepath.Dir(s.dir)))
	}
	if err != nil {
		return fmt.Errorf("embedded stats: replace: %w", err)
	}
	db, err := openDB(s.dir, s.opts)
	if err != nil {
		return fmt.Errorf("embedded stats: replace: %w", err)
	}
	s.db, s.closed = db, false
	if err := os.RemoveAll(old); err != nil {
		s.opts.Logger.Warn("removing the statistics a rebuild replaced", "dir", old, "error", err)
	}
	return nil
}

// Discard implements stats.Replacer.
func (s *Store) Discard(beside stats.FactStore) error {
	b, ok := beside.(*Store)
	if !ok || b.dir != s.dir+besideSuffix {
		return fmt.Errorf("embedded stats: discard: %T is not a store from Beside", beside)
	}
	return errors.Join(b.Close(), os.RemoveAll(b.dir))
}

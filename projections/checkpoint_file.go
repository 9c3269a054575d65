package projections

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"tvsm/eventstore"
	"tvsm/internal/platform/fsutil"
)

// checkpointExt ends the name of a checkpoint file: <name>.checkpoint.
const checkpointExt = ".checkpoint"

// checkpointFormat is the content of a checkpoint file, version 1.
const checkpointFormat = "tvsm-checkpoint v1 %d %d\n"

// FileCheckpointStore is a CheckpointStore keeping one small file per handler
// name in a directory. Saves are atomic and durable (temporary file, fsync,
// rename, fsync of the directory). It is safe for concurrent use; only one
// FileCheckpointStore (one process) may use a directory at a time.
type FileCheckpointStore struct {
	dir string

	mu    sync.Mutex
	known map[string]eventstore.Position // last loaded or saved, per name
}

// FileCheckpoints returns a checkpoint store keeping its files in dir, which
// it creates if needed.
func FileCheckpoints(dir string) (*FileCheckpointStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("projections: open checkpoints %s: %w", dir, err)
	}
	return &FileCheckpointStore{dir: dir, known: make(map[string]eventstore.Position)}, nil
}

// Load returns the stored checkpoint of name, or eventstore.Beginning when
// there is none.
func (s *FileCheckpointStore) Load(ctx context.Context, name string) (eventstore.Position, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pos, err := s.load(name)
	if err != nil {
		return eventstore.Position{}, fmt.Errorf("projections: load checkpoint %q: %w", name, err)
	}
	return pos, nil
}

// Save stores pos as the checkpoint of name. A position that is not after the
// stored one is ignored.
func (s *FileCheckpointStore) Save(ctx context.Context, name string, pos eventstore.Position) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("projections: save checkpoint %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.load(name)
	if err != nil {
		return fmt.Errorf("projections: save checkpoint %q: %w", name, err)
	}
	if !pos.After(cur) {
		return nil
	}
	err = writeFileAtomic(s.path(name), func(f *os.File) error {
		_, err := fmt.Fprintf(f, checkpointFormat, pos.Commit, pos.Prepare)
		return err
	})
	if err != nil {
		return fmt.Errorf("projections: save checkpoint %q at %v: %w", name, pos, err)
	}
	s.known[name] = pos
	return nil
}

// Delete removes the checkpoint of name, so that the handler starts again from
// the beginning of the log. It is the deliberate way back (Save never moves a
// checkpoint backwards); run it only while no runner uses name.
func (s *FileCheckpointStore) Delete(ctx context.Context, name string) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("projections: delete checkpoint %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(s.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("projections: delete checkpoint %q: %w", name, err)
	}
	if err := fsutil.SyncDir(s.dir); err != nil {
		return fmt.Errorf("projections: delete checkpoint %q: %w", name, err)
	}
	delete(s.known, name)
	return nil
}

// load returns the checkpoint of name from the cache or the file. The caller
// holds s.mu.
func (s *FileCheckpointStore) load(name string) (eventstore.Position, error) {
	if pos, ok := s.known[name]; ok {
		return pos, nil
	}
	if err := validName(name); err != nil {
		return eventstore.Position{}, err
	}
	// First use of name in this process: clear what an interrupted save left.
	removeStaleTemps(s.path(name))
	b, err := os.ReadFile(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		s.known[name] = eventstore.Beginning
		return eventstore.Beginning, nil
	}
	if err != nil {
		return eventstore.Position{}, err
	}
	pos, err := parseCheckpoint(string(b))
	if err != nil {
		return eventstore.Position{}, fmt.Errorf("%s: %w", s.path(name), err)
	}
	s.known[name] = pos
	return pos, nil
}

func (s *FileCheckpointStore) path(name string) string {
	return filepath.Join(s.dir, name+checkpointExt)
}

// parseCheckpoint parses the content of a checkpoint file strictly: anything
// but the exact output of checkpointFormat is an error.
func parseCheckpoint(s string) (eventstore.Position, error) {
	fields := strings.Fields(s)
	if len(fields) != 4 || fields[0] != "tvsm-checkpoint" || fields[1] != "v1" {
		return eventstore.Position{}, fmt.Errorf("malformed checkpoint %q", s)
	}
	commit, err1 := strconv.ParseUint(fields[2], 10, 64)
	prepare, err2 := strconv.ParseUint(fields[3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return eventstore.Position{}, fmt.Errorf("malformed checkpoint %q: %w", s, err)
	}
	if fmt.Sprintf(checkpointFormat, commit, prepare) != s {
		return eventstore.Position{}, fmt.Errorf("malformed checkpoint %q", s)
	}
	return eventstore.Position{Commit: commit, Prepare: prepare}, nil
}

// validName reports whether name can be used as a file name: 1 to 200 ASCII
// letters, digits, '.', '_' or '-', not starting with '.'.
func validName(name string) error {
	if name == "" || len(name) > 200 || name[0] == '.' {
		return fmt.Errorf("invalid handler name %q", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("invalid handler name %q", name)
		}
	}
	return nil
}

package projections

import (
	"fmt"
	"os"
	"path/filepath"

	"tvsm/internal/platform/fsutil"
)

// tempSuffix ends the names of the temporary files that writeFileAtomic
// renames into place. Readers never open them.
const tempSuffix = ".tmp"

// writeFileAtomic replaces the file at path with what fill writes: it writes a
// temporary file in the same directory, fsyncs it, renames it over path and
// fsyncs the directory. A crash at any point leaves either the old file or the
// new one at path (and at worst a stale temporary file next to it).
func writeFileAtomic(path string, fill func(f *os.File) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+".*"+tempSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return fsutil.SyncDir(dir)
}

// removeStaleTemps deletes temporary files that an interrupted
// writeFileAtomic for path left behind. Only one writer per path may run.
func removeStaleTemps(path string) {
	matches, err := filepath.Glob(globEscape(path) + ".*" + tempSuffix)
	if err != nil {
		return
	}
	for _, m := range matches {
		os.Remove(m)
	}
}

// globEscape quotes the pattern metacharacters of filepath.Match in s.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*', '?', '[', '\\':
			out = append(out, '\\', c)
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

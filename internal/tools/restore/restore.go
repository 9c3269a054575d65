// Package restore checks a backup (internal/platform/backup) and lays it
// out as a node's data directory: tvsm backup verify and tvsm restore.
package restore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"tvsm/eventstore/embedded"
	"tvsm/internal/platform/backup"
	"tvsm/internal/platform/fsutil"
)

// Verify checks the backup in dir: its manifest, every file it names
// against its size and SHA-256, and the event store's copy, opened
// read-only and read from its first event to its last, against the
// manifest's event count and position. It returns the manifest when all
// holds.
func Verify(dir string) (backup.Manifest, error) {
	m, err := backup.ReadManifest(dir)
	if err != nil {
		return m, err
	}
	if m.Store != "embedded" {
		return m, fmt.Errorf("backup: of a %q event store; this build restores embedded ones", m.Store)
	}
	if !m.Has(backup.KeysFile) {
		return m, fmt.Errorf("backup: the manifest names no %s", backup.KeysFile)
	}
	for _, f := range m.Files {
		size, sum, err := backup.HashFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		switch {
		case err != nil:
			return m, fmt.Errorf("backup: %s: %w", f.Path, err)
		case size != f.Size:
			return m, fmt.Errorf("backup: %s holds %d bytes, the manifest says %d", f.Path, size, f.Size)
		case sum != f.SHA256:
			return m, fmt.Errorf("backup: %s does not match its SHA-256 in the manifest", f.Path)
		}
	}
	sum, err := embedded.Inspect(filepath.Join(dir, backup.EventsDir), true)
	if err != nil {
		return m, fmt.Errorf("backup: the event store's copy: %w", err)
	}
	if sum.Events != m.Events || sum.Last != m.Position {
		return m, fmt.Errorf("backup: the event store's copy holds %d events through position %d, the manifest says %d through %d",
			sum.Events, sum.Last, m.Events, m.Position)
	}
	return m, nil
}

// Into verifies the backup in dir and lays it out as the data directory
// data, which must not exist or be empty: the event store's copy in
// data/events, the key file in data/keys, the snapshots. A master key the
// backup holds goes to masterKey, which must not exist. The files are
// copied into a directory beside data and renamed into place once all are
// synced, so a restore cut short leaves data as it was.
func Into(dir, data, masterKey string) (backup.Manifest, error) {
	if err := checkEmpty(data); err != nil {
		return backup.Manifest{}, err
	}
	m, err := Verify(dir)
	if err != nil {
		return m, err
	}
	if m.Has(backup.MasterKeyFile) {
		if _, err := os.Stat(masterKey); !errors.Is(err, os.ErrNotExist) {
			return m, fmt.Errorf("restore: the master key file %s exists; move it away, or restore elsewhere", masterKey)
		}
	}
	staging := filepath.Clean(data) + ".restoring"
	if err := os.RemoveAll(staging); err != nil {
		return m, fmt.Errorf("restore: %w", err)
	}
	for _, f := range m.Files {
		if f.Path == backup.MasterKeyFile {
			continue
		}
		if err := copyFile(filepath.Join(dir, filepath.FromSlash(f.Path)), filepath.Join(staging, filepath.FromSlash(f.Path)), 0o600); err != nil {
			return m, fmt.Errorf("restore: %s: %w", f.Path, err)
		}
	}
	for _, d := range []string{filepath.Join(staging, backup.EventsDir), filepath.Join(staging, filepath.Dir(backup.KeysFile)), staging} {
		if err := fsutil.SyncDir(d); err != nil {
			return m, fmt.Errorf("restore: %w", err)
		}
	}
	if m.Has(backup.MasterKeyFile) {
		if err := copyFile(filepath.Join(dir, backup.MasterKeyFile), masterKey, 0o600); err != nil {
			return m, fmt.Errorf("restore: the master key: %w", err)
		}
	}
	if err := os.Remove(data); err != nil && !errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(staging, data); err != nil {
		return m, fmt.Errorf("restore: %w", err)
	}
	return m, fsutil.SyncDir(filepath.Dir(filepath.Clean(data)))
}

// checkEmpty refuses a data directory that holds anything.
func checkEmpty(data string) error {
	entries, err := os.ReadDir(data)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("restore: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("restore: %s is not empty; restore into a new directory", data)
	}
	return nil
}

// copyFile copies from to a new file to (its directories made), synced.
func copyFile(from, to string, perm os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	return errors.Join(err, dst.Sync(), dst.Close())
}

// Package restore checks a backup (internal/platform/backup) and lays it
// out as a node's data directory: tvsm backup verify and tvsm restore.
package restore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"tvsm/eventstore/embedded"
	"tvsm/internal/platform/backup"
	"tvsm/internal/platform/fsutil"
)

// Verify checks the backup in dir: its manifest, every file it holds
// against its size and SHA-256, and, for a full backup, the event store's
// copy, opened read-only and read from its first event to its last,
// against the manifest's event count and position. It returns the
// manifest when all holds. An incremental backup's log is read only with
// the chain before it (VerifyChain): m.Parent says so.
func Verify(dir string) (backup.Manifest, error) {
	chain, err := readChain([]string{dir}, false)
	if err != nil {
		return backup.Manifest{}, err
	}
	m := chain[0].m
	if err := checkStored(chain[0]); err != nil {
		return m, err
	}
	if m.Parent != nil {
		return m, nil
	}
	return m, checkLog(filepath.Join(dir, backup.EventsDir), m)
}

// VerifyChain checks a chain of backups, oldest first: a full backup,
// then each one made since the one before it (their manifests say so, and
// the SHA-256 of the one before's manifest matches). Every backup's files
// are checked, and the last one's data directory is put together in a
// temporary directory and its log read through. It returns the last
// backup's manifest.
func VerifyChain(dirs []string) (backup.Manifest, error) {
	chain, err := readChain(dirs, true)
	if err != nil {
		return backup.Manifest{}, err
	}
	last := chain[len(chain)-1].m
	for _, l := range chain {
		if err := checkStored(l); err != nil {
			return last, err
		}
	}
	if len(chain) == 1 {
		return last, checkLog(filepath.Join(dirs[0], backup.EventsDir), last)
	}
	tmp, err := os.MkdirTemp("", "tvsm-verify-")
	if err != nil {
		return last, err
	}
	defer os.RemoveAll(tmp)
	for _, f := range last.Files {
		if f.Path == backup.MasterKeyFile || !strings.HasPrefix(f.Path, backup.EventsDir+"/") {
			continue
		}
		if err := assembleTo(chain, len(chain)-1, f, filepath.Join(tmp, filepath.FromSlash(f.Path))); err != nil {
			return last, err
		}
	}
	return last, checkLog(filepath.Join(tmp, backup.EventsDir), last)
}

// link is one backup of a chain.
type link struct {
	dir string
	m   backup.Manifest
	sum string // the SHA-256 of its manifest
}

// readChain reads the manifests of dirs and checks that each one after
// the first was made since the one before it; whole asks for a chain that
// begins with a full backup.
func readChain(dirs []string, whole bool) ([]link, error) {
	chain := make([]link, len(dirs))
	for i, dir := range dirs {
		m, sum, err := backup.ReadManifestSum(dir)
		if err != nil {
			return nil, err
		}
		if m.Store != "embedded" {
			return nil, fmt.Errorf("backup: %s is of a %q event store; this build restores embedded ones", dir, m.Store)
		}
		if !m.Has(backup.KeysFile) {
			return nil, fmt.Errorf("backup: the manifest of %s names no %s", dir, backup.KeysFile)
		}
		chain[i] = link{dir: dir, m: m, sum: sum}
	}
	first := chain[0]
	if whole && first.m.Parent != nil {
		return nil, fmt.Errorf("backup: %s was made since backup %s (position %d), which is missing: give the chain from its full backup on, oldest first",
			first.dir, first.m.Parent.ID, first.m.Parent.Position)
	}
	for i := 1; i < len(chain); i++ {
		prev, cur := chain[i-1], chain[i]
		p := cur.m.Parent
		switch {
		case p == nil:
			return nil, fmt.Errorf("backup: %s is a full backup, not one made since %s: a chain has its full backup first", cur.dir, prev.dir)
		case p.ID != prev.m.ID || p.Position != prev.m.Position:
			return nil, fmt.Errorf("backup: %s was made since backup %s (position %d), not since %s (backup %s, position %d): give the chain oldest first, without a gap",
				cur.dir, p.ID, p.Position, prev.dir, prev.m.ID, prev.m.Position)
		case p.ManifestSHA256 != prev.sum:
			return nil, fmt.Errorf("backup: the manifest of %s is not the one %s was made since (its SHA-256 differs): it was changed or replaced",
				prev.dir, cur.dir)
		}
	}
	return chain, nil
}

// checkStored checks the bytes l holds of each file against their size
// and SHA-256.
func checkStored(l link) error {
	for _, f := range l.m.Files {
		want, wantSum := f.Stored()
		if want == 0 && f.InParent {
			continue
		}
		size, sum, err := backup.HashFile(filepath.Join(l.dir, filepath.FromSlash(f.Path)))
		switch {
		case err != nil:
			return fmt.Errorf("backup: %s: %w", f.Path, err)
		case size != want:
			return fmt.Errorf("backup: %s holds %d bytes of %s, the manifest says %d", l.dir, size, f.Path, want)
		case sum != wantSum:
			return fmt.Errorf("backup: %s of %s does not match its SHA-256 in the manifest", f.Path, l.dir)
		}
	}
	return nil
}

// checkLog reads the event store's copy in dir through and compares it
// with m.
func checkLog(dir string, m backup.Manifest) error {
	sum, err := embedded.Inspect(dir, true)
	if err != nil {
		return fmt.Errorf("backup: the event store's copy: %w", err)
	}
	if sum.Events != m.Events || sum.Last != m.Position {
		return fmt.Errorf("backup: the event store's copy holds %d events through position %d, the manifest says %d through %d",
			sum.Events, sum.Last, m.Events, m.Position)
	}
	return nil
}

// assembleTo writes file f of chain[i] to a new file at to, synced, from
// the backups of the chain that hold its bytes, and checks it against its
// size and SHA-256.
func assembleTo(chain []link, i int, f backup.File, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := assemble(chain, i, f, io.MultiWriter(dst, h))
	if err = errors.Join(err, dst.Sync(), dst.Close()); err != nil {
		return fmt.Errorf("restore: %s: %w", f.Path, err)
	}
	if n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		return fmt.Errorf("restore: %s put together from the chain does not match its size and SHA-256 in the manifest of %s", f.Path, chain[i].dir)
	}
	return nil
}

// assemble writes the bytes of file f of chain[i] to w: those of the
// backups before it first, where its manifest says they hold them.
func assemble(chain []link, i int, f backup.File, w io.Writer) (int64, error) {
	var n int64
	if f.InParent || f.ParentPrefix > 0 {
		prev, ok := chain[i-1].m.File(f.Path)
		switch {
		case !ok:
			return 0, fmt.Errorf("%s leaves it to %s, which holds no such file", chain[i].dir, chain[i-1].dir)
		case f.InParent && (prev.Size != f.Size || prev.SHA256 != f.SHA256):
			return 0, fmt.Errorf("%s leaves it to %s, which holds another", chain[i].dir, chain[i-1].dir)
		case f.ParentPrefix > 0 && prev.Size != f.ParentPrefix:
			return 0, fmt.Errorf("%s begins with %d bytes of %s, which holds %d", chain[i].dir, f.ParentPrefix, chain[i-1].dir, prev.Size)
		}
		k, err := assemble(chain, i-1, prev, w)
		if err != nil || f.InParent {
			return k, err
		}
		n = k
	}
	size, sum := f.Stored()
	src, err := os.Open(filepath.Join(chain[i].dir, filepath.FromSlash(f.Path)))
	if err != nil {
		return n, err
	}
	defer src.Close()
	h := sha256.New()
	k, err := io.Copy(io.MultiWriter(w, h), src)
	if err != nil {
		return n + k, err
	}
	if k != size || hex.EncodeToString(h.Sum(nil)) != sum {
		return n + k, fmt.Errorf("%s holds %d bytes of it that do not match its manifest", chain[i].dir, k)
	}
	return n + k, nil
}

// Into verifies the backup in dir and lays it out as the data directory
// data; see IntoChain.
func Into(dir, data, masterKey string) (backup.Manifest, error) {
	return IntoChain([]string{dir}, data, masterKey)
}

// IntoChain lays out the last backup of a chain (oldest first: a full
// backup, then each one made since the one before; one full backup alone
// is a chain) as the data directory data, which must not exist or be
// empty: the event store's copy in data/events, the key file in data/keys,
// the snapshots. The chain's links are checked first (a wrong or missing
// one is refused before anything is written), every file is checked
// against its SHA-256 as it is put together, and the log is read through.
// A master key the backup holds goes to masterKey, which must not exist.
// The files are copied into a directory beside data and renamed into place
// once all are synced, so a restore cut short leaves data as it was.
func IntoChain(dirs []string, data, masterKey string) (m backup.Manifest, err error) {
	if err := checkEmpty(data); err != nil {
		return backup.Manifest{}, err
	}
	chain, err := readChain(dirs, true)
	if err != nil {
		return backup.Manifest{}, err
	}
	n := len(chain) - 1
	m = chain[n].m
	if m.Has(backup.MasterKeyFile) {
		if _, err := os.Stat(masterKey); !errors.Is(err, os.ErrNotExist) {
			return m, fmt.Errorf("restore: the master key file %s exists; move it away, or restore elsewhere", masterKey)
		}
	}
	staging := filepath.Clean(data) + ".restoring"
	if err := os.RemoveAll(staging); err != nil {
		return m, fmt.Errorf("restore: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(staging))
		}
	}()
	for _, f := range m.Files {
		if f.Path == backup.MasterKeyFile {
			continue
		}
		if err := assembleTo(chain, n, f, filepath.Join(staging, filepath.FromSlash(f.Path))); err != nil {
			return m, err
		}
	}
	if err := checkLog(filepath.Join(staging, backup.EventsDir), m); err != nil {
		return m, err
	}
	dirsToSync := []string{filepath.Join(staging, backup.EventsDir), filepath.Join(staging, filepath.Dir(backup.KeysFile)), staging}
	if _, err := os.Stat(filepath.Join(staging, backup.EventsDir, "commitlog")); err == nil {
		dirsToSync = append([]string{filepath.Join(staging, backup.EventsDir, "commitlog")}, dirsToSync...)
	}
	for _, d := range dirsToSync {
		if err := fsutil.SyncDir(d); err != nil {
			return m, fmt.Errorf("restore: %w", err)
		}
	}
	if f, ok := m.File(backup.MasterKeyFile); ok {
		if err := assembleTo(chain, n, f, masterKey); err != nil {
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

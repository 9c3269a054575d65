package node

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"tvsm/eventstore"
	eventembedded "tvsm/eventstore/embedded"
	"tvsm/eventstore/sealed"
	"tvsm/internal/platform/backup"
)

// backupIdle is how long a staged backup is kept without a file being
// read from it: its hard links keep sstables pebble has compacted away on
// the disk, so one a client abandoned must not stay.
const backupIdle = 15 * time.Minute

// defaultBackupReadModelWait is Options.BackupReadModelWait's default: a
// serving node's read model is milliseconds behind its log; minutes
// behind, it is not applying.
const defaultBackupReadModelWait = 2 * time.Minute

// checkpointer is an event store the node owns, which copies itself
// consistently while it serves (the embedded store).
type checkpointer interface {
	Checkpoint(ctx context.Context, dir string) (eventembedded.Summary, error)
	EventIDAt(pos uint64) (eventstore.EventID, bool, error)
}

// Backups stages online backups of the node (httpapi.Backups): a
// consistent copy of its event store, its key file and its snapshots, in
// DataDir/backups/ID, for a client to copy out (tvsm backup). One backup is
// staged at a time; a new one replaces it.
type Backups struct {
	n      *Node
	dir    string
	hashes *backup.HashCache // of the commit log segments staged, for the next incremental backup
	// readModelWait bounds the wait for the read model to apply the copy.
	readModelWait time.Duration

	mu      sync.Mutex
	running bool
	staged  *stagedBackup
	closed  bool
}

type stagedBackup struct {
	dir      string
	manifest backup.Manifest
	expiry   *time.Timer
}

// startBackups makes the node's Backups. Staged copies a stopped or
// killed node left behind are removed first.
func (n *Node) startBackups(_ context.Context, opts Options) error {
	b := &Backups{n: n, dir: filepath.Join(n.dataDir, "backups"), hashes: backup.NewHashCache(),
		readModelWait: cmp.Or(max(opts.BackupReadModelWait, 0), defaultBackupReadModelWait)}
	if err := os.RemoveAll(b.dir); err != nil {
		return err
	}
	n.Backups = b
	n.cleanup.push(b.close)
	return nil
}

// Start stages a backup and returns its manifest: the files to copy with
// their sizes and SHA-256. It fails with backup.ErrNotOwned on a store the
// node does not own (EventStoreDB), backup.ErrRunning while another is
// being staged, backup.ErrNotSameLog for an incremental one since a
// backup of another log, and backup.ErrReadModelBehind when the read model
// does not apply the copied log within Options.BackupReadModelWait.
//
// The order is what makes the parts agree. The snapshots are copied
// first, so they are at or before the log's copy and a node started on
// the backup follows the log after them. The key file is copied after the
// log's copy, so it holds the key of every subject the copied log seals
// values of (a key is durable before anything is sealed under it); and once
// the read model has applied the copy's last event, every account it
// knows as erased is erased in the copied key file too, so an erasure
// whose key was still being destroyed cannot come back with the backup.
func (b *Backups) Start(ctx context.Context, req backup.Request) (backup.Manifest, error) {
	cp, ok := b.n.backend.(checkpointer)
	if !ok {
		return backup.Manifest{}, backup.ErrNotOwned
	}
	if req.Since != nil {
		if err := sameLog(cp, req.Since); err != nil {
			return backup.Manifest{}, err
		}
	}
	b.mu.Lock()
	if b.running || b.closed {
		b.mu.Unlock()
		return backup.Manifest{}, backup.ErrRunning
	}
	b.running = true
	old := b.staged
	b.staged = nil
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.running = false
		b.mu.Unlock()
	}()
	if old != nil {
		b.remove(old)
	}
	id := newBackupID()
	dir := filepath.Join(b.dir, id)
	started := time.Now()
	m, err := b.stage(ctx, cp, id, dir, req)
	if err != nil {
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			b.n.log.Warn("removing a failed backup", "dir", dir, "error", rmErr)
		}
		return backup.Manifest{}, err
	}
	st := &stagedBackup{dir: dir, manifest: m}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		b.remove(st)
		return backup.Manifest{}, eventstore.ErrClosed
	}
	st.expiry = time.AfterFunc(backupIdle, func() { b.expire(st) })
	b.staged = st
	b.n.log.Info("backup staged", "id", id, "position", m.Position, "events", m.Events,
		"bytes", m.TotalSize(), "bytes_to_copy", m.StoredSize(), "incremental", m.Parent != nil, "took", time.Since(started))
	return m, nil
}

// sameLog checks that the log copied by the backup since describes is a
// prefix of the node's: the node holds the same event at its position.
// Then the node's sstables of the same name are the ones it copied (pebble
// never reuses a file number in a store, and a store restored from a
// backup goes on past the numbers the backup holds).
func sameLog(cp checkpointer, since *backup.Since) error {
	if since.Position == 0 {
		return nil
	}
	id, found, err := cp.EventIDAt(since.Position)
	switch {
	case err != nil:
		return err
	case !found:
		return fmt.Errorf("%w: it ends at position %d, past this node's log", backup.ErrNotSameLog, since.Position)
	case id.String() != since.LastEventID:
		return fmt.Errorf("%w: its event at position %d is not this node's", backup.ErrNotSameLog, since.Position)
	}
	return nil
}

func (b *Backups) stage(ctx context.Context, cp checkpointer, id, dir string, req backup.Request) (backup.Manifest, error) {
	includeMasterKey := req.IncludeMasterKey
	if b.n.fileKeys == nil {
		return backup.Manifest{}, errors.New("node: the subjects' keys are not in a key file this node can copy")
	}
	note := backup.MasterKeyNote{Location: b.n.masterLocation, Fingerprint: hex.EncodeToString(fingerprint(b.n.master))}
	if includeMasterKey && b.n.masterFile == "" {
		return backup.Manifest{}, fmt.Errorf("%w: the master key came from %s, not a file; back it up from there", backup.ErrNoMasterKeyFile, note.Location)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return backup.Manifest{}, err
	}
	for _, name := range backup.Snapshots {
		err := copyNew(filepath.Join(b.n.dataDir, name), filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return backup.Manifest{}, fmt.Errorf("node: backup: %s: %w", name, err)
		}
	}
	sum, err := cp.Checkpoint(ctx, filepath.Join(dir, backup.EventsDir))
	if err != nil {
		return backup.Manifest{}, err
	}
	applied, err := b.n.Runner.Progress().WaitWithin(ctx, eventstore.Position{Commit: sum.Last, Prepare: sum.Last}, b.readModelWait)
	if err != nil {
		return backup.Manifest{}, err
	}
	if !applied {
		return backup.Manifest{}, fmt.Errorf("%w: it is at position %d, the copy at %d, after %v; the node's log says why (a read model that cannot apply an event retries it): try again once it has caught up",
			backup.ErrReadModelBehind, b.n.Runner.Progress().Position().Commit, sum.Last, b.readModelWait)
	}
	keys := filepath.Join(dir, filepath.FromSlash(backup.KeysFile))
	if err := b.n.fileKeys.CopyTo(keys); err != nil {
		return backup.Manifest{}, err
	}
	if err := eraseInCopy(ctx, filepath.Dir(keys), b.n.Model.ErasedAccounts()); err != nil {
		return backup.Manifest{}, err
	}
	if includeMasterKey {
		if err := copyNew(b.n.masterFile, filepath.Join(dir, backup.MasterKeyFile)); err != nil {
			return backup.Manifest{}, fmt.Errorf("node: backup: the master key: %w", err)
		}
		note.Included = true
	}
	lastID := ""
	if sum.Last > 0 {
		eid, found, err := cp.EventIDAt(sum.Last)
		switch {
		case err != nil:
			return backup.Manifest{}, fmt.Errorf("node: backup: the copy's last event: %w", err)
		case !found:
			return backup.Manifest{}, fmt.Errorf("node: backup: the copy's last event, at position %d, is not in the log", sum.Last)
		}
		lastID = eid.String()
	}
	var parent *backup.Parent
	var since []backup.File
	if req.Since != nil {
		parent = &backup.Parent{ID: req.Since.ID, Position: req.Since.Position, ManifestSHA256: req.Since.ManifestSHA256}
		since = req.Since.Files
	}
	files, err := backup.HashTree(ctx, dir, since, backup.NewPacer(backup.DefaultRate), b.hashes)
	if err != nil {
		return backup.Manifest{}, err
	}
	return backup.Manifest{
		Format: backup.Format, ID: id, TvsmVersion: b.n.version, Created: time.Now().UTC(),
		Store: "embedded", StoreFormat: sum.Format, Position: sum.Last, Events: sum.Events, LastEventID: lastID,
		Parent: parent, MasterKey: note, Files: files,
	}, nil
}

// eraseInCopy erases the keys of subjects in the key file copied to dir.
func eraseInCopy(ctx context.Context, dir string, subjects []int64) error {
	fk, err := sealed.OpenFileKeys(dir)
	if err != nil {
		return err
	}
	for _, id := range subjects {
		if err := fk.Erase(ctx, id); err != nil {
			return errors.Join(err, fk.Close())
		}
	}
	return fk.Close()
}

// Open opens the file at path (as the manifest names it) of the staged
// backup id, and keeps the backup for another backupIdle.
func (b *Backups) Open(id, path string) (*os.File, error) {
	b.mu.Lock()
	st := b.staged
	if st == nil || st.manifest.ID != id || !st.manifest.Has(path) {
		b.mu.Unlock()
		return nil, backup.ErrNoBackup
	}
	st.expiry.Reset(backupIdle)
	b.mu.Unlock()
	return os.Open(filepath.Join(st.dir, filepath.FromSlash(path)))
}

// Remove removes the staged backup id, once its client has copied it.
func (b *Backups) Remove(id string) error {
	b.mu.Lock()
	st := b.staged
	if st == nil || st.manifest.ID != id {
		b.mu.Unlock()
		return backup.ErrNoBackup
	}
	b.staged = nil
	b.mu.Unlock()
	b.remove(st)
	return nil
}

// expire removes st if it is still the staged backup.
func (b *Backups) expire(st *stagedBackup) {
	b.mu.Lock()
	current := b.staged == st
	if current {
		b.staged = nil
	}
	b.mu.Unlock()
	if current {
		b.n.log.Warn("backup removed: nothing was read from it for a while", "id", st.manifest.ID, "idle", backupIdle)
		b.remove(st)
	}
}

func (b *Backups) remove(st *stagedBackup) {
	if st.expiry != nil {
		st.expiry.Stop()
	}
	if err := os.RemoveAll(st.dir); err != nil {
		b.n.log.Warn("removing a staged backup", "dir", st.dir, "error", err)
	}
}

func (b *Backups) close() {
	b.mu.Lock()
	b.closed = true
	st := b.staged
	b.staged = nil
	b.mu.Unlock()
	if st != nil {
		b.remove(st)
	}
}

func newBackupID() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(r[:])
}

func fingerprint(m *sealed.MasterKey) []byte {
	if m == nil {
		return nil
	}
	f := m.Fingerprint()
	return f[:]
}

// copyNew copies the file at from to a new file at to, synced.
func copyNew(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	return errors.Join(err, dst.Sync(), dst.Close())
}

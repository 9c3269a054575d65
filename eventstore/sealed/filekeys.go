package sealed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"tvsm/internal/platform/fsutil"
)

// FileKeys is the key store of the embedded event store: one file of
// fixed-size records beside the log, a record per subject. Erasing a key
// overwrites its record in place with zeros and an erased mark, then
// syncs the file: the key's bytes are gone from the file, not left behind
// for a compaction to drop some day (on a copy-on-write file system such
// as btrfs or ZFS the old block may survive until the file system reuses
// it; keep the data directory on one that overwrites in place, or on an
// encrypted volume). Creates are synced in groups: concurrent creators
// share one fsync.
type FileKeys struct {
	f *os.File

	mu    sync.Mutex
	index map[int64]keySlot
	size  int64 // bytes of whole records
	seq   atomic.Uint64

	syncMu  sync.Mutex
	synced  atomic.Uint64 // every write up to this one is synced
	syncErr error
}

type keySlot struct {
	off    int64
	erased bool
	key    WrappedKey
	seq    uint64 // the write that made the slot what it is
}

// FileKeysName is the key file's name in its directory.
const FileKeysName = "subject-keys"

// Record layout: state, subject, master fingerprint, wrapped key,
// padding, CRC-32C of what precedes it.
const (
	recordLen  = 80
	stateKey   = 'K'
	stateErase = 'E'
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// OpenFileKeys opens (or creates) the key file in dir. A record cut short
// at the end (a create whose sync never returned) is dropped. A damaged
// record elsewhere counts as an erasure that was being written, unless it
// is what a power loss leaves of a create never synced: concurrent creates
// write several batches before one sync, and a disk may write their
// sectors in any order, or not at all, so such records can lie anywhere
// in the unsynced tail, zeros or torn, with whole records after them.
func OpenFileKeys(dir string) (*FileKeys, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	path := filepath.Join(dir, FileKeysName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	s := &FileKeys{f: f, index: make(map[int64]keySlot)}
	if err := s.load(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("sealed: %s: %w", path, err)
	}
	if err := fsutil.SyncDir(dir); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("sealed: %w", err)
	}
	return s, nil
}

func (s *FileKeys) load() error {
	data, err := io.ReadAll(s.f)
	if err != nil {
		return err
	}
	whole := int64(len(data)) / recordLen * recordLen
	for off := int64(0); off < whole; off += recordLen {
		rec := data[off : off+recordLen]
		subject := int64(binary.BigEndian.Uint64(rec[1:9]))
		ok := crc32.Checksum(rec[:76], crcTable) == binary.BigEndian.Uint32(rec[76:])
		if !ok && off+recordLen == whole {
			whole = off // a create cut short: never acknowledged
			break
		}
		if !ok && !erasing(rec, subject, s.index) {
			continue
		}
		slot := keySlot{off: off, erased: !ok || rec[0] != stateKey}
		if !slot.erased {
			copy(slot.key.Master[:], rec[9:13])
			slot.key.Data = append([]byte(nil), rec[13:13+wrappedLen]...)
		}
		s.index[subject] = slot
	}
	s.size = whole
	if whole != int64(len(data)) {
		if err := s.f.Truncate(whole); err != nil {
			return err
		}
		return s.f.Sync()
	}
	return nil
}

// erasing reports whether a damaged record of subject can be an erasure
// being written. An erasure overwrites its subject's record (the first the
// file holds for it) in place, so a power loss leaves each part of it old
// or new, never zeros; a create appends, and leaves zeros where it did not
// get to write. Sectors and pages are multiples of 16 bytes, and so are
// records (80), so a part never written holds the mark (byte 0) or the
// checksum (the last 4 bytes) whole: zeros there mark a torn create.
func erasing(rec []byte, subject int64, index map[int64]keySlot) bool {
	_, seen := index[subject]
	return rec[0] != 0 && binary.BigEndian.Uint32(rec[76:]) != 0 && !seen
}

func record(state byte, subject int64, k WrappedKey) []byte {
	rec := make([]byte, recordLen)
	rec[0] = state
	binary.BigEndian.PutUint64(rec[1:9], uint64(subject))
	if state == stateKey {
		copy(rec[9:13], k.Master[:])
		copy(rec[13:13+wrappedLen], k.Data)
	}
	binary.BigEndian.PutUint32(rec[76:], crc32.Checksum(rec[:76], crcTable))
	return rec
}

// Load implements KeyStore.
func (s *FileKeys) Load(_ context.Context, subject int64) (WrappedKey, error) {
	s.mu.Lock()
	slot, ok := s.index[subject]
	s.mu.Unlock()
	switch {
	case !ok:
		return WrappedKey{}, ErrNoKey
	case slot.erased:
		return WrappedKey{}, ErrErased
	}
	// A key is handed out only once durable.
	return slot.key, s.durable(slot.seq)
}

// Create implements KeyStore: a batch of one, then what the file holds
// for subject (the key written, one made meanwhile, or an erasure).
func (s *FileKeys) Create(ctx context.Context, subject int64, k WrappedKey) (WrappedKey, error) {
	if err := s.CreateMany(ctx, []int64{subject}, []WrappedKey{k}); err != nil {
		return WrappedKey{}, err
	}
	return s.Load(ctx, subject)
}

// CreateMany stores keys[i] as subjects[i]'s key for each subject that has
// none (nor was erased), in one write and one sync: the keyring creates
// the keys of the next ids ahead of their accounts, so that a create does
// not wait for a sync of its own.
func (s *FileKeys) CreateMany(_ context.Context, subjects []int64, keys []WrappedKey) error {
	s.mu.Lock()
	var buf []byte
	start := s.size
	var added []int64
	for i, subject := range subjects {
		if _, ok := s.index[subject]; ok {
			continue
		}
		buf = append(buf, record(stateKey, subject, keys[i])...)
		s.index[subject] = keySlot{off: start + int64(len(buf)-recordLen), key: keys[i]}
		added = append(added, subject)
	}
	if len(buf) == 0 {
		s.mu.Unlock()
		return nil
	}
	if _, err := s.f.WriteAt(buf, start); err != nil {
		for _, subject := range added {
			delete(s.index, subject)
		}
		s.mu.Unlock()
		return s.fail(err)
	}
	s.size += int64(len(buf))
	seq := s.seq.Add(1)
	for _, subject := range added {
		slot := s.index[subject]
		slot.seq = seq
		s.index[subject] = slot
	}
	s.mu.Unlock()
	return s.durable(seq)
}

// Erase implements KeyStore.
func (s *FileKeys) Erase(_ context.Context, subject int64) error {
	s.mu.Lock()
	slot, ok := s.index[subject]
	if ok && slot.erased {
		s.mu.Unlock()
		return s.durable(slot.seq)
	}
	if !ok {
		slot = keySlot{off: s.size}
		s.size += recordLen
	}
	if _, err := s.f.WriteAt(record(stateErase, subject, WrappedKey{}), slot.off); err != nil {
		s.mu.Unlock()
		return s.fail(err)
	}
	slot.erased, slot.key = true, WrappedKey{}
	slot.seq = s.seq.Add(1)
	s.index[subject] = slot
	s.mu.Unlock()
	return s.durable(slot.seq)
}

// Rewrap implements KeyStore.
func (s *FileKeys) Rewrap(_ context.Context, from, to *MasterKey) (int, error) {
	s.mu.Lock()
	n := 0
	var err error
	for subject, slot := range s.index {
		if slot.erased || slot.key.Master != from.fingerprint {
			continue
		}
		if slot.key, err = rewrap(from, to, subject, slot.key); err != nil {
			break
		}
		if _, err = s.f.WriteAt(record(stateKey, subject, slot.key), slot.off); err != nil {
			err = s.fail(err)
			break
		}
		slot.seq = s.seq.Add(1)
		s.index[subject] = slot
		n++
	}
	seq := s.seq.Load()
	s.mu.Unlock()
	return n, errors.Join(err, s.durable(seq))
}

// durable returns once the write numbered seq is synced: the first caller
// syncs every write made so far, the ones that queued behind it find
// theirs among them.
func (s *FileKeys) durable(seq uint64) error {
	if s.synced.Load() >= seq { // without the lock: a sync may be under way
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.syncErr != nil {
		return s.syncErr
	}
	if s.synced.Load() >= seq {
		return nil
	}
	target := s.seq.Load()
	if err := s.f.Sync(); err != nil {
		return s.failLocked(err)
	}
	s.synced.Store(target)
	return nil
}

// fail makes the store unusable after a failed write or sync: what the
// file holds is unknown, so nothing more may be acknowledged.
func (s *FileKeys) fail(err error) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.failLocked(err)
}

func (s *FileKeys) failLocked(err error) error {
	if s.syncErr == nil {
		s.syncErr = fmt.Errorf("sealed: key file failed, restart the node: %w", err)
	}
	return s.syncErr
}

// Close implements KeyStore.
func (s *FileKeys) Close() error { return s.f.Close() }

// CopyTo writes what the key file holds now to a new file at path, synced:
// a consistent copy (no write is under way while it is read), for a
// backup. A copy taken after a copy of the log holds the key of every
// subject whose sealed values that log holds, since a key is durable
// before anything is sealed under it.
func (s *FileKeys) CopyTo(path string) error {
	s.mu.Lock()
	data := make([]byte, s.size)
	_, err := s.f.ReadAt(data, 0)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sealed: copy the key file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sealed: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("sealed: %w", err)
	}
	_, err = f.Write(data)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("sealed: copy the key file: %w", err)
	}
	return nil
}

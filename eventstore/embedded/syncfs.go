package embedded

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncFS is pebble's file system with the fsyncs of the files it writes
// counted and, in tests, made by a fsyncer that can hold or fail them.
type syncFS struct {
	vfs.FS
	fsyncs *atomic.Uint64
	via    fsyncer // nil: the files' own fsyncs
}

// walSyncs counts the commit log's fsyncs and keeps their typical
// duration: a moving average over about the last eight.
type walSyncs struct {
	count   atomic.Uint64
	avgNs   atomic.Int64
	totalNs atomic.Int64 // of every successful one
}

// observe takes the duration of a successful fsync into the average.
func (w *walSyncs) observe(d time.Duration) {
	w.totalNs.Add(int64(d))
	avg := w.avgNs.Load()
	if avg == 0 {
		avg = int64(d)
	}
	w.avgNs.Store(avg + (int64(d)-avg)/8) // one writer: the committer
}

// duration returns the average, zero before the first fsync.
func (w *walSyncs) duration() time.Duration { return time.Duration(w.avgNs.Load()) }

// fsyncer makes a file's data (SyncData, fdatasync) or data and metadata
// (Sync, fsync) durable.
type fsyncer interface {
	SyncData(fd uintptr) error
	Sync(fd uintptr) error
}

func (fs syncFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || f.Fd() == vfs.InvalidFd {
		return f, err
	}
	return syncFile{File: f, fs: fs}, nil
}

func (fs syncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(name, f, err)
}

func (fs syncFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(newname, f, err)
}

func (fs syncFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.wrap(name, f, err)
}

// Unwrap implements vfs.FS.
func (fs syncFS) Unwrap() vfs.FS { return fs.FS }

type syncFile struct {
	vfs.File
	fs syncFS
}

func (f syncFile) Sync() error {
	return f.countedSync(func() error {
		if f.fs.via == nil {
			return f.File.Sync()
		}
		return f.fs.via.Sync(f.Fd())
	})
}

func (f syncFile) SyncData() error {
	return f.countedSync(func() error {
		if f.fs.via == nil {
			return f.File.SyncData()
		}
		return f.fs.via.SyncData(f.Fd())
	})
}

// countedSync counts the fsync sync makes.
func (f syncFile) countedSync(sync func() error) error {
	f.fs.fsyncs.Add(1)
	return sync()
}

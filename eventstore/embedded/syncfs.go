package embedded

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncFS is pebble's file system with the fsyncs of the files it writes
// (the WAL above all) counted, and, in tests, made by a fsyncer that can
// hold or fail them.
type syncFS struct {
	vfs.FS
	fsyncs *atomic.Uint64
	via    fsyncer // nil: the files' own fsyncs
}

// fsyncer makes a file's data (SyncData, fdatasync) or data and metadata
// (Sync, fsync) durable.
type fsyncer interface {
	SyncData(fd uintptr) error
	Sync(fd uintptr) error
}

func (fs syncFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil || f.Fd() == vfs.InvalidFd {
		return f, err
	}
	return syncFile{File: f, fs: fs}, nil
}

func (fs syncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.Create(name, category))
}

func (fs syncFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, category))
}

func (fs syncFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, category, opts...))
}

// Unwrap implements vfs.FS.
func (fs syncFS) Unwrap() vfs.FS { return fs.FS }

type syncFile struct {
	vfs.File
	fs syncFS
}

func (f syncFile) Sync() error {
	f.fs.fsyncs.Add(1)
	if f.fs.via == nil {
		return f.File.Sync()
	}
	return f.fs.via.Sync(f.Fd())
}

func (f syncFile) SyncData() error {
	f.fs.fsyncs.Add(1)
	if f.fs.via == nil {
		return f.File.SyncData()
	}
	return f.fs.via.SyncData(f.Fd())
}

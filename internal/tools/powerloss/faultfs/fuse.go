package faultfs

import (
	"context"
	"sort"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fnode is the FUSE side of a node. Every operation goes through FS.do,
// under the file system's one lock: the kernel sends them concurrently,
// and a power loss must fall between two of them.
type fnode struct {
	fs.Inode
	fs *FS
	n  *node
}

var (
	_ fs.NodeLookuper  = (*fnode)(nil)
	_ fs.NodeGetattrer = (*fnode)(nil)
	_ fs.NodeSetattrer = (*fnode)(nil)
	_ fs.NodeOpener    = (*fnode)(nil)
	_ fs.NodeReader    = (*fnode)(nil)
	_ fs.NodeWriter    = (*fnode)(nil)
	_ fs.NodeFsyncer   = (*fnode)(nil)
	_ fs.NodeFlusher   = (*fnode)(nil)
	_ fs.NodeAllocater = (*fnode)(nil)
	_ fs.NodeCreater   = (*fnode)(nil)
	_ fs.NodeMkdirer   = (*fnode)(nil)
	_ fs.NodeUnlinker  = (*fnode)(nil)
	_ fs.NodeRmdirer   = (*fnode)(nil)
	_ fs.NodeRenamer   = (*fnode)(nil)
	_ fs.NodeReaddirer = (*fnode)(nil)
	_ fs.NodeStatfser  = (*fnode)(nil)
)

func (n *fnode) path() string { return n.Path(nil) }

func (n *fnode) childPath(name string) func() string {
	return func() string {
		if p := n.path(); p != "" {
			return p + "/" + name
		}
		return name
	}
}

func mode(n *node) uint32 {
	if n.dir {
		return syscall.S_IFDIR
	}
	return syscall.S_IFREG
}

func fillAttr(n *node, out *fuse.Attr) {
	out.Ino = n.ino
	out.Mode = mode(n) | n.perm
	out.Nlink = 1
	if n.dir {
		out.Nlink = 2
	}
	out.Size = uint64(n.size)
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = pageSize
	out.SetTimes(&n.mtime, &n.mtime, &n.mtime)
}

// child returns the FUSE inode of c, a child of n.
func (n *fnode) child(ctx context.Context, c *node, out *fuse.EntryOut) *fs.Inode {
	fillAttr(c, &out.Attr)
	return n.NewInode(ctx, &fnode{fs: n.fs, n: c}, fs.StableAttr{Mode: mode(c), Ino: c.ino})
}

func (n *fnode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var c *node
	errno, _ := n.fs.do(opRead, nil, func() syscall.Errno {
		if c = n.n.entries[name]; c == nil {
			return syscall.ENOENT
		}
		return 0
	})
	if errno != 0 {
		return nil, errno
	}
	return n.child(ctx, c, out), 0
}

func (n *fnode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	errno, _ := n.fs.do(opRead, nil, func() syscall.Errno {
		fillAttr(n.n, &out.Attr)
		return 0
	})
	return errno
}

func (n *fnode) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	op := opRead
	size, resize := in.GetSize()
	if resize {
		op = OpTruncate
	}
	errno, _ := n.fs.do(op, n.path, func() syscall.Errno {
		if resize {
			if n.n.dir {
				return syscall.EISDIR
			}
			n.n.truncate(int64(size))
		}
		if m, ok := in.GetMode(); ok {
			n.n.perm = m & 0o7777
		}
		fillAttr(n.n, &out.Attr)
		return 0
	})
	return errno
}

func (n *fnode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	op := opRead
	if flags&syscall.O_TRUNC != 0 {
		op = OpTruncate
	}
	errno, _ := n.fs.do(op, n.path, func() syscall.Errno {
		if flags&syscall.O_TRUNC != 0 && !n.n.dir {
			n.n.truncate(0)
		}
		return 0
	})
	// No handle: the node's methods serve reads and writes. Direct I/O
	// keeps the kernel from caching file data between operations.
	return nil, fuse.FOPEN_DIRECT_IO, errno
}

func (n *fnode) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var got int
	errno, _ := n.fs.do(opRead, nil, func() syscall.Errno {
		got = n.n.read(dest, off)
		return 0
	})
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(dest[:got]), 0
}

func (n *fnode) Write(ctx context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	errno, _ := n.fs.do(OpWrite, n.path, func() syscall.Errno {
		if n.n.dir {
			return syscall.EISDIR
		}
		n.n.write(data, off)
		n.fs.writes++
		n.fs.written += int64(len(data))
		return 0
	})
	if errno != 0 {
		return 0, errno
	}
	return uint32(len(data)), 0
}

// Fsync serves fsync and fdatasync of files and directories alike: both
// make a file's data and size durable, which is all a file holds here.
func (n *fnode) Fsync(ctx context.Context, _ fs.FileHandle, flags uint32) syscall.Errno {
	op := OpFsync
	if n.n.dir {
		op = OpFsyncDir
	}
	errno, _ := n.fs.do(op, n.path, func() syscall.Errno {
		n.fs.synced(n.n)
		return 0
	})
	return errno
}

// Flush is a close: it makes nothing durable.
func (n *fnode) Flush(ctx context.Context, _ fs.FileHandle) syscall.Errno { return 0 }

// Allocate extends the file with zeros (fallocate); with
// FALLOC_FL_KEEP_SIZE (as pebble preallocates) it does nothing, since
// nothing here runs out of space.
func (n *fnode) Allocate(ctx context.Context, _ fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	const keepSize = 0x1
	if mode&^keepSize != 0 {
		return syscall.EOPNOTSUPP
	}
	errno, _ := n.fs.do(OpTruncate, n.path, func() syscall.Errno {
		if end := int64(off + size); mode&keepSize == 0 && end > n.n.size {
			n.n.truncate(end)
		}
		return 0
	})
	return errno
}

func (n *fnode) Create(ctx context.Context, name string, flags, perm uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	var c *node
	errno, _ := n.fs.do(OpCreate, n.childPath(name), func() syscall.Errno {
		if c = n.n.entries[name]; c != nil {
			switch {
			case flags&syscall.O_EXCL != 0:
				return syscall.EEXIST
			case c.dir:
				return syscall.EISDIR
			case flags&syscall.O_TRUNC != 0:
				c.truncate(0)
			}
			return 0
		}
		c = newFile(n.fs.newIno(), perm&0o7777)
		n.fs.seq++
		n.fs.changeDir(n.n, n.fs.seq, name, c)
		return 0
	})
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return n.child(ctx, c, out), nil, fuse.FOPEN_DIRECT_IO, 0
}

func (n *fnode) Mkdir(ctx context.Context, name string, perm uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var c *node
	errno, _ := n.fs.do(OpCreate, n.childPath(name), func() syscall.Errno {
		if n.n.entries[name] != nil {
			return syscall.EEXIST
		}
		c = newDir(n.fs.newIno(), perm&0o7777)
		n.fs.seq++
		n.fs.changeDir(n.n, n.fs.seq, name, c)
		return 0
	})
	if errno != 0 {
		return nil, errno
	}
	return n.child(ctx, c, out), 0
}

func (n *fnode) remove(name string, dir bool) syscall.Errno {
	errno, _ := n.fs.do(OpRemove, n.childPath(name), func() syscall.Errno {
		c := n.n.entries[name]
		switch {
		case c == nil:
			return syscall.ENOENT
		case dir && !c.dir:
			return syscall.ENOTDIR
		case !dir && c.dir:
			return syscall.EISDIR
		case dir && len(c.entries) > 0:
			return syscall.ENOTEMPTY
		}
		n.fs.seq++
		n.fs.changeDir(n.n, n.fs.seq, name, nil)
		return 0
	})
	return errno
}

func (n *fnode) Unlink(ctx context.Context, name string) syscall.Errno { return n.remove(name, false) }

func (n *fnode) Rmdir(ctx context.Context, name string) syscall.Errno { return n.remove(name, true) }

// Rename moves an entry, replacing what the new name held. The two
// directory changes share one number, so a journal keeps both or neither.
func (n *fnode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to, ok := newParent.(*fnode)
	if !ok {
		return syscall.EXDEV
	}
	const noReplace = 0x1
	if flags&^noReplace != 0 {
		return syscall.EINVAL // RENAME_EXCHANGE and RENAME_WHITEOUT are not needed
	}
	errno, _ := n.fs.do(OpRename, to.childPath(newName), func() syscall.Errno {
		c := n.n.entries[name]
		if c == nil {
			return syscall.ENOENT
		}
		if old := to.n.entries[newName]; old != nil {
			switch {
			case old == c:
				return 0
			case flags&noReplace != 0:
				return syscall.EEXIST
			case c.dir && !old.dir:
				return syscall.ENOTDIR
			case !c.dir && old.dir:
				return syscall.EISDIR
			case old.dir && len(old.entries) > 0:
				return syscall.ENOTEMPTY
			}
		}
		n.fs.seq++
		n.fs.changeDir(n.n, n.fs.seq, name, nil)
		n.fs.changeDir(to.n, n.fs.seq, newName, c)
		return 0
	})
	return errno
}

func (n *fnode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	var list []fuse.DirEntry
	errno, _ := n.fs.do(opRead, nil, func() syscall.Errno {
		for name, c := range n.n.entries {
			list = append(list, fuse.DirEntry{Name: name, Mode: mode(c), Ino: c.ino})
		}
		return 0
	})
	if errno != 0 {
		return nil, errno
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return fs.NewListDirStream(list), 0
}

// Statfs reports a large, empty disk: programs that check free space
// (pebble does) find room.
func (n *fnode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 26 // 256 GiB
	out.Blocks, out.Bfree, out.Bavail = blocks, blocks, blocks
	out.Files, out.Ffree = 1<<20, 1<<20
	out.Bsize, out.Frsize, out.NameLen = pageSize, pageSize, 255
	return 0
}

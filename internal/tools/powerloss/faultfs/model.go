// Package faultfs is a FUSE file system, held in memory, that loses on a
// simulated power loss what its writers did not make durable: file data
// not fsynced (or fdatasynced) and directory changes (creates, renames,
// removals) whose directory was not fsynced. Every file and directory
// keeps two states, what its writers see and what has been synced; a power
// loss freezes every operation, and Restore then replaces the tree with
// what a disk could hold after the loss (Loss says which of the unsynced
// changes survive: none, all, some pages, a torn last write, ...), as if
// the machine had rebooted.
//
// A process writes through it as through any file system (the kernel's
// FUSE module forwards every write, fsync and rename to this process), so
// what is tested is the program's real file handling, down to the system
// calls. It plays the part LazyFS (https://github.com/dsrhaslab/lazyfs)
// plays for C programs, and is stricter about directories: LazyFS applies
// them at once.
package faultfs

import (
	"maps"
	"sort"
	"time"
)

// pageSize is the page of the page cache: data reaches the disk in pages,
// in any order, so a power loss can keep some of a write's pages and not
// others. sectorSize is what a disk writes at once: a page can be torn at
// a sector boundary.
const (
	pageSize   = 4096
	sectorSize = 512
)

type page [pageSize]byte

// node is a file or a directory, as its writers see it (pages, size,
// entries) and as last synced (syncedPages, syncedSize, synced).
type node struct {
	ino   uint64
	dir   bool
	perm  uint32
	mtime time.Time

	// A regular file. A page absent from a map reads as zeros. The synced
	// map shares the pages it has in common with pages; a write copies a
	// shared page first (see writablePage).
	pages       map[int64]*page
	size        int64
	syncedPages map[int64]*page
	syncedSize  int64
	// dirty are the pages written or cut since the last sync.
	dirty map[int64]bool
	// lastWrite is the newest write since the last sync (zero length
	// when there was none): the write a power loss can tear.
	lastWrite span

	// A directory: its entries now, as last synced, and the changes since
	// that sync in order, each numbered in the file system's one sequence
	// of directory changes (a journal's order).
	entries map[string]*node
	synced  map[string]*node
	pending []dirChange
}

type span struct{ off, n int64 }

// dirChange sets name to target, or removes it (target nil). A rename is
// two changes with one number, in the two directories.
type dirChange struct {
	seq    uint64
	name   string
	target *node
}

func newFile(ino uint64, perm uint32) *node {
	return &node{ino: ino, perm: perm, mtime: time.Now(),
		pages: map[int64]*page{}, syncedPages: map[int64]*page{}, dirty: map[int64]bool{}}
}

func newDir(ino uint64, perm uint32) *node {
	return &node{ino: ino, dir: true, perm: perm, mtime: time.Now(),
		entries: map[string]*node{}, synced: map[string]*node{}}
}

// read copies the file's bytes at off into dest and returns how many there
// were (fewer at the end of the file).
func (n *node) read(dest []byte, off int64) int {
	if off >= n.size {
		return 0
	}
	end := min(off+int64(len(dest)), n.size)
	for pos := off; pos < end; {
		idx, at := pos/pageSize, pos%pageSize
		chunk := min(end-pos, pageSize-at)
		out := dest[pos-off : pos-off+chunk]
		if p := n.pages[idx]; p != nil {
			copy(out, p[at:at+chunk])
		} else {
			clear(out)
		}
		pos += chunk
	}
	return int(end - off)
}

// writablePage returns page idx for writing: a page of its own, not the
// one the synced state holds.
func (n *node) writablePage(idx int64) *page {
	p := n.pages[idx]
	if p != nil && p != n.syncedPages[idx] {
		return p
	}
	fresh := new(page)
	if p != nil {
		*fresh = *p
	}
	n.pages[idx] = fresh
	return fresh
}

// write writes data at off, extending the file when it ends past it.
// Zeros written where no page is stay unstored: commit logs fill their
// segments with zeros ahead of use.
func (n *node) write(data []byte, off int64) {
	for pos, end := off, off+int64(len(data)); pos < end; {
		idx, at := pos/pageSize, pos%pageSize
		chunk := min(end-pos, pageSize-at)
		in := data[pos-off : pos-off+chunk]
		if n.pages[idx] != nil || !allZero(in) {
			copy(n.writablePage(idx)[at:at+chunk], in)
		}
		n.dirty[idx] = true
		pos += chunk
	}
	n.size = max(n.size, off+int64(len(data)))
	n.lastWrite = span{off, int64(len(data))}
	n.mtime = time.Now()
}

// truncate sets the file's size: bytes past it are gone, and read as zeros
// if the file grows again.
func (n *node) truncate(size int64) {
	if size < n.size {
		for idx := range n.pages {
			if idx*pageSize >= size {
				delete(n.pages, idx)
				n.dirty[idx] = true
			}
		}
		if at := size % pageSize; at != 0 && n.pages[size/pageSize] != nil {
			clear(n.writablePage(size / pageSize)[at:])
			n.dirty[size/pageSize] = true
		}
	}
	n.size = size
	n.mtime = time.Now()
}

// sync makes the file's data and size, or the directory's entries,
// durable (fsync, fdatasync).
func (n *node) sync() {
	if n.dir {
		n.synced = maps.Clone(n.entries)
		n.pending = nil
		return
	}
	for idx := range n.dirty {
		if p := n.pages[idx]; p != nil {
			n.syncedPages[idx] = p
		} else {
			delete(n.syncedPages, idx)
		}
	}
	clear(n.dirty)
	n.syncedSize = n.size
	n.lastWrite = span{}
}

// clip drops the data past the file's size (after a power loss chose a
// smaller one), copying the last page rather than changing it.
func (n *node) clip() {
	for idx := range n.pages {
		if idx*pageSize >= n.size {
			delete(n.pages, idx)
		}
	}
	idx, at := n.size/pageSize, n.size%pageSize
	if p := n.pages[idx]; p != nil && at != 0 {
		cut := *p
		clear(cut[at:])
		n.pages[idx] = &cut
	}
}

// settle makes the file's state as it is its synced state, as a reboot
// finds it.
func (n *node) settle() {
	n.syncedPages = maps.Clone(n.pages)
	n.syncedSize = n.size
	clear(n.dirty)
	n.lastWrite = span{}
}

// unsynced reports whether the file or directory has changes a power loss
// can take.
func (n *node) unsynced() bool {
	if n.dir {
		return len(n.pending) > 0
	}
	return len(n.dirty) > 0 || n.size != n.syncedSize
}

// dirtyPages returns the file's dirty page numbers in order.
func (n *node) dirtyPages() []int64 {
	idx := make([]int64, 0, len(n.dirty))
	for i := range n.dirty {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	return idx
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

package faultfs

import (
	"fmt"
	"maps"
	"math/rand/v2"
)

// DataLoss is what a power loss does to file data written and not synced.
type DataLoss int

const (
	// DropUnsynced loses every unsynced write and size change, as LazyFS's
	// clear-cache does.
	DropUnsynced DataLoss = iota
	// KeepUnsynced keeps them all: the kernel had written everything back
	// (a crash of the program alone looks like this).
	KeepUnsynced
	// KeepSomePages keeps each unsynced page with even odds: the page
	// cache writes pages back in no particular order.
	KeepSomePages
	// KeepFirstPages keeps the unsynced pages before a random one, in file
	// order: writeback stopped part way.
	KeepFirstPages
	// TearLastWrite keeps each 512-byte sector of each file's newest
	// unsynced write with even odds, and no other unsynced data: the disk
	// lost power in the middle of the write.
	TearLastWrite
	// KeepSizesOnly keeps the files' new sizes and none of their unsynced
	// data: the metadata was journaled, the data never written, so what a
	// file grew by reads as zeros (ext4's data=writeback, XFS).
	KeepSizesOnly
	dataLosses
)

// DirLoss is what a power loss does to directory changes (creates,
// renames, removals) not synced.
type DirLoss int

const (
	// KeepSyncedDirs keeps only the directory changes whose directory was
	// fsynced afterwards, the least POSIX promises.
	KeepSyncedDirs DirLoss = iota
	// KeepJournaledDirs keeps the directory changes up to a random point
	// after the last fsync of anything, in the order they were made: a
	// journaling file system (ext4, XFS) commits every change before an
	// fsync, and later ones in order.
	KeepJournaledDirs
	// KeepAllDirs keeps every directory change, as LazyFS does.
	KeepAllDirs
	dirLosses
)

// Loss is what a power loss loses.
type Loss struct {
	Data DataLoss
	Dirs DirLoss
}

// DataLosses and DirLosses list every kind, for callers that choose one.
func DataLosses() []DataLoss {
	out := make([]DataLoss, dataLosses)
	for i := range out {
		out[i] = DataLoss(i)
	}
	return out
}

func DirLosses() []DirLoss {
	out := make([]DirLoss, dirLosses)
	for i := range out {
		out[i] = DirLoss(i)
	}
	return out
}

func (d DataLoss) String() string {
	switch d {
	case DropUnsynced:
		return "unsynced data dropped"
	case KeepUnsynced:
		return "unsynced data kept"
	case KeepSomePages:
		return "some unsynced pages kept"
	case KeepFirstPages:
		return "the first unsynced pages of each file kept"
	case TearLastWrite:
		return "the last unsynced write torn"
	case KeepSizesOnly:
		return "new file sizes kept, unsynced data zeros"
	}
	return fmt.Sprintf("DataLoss(%d)", int(d))
}

func (d DirLoss) String() string {
	switch d {
	case KeepSyncedDirs:
		return "directory changes kept only where fsynced"
	case KeepJournaledDirs:
		return "directory changes kept in journal order"
	case KeepAllDirs:
		return "all directory changes kept"
	}
	return fmt.Sprintf("DirLoss(%d)", int(d))
}

func (l Loss) String() string { return l.Data.String() + "; " + l.Dirs.String() }

// Report counts what a power loss took.
type Report struct {
	// Files and directories that had unsynced changes.
	Files, Dirs int
	// Pages of unsynced data, and how many of them the loss kept (a torn
	// page counts as kept).
	Pages, PagesKept int
	// Directory changes not synced, and how many the loss kept.
	DirChanges, DirChangesKept int
}

func (r Report) String() string {
	return fmt.Sprintf("%d files with unsynced data (%d of %d pages kept), %d directories with unsynced changes (%d of %d changes kept)",
		r.Files, r.PagesKept, r.Pages, r.Dirs, r.DirChangesKept, r.DirChanges)
}

// imager builds the tree a power loss leaves: for each node reachable
// through the directory entries that survive, its surviving state, synced.
type imager struct {
	loss   Loss
	rng    *rand.Rand
	cut    uint64 // directory changes up to this number survive (KeepJournaledDirs)
	done   map[*node]*node
	report Report
}

func (im *imager) node(n *node) *node {
	if out, ok := im.done[n]; ok {
		return out
	}
	if n.dir {
		return im.dir(n)
	}
	return im.file(n)
}

func (im *imager) dir(n *node) *node {
	out := newDir(n.ino, n.perm)
	out.mtime = n.mtime
	im.done[n] = out
	var entries map[string]*node
	switch im.loss.Dirs {
	case KeepAllDirs:
		entries = n.entries
		im.report.DirChangesKept += len(n.pending)
	default:
		entries = maps.Clone(n.synced)
		for _, c := range n.pending {
			if im.loss.Dirs == KeepJournaledDirs && c.seq <= im.cut {
				im.report.DirChangesKept++
				if c.target == nil {
					delete(entries, c.name)
				} else {
					entries[c.name] = c.target
				}
			}
		}
	}
	if len(n.pending) > 0 {
		im.report.Dirs++
		im.report.DirChanges += len(n.pending)
	}
	for name, child := range entries {
		if seen, ok := im.done[child]; ok && seen.dir {
			// A directory reached twice (partly applied renames): a
			// directory has one parent, so the second entry is dropped.
			continue
		}
		c := im.node(child)
		out.entries[name] = c
	}
	out.synced = maps.Clone(out.entries)
	return out
}

func (im *imager) file(n *node) *node {
	out := newFile(n.ino, n.perm)
	out.mtime = n.mtime
	im.done[n] = out
	dirty := n.dirtyPages()
	if n.unsynced() {
		im.report.Files++
		im.report.Pages += len(dirty)
	}
	out.pages, out.size = maps.Clone(n.syncedPages), n.syncedSize
	switch im.loss.Data {
	case KeepUnsynced:
		out.pages, out.size = maps.Clone(n.pages), n.size
		im.report.PagesKept += len(dirty)
	case KeepSomePages, KeepFirstPages:
		var kept []int64
		if im.loss.Data == KeepSomePages {
			for _, idx := range dirty {
				if im.rng.IntN(2) == 0 {
					kept = append(kept, idx)
				}
			}
		} else if len(dirty) > 0 {
			kept = dirty[:im.rng.IntN(len(dirty)+1)]
		}
		end := int64(0)
		for _, idx := range kept {
			if p := n.pages[idx]; p != nil {
				out.pages[idx] = p
			} else {
				delete(out.pages, idx)
			}
			end = (idx + 1) * pageSize
		}
		im.report.PagesKept += len(kept)
		switch {
		case n.size >= n.syncedSize && end > n.syncedSize:
			// The size grew with the pages written back.
			out.size = min(n.size, end)
		case n.size < n.syncedSize && im.rng.IntN(2) == 0:
			out.size = n.size
		}
	case TearLastWrite:
		w := n.lastWrite
		end := int64(0)
		out.syncedPages = maps.Clone(out.pages) // so that the writes below copy the pages they change
		for pos := w.off - w.off%sectorSize; pos < w.off+w.n; pos += sectorSize {
			if im.rng.IntN(2) != 0 {
				continue
			}
			from, to := max(pos, w.off), min(pos+sectorSize, w.off+w.n, n.size)
			if from >= to {
				continue
			}
			buf := make([]byte, to-from)
			n.read(buf, from)
			out.write(buf, from)
			end = max(end, to)
		}
		if end > 0 {
			im.report.PagesKept++
		}
		out.size = max(n.syncedSize, end)
	case KeepSizesOnly:
		out.size = n.size
	}
	out.clip()
	out.settle()
	return out
}

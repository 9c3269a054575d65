package faultfs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Op is a kind of file system operation, for triggers.
type Op int

const (
	OpAny      Op = iota // every operation, reads and lookups included
	OpWrite              // a write to a file
	OpFsync              // fsync or fdatasync of a file
	OpFsyncDir           // fsync of a directory
	OpCreate             // a file or directory created
	OpRename             // a rename
	OpRemove             // a file or directory removed
	OpTruncate           // a file's size set
	opRead               // lookups, reads, attributes, listings: only OpAny matches them
)

func (o Op) String() string {
	switch o {
	case OpAny:
		return "operation"
	case OpWrite:
		return "write"
	case OpFsync:
		return "fsync"
	case OpFsyncDir:
		return "directory fsync"
	case OpCreate:
		return "create"
	case OpRename:
		return "rename"
	case OpRemove:
		return "remove"
	case OpTruncate:
		return "truncate"
	}
	return "read"
}

// Trigger cuts the power at an operation: the Nth one of kind Op (counted
// from Arm) whose path, relative to the mount point, matches Path (every
// path when nil; for a rename the new path). Before cuts it before the
// operation takes effect, else after (and before its caller hears of it).
// With Then, that operation cuts nothing but arms Then, which counts from
// there: "the first writes after a segment switch".
type Trigger struct {
	Op     Op
	Path   *regexp.Regexp
	Before bool
	Nth    int
	Then   *Trigger
}

func (t Trigger) String() string {
	when := "after"
	if t.Before {
		when = "before"
	}
	where := ""
	if t.Path != nil {
		where = " on " + t.Path.String()
	}
	s := fmt.Sprintf("%s the %s #%d%s", when, t.Op, t.Nth, where)
	if t.Then != nil {
		s += ", then " + t.Then.String()
	}
	return s
}

// FS is the file system. Mount it, let a program write through it, cut
// the power (CutPower or an armed Trigger), stop the program, Release the
// operations the loss froze, Unmount, Restore, and Mount again.
type FS struct {
	mu      sync.Mutex
	root    *node
	nextIno uint64
	// seq numbers directory changes; every fsync makes those up to it
	// durable in journal order (journaled).
	seq, journaled uint64

	trigger *Trigger
	matched int
	armed   string // the trigger as armed, chain and all, for the cause

	// down: the power is off. Every operation then waits for released and
	// fails with EIO, so that nothing the program does after the loss
	// reaches the tree. lost is closed when the power goes off.
	down     bool
	cause    string
	lost     chan struct{}
	released chan struct{}

	server *fuse.Server

	// Operations served, for figures, and the slowest since Restore (its
	// wait for the lock included).
	ops, writes, fsyncs int64
	slowest             time.Duration
	slowestOp           Op
	written             int64
}

// New returns an empty file system.
func New() *FS {
	f := &FS{nextIno: 2}
	f.root = newDir(1, 0o755)
	f.powerOn()
	return f
}

func (f *FS) powerOn() {
	f.down, f.cause = false, ""
	f.trigger, f.matched = nil, 0
	f.lost, f.released = make(chan struct{}), make(chan struct{})
}

// Mount mounts the file system on dir (which must exist). It needs
// /dev/fuse and the right to mount (root, or fusermount3 when not root).
func (f *FS) Mount(dir string) error {
	f.mu.Lock()
	root := &fnode{fs: f, n: f.root}
	f.mu.Unlock()
	// Entries and attributes are not cached by the kernel: the tree is
	// replaced between mounts, and every lookup is an operation a
	// trigger may count.
	zero := time.Duration(0)
	server, err := fs.Mount(dir, root, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		RootStableAttr: &fs.StableAttr{Ino: 1, Mode: syscall.S_IFDIR},
		MountOptions: fuse.MountOptions{
			FsName: "faultfs", Name: "faultfs",
			// The mount syscall itself when root, else fusermount3.
			DirectMount: syscall.Geteuid() == 0,
			MaxWrite:    512 << 10,
		},
	})
	if err != nil {
		return fmt.Errorf("faultfs: mount %s: %w", dir, err)
	}
	f.server = server
	return nil
}

// Unmount unmounts it; the processes that had files open must have ended.
func (f *FS) Unmount() error {
	if f.server == nil {
		return nil
	}
	var err error
	for try := 0; try < 50; try++ {
		if err = f.server.Unmount(); err == nil {
			f.server = nil
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("faultfs: unmount: %w", err)
}

// Arm sets the trigger that will cut the power (replacing any other).
func (f *FS) Arm(t Trigger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trigger, f.matched, f.armed = &t, 0, t.String()
}

// Disarm removes the trigger.
func (f *FS) Disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trigger = nil
}

// CutPower cuts the power now, unless it is already off.
func (f *FS) CutPower(cause string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut(cause)
}

func (f *FS) cut(cause string) {
	if f.down {
		return
	}
	f.down, f.cause = true, cause
	close(f.lost)
}

// Lost is closed once the power is off; Cause then says what cut it.
func (f *FS) Lost() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lost
}

func (f *FS) Cause() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cause
}

// Release lets the operations frozen by the power loss fail (EIO), and
// every later one, until Restore: call it once the program is stopped, so
// that the kernel can close its files and the mount can go.
func (f *FS) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		select {
		case <-f.released:
		default:
			close(f.released)
		}
	}
}

// ErrMounted: Restore needs the file system unmounted.
var ErrMounted = errors.New("faultfs: restore while mounted")

// Restore replaces the tree with what the power loss leaves of it, as loss
// says (rng draws what survives), and turns the power back on. The power
// must have been cut, and the file system unmounted.
func (f *FS) Restore(loss Loss, rng *rand.Rand) (Report, error) {
	if f.server != nil {
		return Report{}, ErrMounted
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.down {
		return Report{}, errors.New("faultfs: restore while the power is on")
	}
	im := &imager{loss: loss, rng: rng, cut: f.journaled, done: map[*node]*node{}}
	if f.seq > f.journaled {
		im.cut += rng.Uint64N(f.seq - f.journaled + 1)
	}
	f.root = im.dir(f.root)
	f.journaled = f.seq
	f.slowest = 0
	f.powerOn()
	return im.report, nil
}

// Ops returns the operations served so far, all kinds counted.
func (f *FS) Ops() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// Slowest returns the slowest operation since the last Restore, and its
// kind.
func (f *FS) Slowest() (time.Duration, Op) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.slowest, f.slowestOp
}

// Figures returns the writes, bytes written and fsyncs served so far.
func (f *FS) Figures() (writes, written, fsyncs int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, f.written, f.fsyncs
}

// begin starts an operation: it takes the lock, or, with the power off,
// waits for Release and returns false (the operation fails with EIO).
func (f *FS) begin() bool {
	f.mu.Lock()
	if !f.down {
		return true
	}
	released := f.released
	f.mu.Unlock()
	<-released
	return false
}

// fire counts the operation against the trigger (before or after it took
// effect) and cuts the power when it is the one. Then it gives up the lock,
// waits for Release and returns true: the operation fails with EIO. path
// is nil for operations no trigger names a path of (reads).
func (f *FS) fire(op Op, before bool, path func() string) bool {
	t := f.trigger
	if t == nil || t.Before != before || (t.Op != OpAny && t.Op != op) {
		return false
	}
	where := ""
	if path != nil {
		where = path()
	}
	if t.Path != nil && (path == nil || !t.Path.MatchString(where)) {
		return false
	}
	f.matched++
	if f.matched < t.Nth {
		return false
	}
	if t.Then != nil {
		f.trigger, f.matched = t.Then, 0
		return false
	}
	cause := f.armed
	if where != "" {
		cause += ": " + where
	}
	f.cut(cause)
	released := f.released
	f.mu.Unlock()
	<-released
	return true
}

// do runs change as operation op on path under the lock, with the
// trigger counted around it; false when the power was lost first (the
// caller answers EIO). An error from change is returned as is.
func (f *FS) do(op Op, path func() string, change func() syscall.Errno) (syscall.Errno, bool) {
	began := time.Now()
	if !f.begin() {
		return syscall.EIO, false
	}
	f.ops++
	if f.fire(op, true, path) {
		return syscall.EIO, false
	}
	errno := change()
	if errno == 0 && f.fire(op, false, path) {
		return syscall.EIO, false
	}
	if took := time.Since(began); took > f.slowest {
		f.slowest, f.slowestOp = took, op
	}
	f.mu.Unlock()
	return errno, true
}

func (f *FS) newIno() uint64 {
	f.nextIno++
	return f.nextIno
}

// changeDir records a change of directory d (name set to target, or
// removed) with the number seq.
func (f *FS) changeDir(d *node, seq uint64, name string, target *node) {
	if target == nil {
		delete(d.entries, name)
	} else {
		d.entries[name] = target
	}
	d.pending = append(d.pending, dirChange{seq: seq, name: name, target: target})
	d.mtime = time.Now()
}

// synced records an fsync of n: its own state, and, for the journal,
// every directory change so far.
func (f *FS) synced(n *node) {
	n.sync()
	f.journaled = f.seq
	f.fsyncs++
}

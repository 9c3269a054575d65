package main

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"tvsm/internal/tools/powerloss/faultfs"
)

// A point is where in the node's work a cycle cuts the power: at the Nth
// operation of a kind on some files (N drawn from 1 to most), or after the
// cycle's load time (trigger nil), or during the restart after the loss.
type point struct {
	name     string
	trigger  *faultfs.Trigger
	most     int
	thenMost int // for a trigger with Then, N of the second operation is drawn up to it
	// recovery: the power goes at a random time of the load, then again
	// during the restart, at an operation drawn among those a start makes.
	recovery bool
	// stop: the node is stopped (SIGTERM) after a short load, and the
	// power cut while it stops (a node writes its snapshots then), or
	// once it has stopped.
	stop bool
}

// Paths on the mount: the node's data directory is data/.
const (
	commitLog = `^data/events/commitlog/`
	eventsDir = `^data/events/`
)

func on(op faultfs.Op, path string, before bool) *faultfs.Trigger {
	t := &faultfs.Trigger{Op: op, Before: before}
	if path != "" {
		t.Path = regexp.MustCompile(path)
	}
	return t
}

// then chains second after first: first's operation arms second.
func then(first, second *faultfs.Trigger) *faultfs.Trigger {
	first.Then = second
	return first
}

// points are the places a cycle can cut the power.
var points = []point{
	{name: "during the load, at a random time"},
	{name: "before a commit log fsync", trigger: on(faultfs.OpFsync, commitLog, true), most: 400},
	{name: "after a commit log fsync, before the node hears of it", trigger: on(faultfs.OpFsync, commitLog, false), most: 400},
	{name: "before a commit log write", trigger: on(faultfs.OpWrite, commitLog, true), most: 400},
	{name: "when a commit log segment is created", trigger: on(faultfs.OpCreate, commitLog, false), most: 2},
	{name: "when a commit log segment is renamed (switched to or recycled)", trigger: on(faultfs.OpRename, commitLog, false), most: 2},
	{name: "at the first commit log writes to a segment just switched to", trigger: then(on(faultfs.OpRename, commitLog+`.*\.seg$`, false), on(faultfs.OpWrite, commitLog+`.*\.seg$`, false)), most: 2, thenMost: 6},
	{name: "while pebble writes an sstable of the event store", trigger: on(faultfs.OpWrite, eventsDir+`.*\.sst$`, true), most: 20},
	{name: "at an fsync of the event store's pebble manifest", trigger: on(faultfs.OpFsync, eventsDir+`MANIFEST`, true), most: 3},
	{name: "after a directory fsync", trigger: on(faultfs.OpFsyncDir, "", false), most: 10},
	{name: "when a file is removed", trigger: on(faultfs.OpRemove, "", false), most: 4},
	{name: "while the node stops, at a snapshot's fsync", trigger: on(faultfs.OpFsync, `\.snapshot`, true), most: 2, stop: true},
	{name: "while the node stops, when a snapshot is renamed into place", trigger: on(faultfs.OpRename, `\.snapshot$`, false), most: 2, stop: true},
	{name: "at an fsync of the subscribers' keys", trigger: on(faultfs.OpFsync, `^data/keys/`, true), most: 4},
	{name: "while the node recovers from a loss", recovery: true},
}

// fault is a cycle's point and what its loss keeps.
type fault struct {
	point point
	loss  faultfs.Loss
}

func (f fault) String() string { return fmt.Sprintf("%s; %s", f.point.name, f.loss) }

// plan draws the faults of n cycles: every point in turn (in an order of
// the seed's), with the kinds of data and directory loss taken in turn too,
// so that a run of a few cycles still mixes them.
func plan(n int, points []point, rng *rand.Rand) []fault {
	order := rng.Perm(len(points))
	datas, dirs := faultfs.DataLosses(), faultfs.DirLosses()
	d0, r0 := rng.IntN(len(datas)), rng.IntN(len(dirs))
	var out []fault
	for i := 0; len(out) < n; i++ {
		p := points[order[i%len(order)]]
		// Each pass over the points shifts the losses, so that a point
		// meets other losses in the next pass.
		k := len(out) + len(out)/len(points)
		out = append(out, fault{point: p, loss: faultfs.Loss{Data: datas[(d0+k)%len(datas)], Dirs: dirs[(r0+k)%len(dirs)]}})
	}
	return out
}

// trigger returns the cycle's trigger with its N drawn, or nil.
func (f fault) trigger(rng *rand.Rand) *faultfs.Trigger {
	if f.point.trigger == nil {
		return nil
	}
	t := *f.point.trigger
	t.Nth = 1 + rng.IntN(f.point.most)
	if t.Then != nil {
		next := *t.Then
		next.Nth = 1 + rng.IntN(f.point.thenMost)
		t.Then = &next
	}
	return &t
}

// choose returns the points whose name holds only (all of them for "").
func choose(only string) []point {
	var out []point
	for _, p := range points {
		if strings.Contains(p.name, only) {
			out = append(out, p)
		}
	}
	return out
}

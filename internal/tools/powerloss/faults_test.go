package main

import (
	"testing"

	"tvsm/internal/tools/powerloss/faultfs"
)

// A run of as many cycles as there are points cuts the power at each point
// once, and takes every kind of data and directory loss in turn.
func TestPlanCoversEveryPoint(t *testing.T) {
	for seed := range uint64(20) {
		// Given a seed; when a run of one cycle per point is planned.
		faults := plan(len(points), points, newRand(seed))
		// Then each point is there once.
		if len(faults) != len(points) {
			t.Fatalf("seed %d: %d faults, want %d", seed, len(faults), len(points))
		}
		seen := map[string]int{}
		datas := map[faultfs.DataLoss]int{}
		dirs := map[faultfs.DirLoss]int{}
		for _, f := range faults {
			seen[f.point.name]++
			datas[f.loss.Data]++
			dirs[f.loss.Dirs]++
		}
		for _, p := range points {
			if seen[p.name] != 1 {
				t.Errorf("seed %d: point %q planned %d times", seed, p.name, seen[p.name])
			}
		}
		// And the losses are spread: every kind, none more than its share
		// and one.
		for _, d := range faultfs.DataLosses() {
			if n := datas[d]; n < len(points)/len(faultfs.DataLosses()) || n > len(points)/len(faultfs.DataLosses())+1 {
				t.Errorf("seed %d: %v in %d cycles", seed, d, n)
			}
		}
		for _, d := range faultfs.DirLosses() {
			if n := dirs[d]; n < len(points)/len(faultfs.DirLosses()) || n > len(points)/len(faultfs.DirLosses())+1 {
				t.Errorf("seed %d: %v in %d cycles", seed, d, n)
			}
		}
	}
}

// A point's trigger is drawn from 1 to its most, and each cycle gets a
// trigger of its own.
func TestTriggerDrawsItsOperation(t *testing.T) {
	rng := newRand(1)
	for _, p := range points {
		f := fault{point: p}
		for range 50 {
			tr := f.trigger(rng)
			if p.trigger == nil {
				if tr != nil {
					t.Fatalf("%s: a trigger", p.name)
				}
				continue
			}
			if tr.Nth < 1 || tr.Nth > p.most {
				t.Fatalf("%s: operation #%d, want 1 to %d", p.name, tr.Nth, p.most)
			}
			if tr == p.trigger {
				t.Fatalf("%s: the point's own trigger handed out", p.name)
			}
			if p.trigger.Then != nil && (tr.Then == p.trigger.Then || tr.Then.Nth < 1 || tr.Then.Nth > p.thenMost) {
				t.Fatalf("%s: then operation #%d, want 1 to %d, of its own", p.name, tr.Then.Nth, p.thenMost)
			}
		}
	}
}

// Over several passes each point meets other losses: 40 cycles of 15
// points draw 40 different faults.
func TestPlanVariesTheLossesAcrossPasses(t *testing.T) {
	faults := plan(40, points, newRand(7))
	kinds := map[string]bool{}
	for _, f := range faults {
		kinds[f.String()] = true
	}
	if len(kinds) != 40 {
		t.Errorf("40 cycles drew %d different faults, want 40", len(kinds))
	}
}

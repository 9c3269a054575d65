package app

import (
	"fmt"
	"testing"
)

func TestStateCacheEvictsWhatWasNotUsedSinceTheHandPassed(t *testing.T) {
	c := newStateCache(3)
	put := func(stream string, rev uint64) { c.put(stream, snapshot{state: stream, exists: true, rev: rev}) }
	for i := range 3 {
		put(fmt.Sprint("s", i), 1)
	}
	c.get("s0") // s0 is spared once; s1, not used since it was put, goes first
	put("s3", 1)
	put("s4", 1) // evicts s2
	if c.len() != 3 {
		t.Fatalf("len %d, want 3", c.len())
	}
	for stream, want := range map[string]bool{"s0": true, "s1": false, "s2": false, "s3": true, "s4": true} {
		snap, ok := c.get(stream)
		if ok != want || (ok && snap.state != stream) {
			t.Errorf("get(%s) = %v, %v; want present %v holding its own state", stream, snap.state, ok, want)
		}
	}
	// An older revision never replaces a newer one.
	put("s3", 5)
	put("s3", 4)
	if snap, _ := c.get("s3"); snap.rev != 5 {
		t.Fatalf("rev %d after an older put, want 5", snap.rev)
	}
	c.drop("s3")
	if _, ok := c.get("s3"); ok || c.len() != 2 {
		t.Fatalf("s3 still cached after drop (len %d)", c.len())
	}
}

func TestStateCacheKeepsAStreamInUseAmongOneOffs(t *testing.T) {
	c := newStateCache(10)
	put := func(stream string) { c.put(stream, snapshot{state: stream, exists: true, rev: 1}) }
	put("hot")
	for i := range 1000 {
		put(fmt.Sprint("once-", i))
		if _, ok := c.get("hot"); !ok {
			t.Fatalf("the stream used between every put was evicted after %d puts", i+1)
		}
		if c.len() > 10 {
			t.Fatalf("len %d > max 10", c.len())
		}
	}
	// A dropped stream's slot is reused: the cache stays at its bound.
	c.drop("hot")
	put("again")
	if _, ok := c.get("again"); !ok || c.len() != 10 {
		t.Fatalf("after drop and put: again cached %v, len %d; want true, 10", ok, c.len())
	}
}

package app

import (
	"fmt"
	"testing"
)

func TestStateCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	c := newStateCache(3)
	put := func(stream string, rev uint64) { c.put(stream, snapshot{state: stream, exists: true, rev: rev}) }
	for i := range 3 {
		put(fmt.Sprint("s", i), 1)
	}
	c.get("s0") // s1 is now the least recently used
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

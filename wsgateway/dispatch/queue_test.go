package dispatch

import "testing"

func TestDropQueueNeverBlocks(t *testing.T) {
	q := newDropQueue[int](2)
	if !q.offer(1) || !q.offer(2) {
		t.Fatal("offer refused below the bound")
	}
	if q.offer(3) {
		t.Fatal("offer accepted beyond the bound")
	}
	q.close()
	q.close() // twice is fine
	if q.offer(4) {
		t.Fatal("offer accepted after close")
	}
	var got []int
	for v := range q.ch {
		got = append(got, v)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("drained %v", got)
	}
}

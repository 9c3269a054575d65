package clickhouse

import "testing"

func TestCollectorKeepsOrder(t *testing.T) {
	for _, n := range []int{0, 1, firstChunk, firstChunk + 1, 3*maxChunk + 5} {
		var c collector[int]
		for i := range n {
			c.add(i)
		}
		got := c.all()
		if len(got) != n {
			t.Fatalf("n=%d: %d back", n, len(got))
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("n=%d: element %d is %d", n, i, v)
			}
		}
	}
}

package clickhouse

// collector gathers a long answer in chunks and joins them once: appending
// to one slice copies it at every growth, which cost more than scanning in
// SubscriptionDays' benchmark (109,600 rows).
type collector[T any] struct {
	chunks [][]T
	n      int
}

// Chunks start small, for short answers, and grow to maxChunk.
const (
	firstChunk = 64
	maxChunk   = 8192
)

func (c *collector[T]) add(v T) {
	last := len(c.chunks) - 1
	if last < 0 || len(c.chunks[last]) == cap(c.chunks[last]) {
		size := firstChunk
		if last >= 0 {
			size = min(2*cap(c.chunks[last]), maxChunk)
		}
		c.chunks = append(c.chunks, make([]T, 0, size))
		last++
	}
	c.chunks[last] = append(c.chunks[last], v)
	c.n++
}

// all returns everything added, in order; nil when nothing was.
func (c *collector[T]) all() []T {
	if c.n == 0 {
		return nil
	}
	if len(c.chunks) == 1 {
		return c.chunks[0]
	}
	out := make([]T, 0, c.n)
	for _, chunk := range c.chunks {
		out = append(out, chunk...)
	}
	return out
}

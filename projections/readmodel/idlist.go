package readmodel

import (
	"iter"
	"slices"
)

// chunkMax is the most entries one chunk of an idList holds.
const chunkMax = 512

// entry is an id with its value in an idList.
type entry[V any] struct {
	id int64
	v  V
}

// idList is a map from ids to values kept in ascending id order, in chunks
// of at most chunkMax entries. Inserting or removing an id moves at most
// chunkMax entries (a plain sorted slice of a million would move megabytes
// per delete), and the n-th entry is found by skipping whole chunks, which
// is what paging in id order needs. Ids mostly arrive in increasing order
// (they are allocated so); those are appended to the last chunk.
//
// The account lists hold the records themselves, so that walking them
// needs no map lookup per row; the subscription and device lists hold
// nothing (V is struct{}) and are resolved through the state's maps.
//
// The zero idList is empty and ready to use. It is not safe for concurrent
// use; the Model's lock guards it.
type idList[V any] struct {
	chunks [][]entry[V] // each non-empty and ascending; chunk i's ids < chunk i+1's
	n      int
}

// Len returns the number of entries.
func (l *idList[V]) Len() int { return l.n }

// chunkFor returns the index of the chunk id belongs in: the first chunk
// whose last id is >= id, or the last chunk.
func (l *idList[V]) chunkFor(id int64) int {
	i, _ := slices.BinarySearchFunc(l.chunks, id, func(c []entry[V], id int64) int {
		last := c[len(c)-1].id
		switch {
		case last < id:
			return -1
		case last > id:
			return 1
		}
		return 0
	})
	return min(i, len(l.chunks)-1)
}

func searchChunk[V any](c []entry[V], id int64) (int, bool) {
	return slices.BinarySearchFunc(c, id, func(e entry[V], id int64) int {
		switch {
		case e.id < id:
			return -1
		case e.id > id:
			return 1
		}
		return 0
	})
}

// Set sets id's value, inserting id when it is not there; it reports
// whether it inserted.
func (l *idList[V]) Set(id int64, v V) bool {
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, newChunk(id, v))
		l.n++
		return true
	}
	last := l.chunks[len(l.chunks)-1]
	if id > last[len(last)-1].id { // the usual case
		if len(last) < chunkMax {
			l.chunks[len(l.chunks)-1] = append(last, entry[V]{id, v})
		} else {
			l.chunks = append(l.chunks, newChunk(id, v))
		}
		l.n++
		return true
	}
	ci := l.chunkFor(id)
	c := l.chunks[ci]
	j, found := searchChunk(c, id)
	if found {
		c[j].v = v
		return false
	}
	c = slices.Insert(c, j, entry[V]{id, v})
	if len(c) > chunkMax {
		half := len(c) / 2
		right := make([]entry[V], len(c)-half, chunkMax)
		copy(right, c[half:])
		clear(c[half:]) // drop the moved values' references
		c = slices.Grow(c[:half:half], chunkMax-half)
		l.chunks = slices.Insert(l.chunks, ci+1, right)
	}
	l.chunks[ci] = c
	l.n++
	return true
}

// Insert adds id with the zero value (resetting the value of an id already
// there); it reports false when id was already there. It is for lists of
// ids alone (V struct{}).
func (l *idList[V]) Insert(id int64) bool {
	var zero V
	return l.Set(id, zero)
}

func newChunk[V any](id int64, v V) []entry[V] {
	c := make([]entry[V], 1, chunkMax)
	c[0] = entry[V]{id, v}
	return c
}

// Remove deletes id; it reports false when id was not there. A chunk left
// small is merged into its neighbour, so mass deletions do not leave many
// nearly empty chunks behind.
func (l *idList[V]) Remove(id int64) bool {
	if len(l.chunks) == 0 {
		return false
	}
	ci := l.chunkFor(id)
	c := l.chunks[ci]
	j, found := searchChunk(c, id)
	if !found {
		return false
	}
	c = slices.Delete(c, j, j+1) // clears the vacated entry
	l.n--
	switch {
	case len(c) == 0:
		l.chunks = slices.Delete(l.chunks, ci, ci+1)
		return true
	case len(c) < chunkMax/4 && ci+1 < len(l.chunks) && len(c)+len(l.chunks[ci+1]) <= chunkMax:
		l.chunks[ci] = append(c, l.chunks[ci+1]...)
		l.chunks = slices.Delete(l.chunks, ci+1, ci+2)
		return true
	}
	l.chunks[ci] = c
	return true
}

// Get returns id's value.
func (l *idList[V]) Get(id int64) (V, bool) {
	if len(l.chunks) == 0 {
		var zero V
		return zero, false
	}
	c := l.chunks[l.chunkFor(id)]
	j, found := searchChunk(c, id)
	if !found {
		var zero V
		return zero, false
	}
	return c[j].v, true
}

// Contains reports whether id is in the list.
func (l *idList[V]) Contains(id int64) bool {
	if len(l.chunks) == 0 {
		return false
	}
	_, found := searchChunk(l.chunks[l.chunkFor(id)], id)
	return found
}

// Walk yields the entries in ascending (desc false) or descending id
// order, skipping the first skip.
func (l *idList[V]) Walk(desc bool, skip int) iter.Seq2[int64, V] {
	skip = max(skip, 0)
	if desc {
		return func(yield func(int64, V) bool) {
			for ci := len(l.chunks) - 1; ci >= 0; ci-- {
				c := l.chunks[ci]
				if skip >= len(c) {
					skip -= len(c)
					continue
				}
				for j := len(c) - 1 - skip; j >= 0; j-- {
					if !yield(c[j].id, c[j].v) {
						return
					}
				}
				skip = 0
			}
		}
	}
	return func(yield func(int64, V) bool) {
		for _, c := range l.chunks {
			if skip >= len(c) {
				skip -= len(c)
				continue
			}
			for _, e := range c[skip:] {
				if !yield(e.id, e.v) {
					return
				}
			}
			skip = 0
		}
	}
}

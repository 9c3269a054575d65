package projections

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// Edit is one step of an edit script from a sequence a to a sequence b: a's
// item at Index deleted (Insert false), or b's item at Index inserted.
type Edit struct {
	Insert bool
	Index  int
}

// ShortestEdit returns a shortest edit script turning a sequence of n items
// into one of m items, in order (E. Myers, "An O(ND) Difference Algorithm
// and Its Variations", 1986): what is not in the script is common to both.
// eq reports whether a's item i equals b's item j. It gives up, returning
// false, once the script would be longer than maxEdits: its time and
// memory grow with the length of the script, which a comparison of two
// projections expects to be short.
func ShortestEdit(n, m int, eq func(i, j int) bool, maxEdits int) ([]Edit, bool) {
	maxD := min(maxEdits, n+m)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	// trace[d] is v as it was before step d, for k in [-d-1, d+1].
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		trace = append(trace, slices.Clone(v[off-d-1:off+d+2]))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && eq(x, y) {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m), true
			}
		}
	}
	return nil, false
}

// backtrack walks the trace of ShortestEdit back from (n, m).
func backtrack(trace [][]int, n, m int) []Edit {
	var edits []Edit
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		v := trace[d] // v[k+d+1] is the furthest x on diagonal k after step d-1
		at := func(k int) int { return v[k+d+1] }
		k := x - y
		prevK := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
		}
		if x == prevX {
			edits = append(edits, Edit{Insert: true, Index: prevY})
		} else {
			edits = append(edits, Edit{Index: prevX})
		}
		x, y = prevX, prevY
	}
	slices.Reverse(edits)
	return edits
}

// Limits of Differences.
const (
	// maxDiffEdits bounds the edit script Differences looks for (its
	// memory grows with the square of it); beyond it items are compared
	// position by position.
	maxDiffEdits = 2000
	// diffContext is how much of an item a line shows on either side of
	// its first difference from the item it replaces.
	diffContext = 120
)

// Differences compares two renderings of a projection, a sequence of n
// items (the live one's) with one of m items (a rebuild's), and reports
// how they differ: a line "- item" for an item only the first has, "+
// item" for one only the second has (an item that changed gives both, cut
// around their first difference). It returns at most limit lines and the
// number of differing items; none means the renderings are the same. eq
// reports whether the first's item i equals the second's item j; render
// renders an item of the second (second true) or the first.
func Differences(n, m int, eq func(i, j int) bool, render func(second bool, i int) string, limit int) (lines []string, total int) {
	edits, ok := ShortestEdit(n, m, eq, maxDiffEdits)
	if !ok {
		return positionalDifferences(n, m, eq, render, limit)
	}
	for _, h := range hunks(edits) {
		// The hunk's k-th deleted item changed into its k-th inserted one:
		// shown both around where they part.
		for k := range max(len(h.deleted), len(h.inserted)) {
			if len(lines) >= limit {
				return lines, len(edits)
			}
			switch {
			case k < len(h.deleted) && k < len(h.inserted):
				a, b := render(false, h.deleted[k]), render(true, h.inserted[k])
				p := commonPrefix(a, b)
				lines = append(lines, "- "+excerpt(a, p), "+ "+excerpt(b, p))
			case k < len(h.deleted):
				lines = append(lines, "- "+excerpt(render(false, h.deleted[k]), 0))
			default:
				lines = append(lines, "+ "+excerpt(render(true, h.inserted[k]), 0))
			}
		}
	}
	return lines, len(edits)
}

// positionalDifferences is Differences for renderings too far apart for an
// edit script: items compared at the same positions.
func positionalDifferences(n, m int, eq func(i, j int) bool, render func(second bool, i int) string, limit int) (lines []string, total int) {
	lines = append(lines, "(more than "+strconv.Itoa(maxDiffEdits)+" differences: items compared position by position)")
	for i := range max(n, m) {
		if i < n && i < m && eq(i, i) {
			continue
		}
		total++
		if len(lines) > limit {
			continue
		}
		if i < n {
			lines = append(lines, "- "+excerpt(render(false, i), 0))
		}
		if i < m {
			lines = append(lines, "+ "+excerpt(render(true, i), 0))
		}
	}
	return lines, total
}

// hunk is a run of edits with no common item between them.
type hunk struct{ deleted, inserted []int }

// hunks groups an edit script into hunks. An edit's place in both
// sequences follows from the edits before it: a deletion of a's item i
// happens after i-deleted+inserted of b's items, an insertion of b's item
// j after j-inserted+deleted of a's.
func hunks(edits []Edit) []hunk {
	var out []hunk
	deleted, inserted := 0, 0
	endX, endY := -1, -1 // where the previous edit left both sequences
	for _, e := range edits {
		x, y := e.Index, e.Index-deleted+inserted
		if e.Insert {
			x, y = e.Index-inserted+deleted, e.Index
		}
		if x != endX || y != endY {
			out = append(out, hunk{})
		}
		h := &out[len(out)-1]
		if e.Insert {
			h.inserted = append(h.inserted, e.Index)
			inserted++
			endX, endY = x, y+1
		} else {
			h.deleted = append(h.deleted, e.Index)
			deleted++
			endX, endY = x+1, y
		}
	}
	return out
}

// commonPrefix returns the length in bytes of the longest common prefix of
// a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// excerpt returns s cut to about diffContext bytes either side of
// position p (at whole characters), marking what was cut with "…".
func excerpt(s string, p int) string {
	lo, hi := max(p-diffContext, 0), min(p+diffContext, len(s))
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	out := s[lo:hi]
	if lo > 0 {
		out = "…" + out
	}
	if hi < len(s) {
		out += "…"
	}
	return out
}

package projections

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// applyEdits turns a into b by the script: items of a not deleted, with
// b's inserted items in their places (b's item j goes after the items
// common to both that come before it in b).
func applyEdits(a, b []byte, edits []Edit) []byte {
	var out []byte
	i, inserted, deleted := 0, 0, 0
	for _, e := range edits {
		upTo := e.Index
		if e.Insert {
			upTo = e.Index - inserted + deleted
		}
		out = append(out, a[i:upTo]...)
		i = upTo
		if e.Insert {
			out = append(out, b[e.Index])
			inserted++
		} else {
			i++
			deleted++
		}
	}
	return append(out, a[i:]...)
}

// editDistance is the length of a shortest script of deletions and
// insertions, by dynamic programming.
func editDistance(a, b []byte) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				cur[j] = prev[j-1]
			} else {
				cur[j] = 1 + min(prev[j], cur[j-1])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}

func TestShortestEditIsShortestAndCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		a := make([]byte, rng.IntN(12))
		b := make([]byte, rng.IntN(12))
		for i := range a {
			a[i] = byte('a' + rng.IntN(3))
		}
		for i := range b {
			b[i] = byte('a' + rng.IntN(3))
		}
		edits, ok := ShortestEdit(len(a), len(b), func(i, j int) bool { return a[i] == b[j] }, 100)
		if !ok {
			t.Fatalf("%q → %q: gave up", a, b)
		}
		if got := applyEdits(a, b, edits); !slices.Equal(got, b) {
			t.Fatalf("%q → %q: script %v gives %q", a, b, edits, got)
		}
		if want := editDistance(a, b); len(edits) != want {
			t.Fatalf("%q → %q: %d edits, shortest is %d", a, b, len(edits), want)
		}
	}
}

func TestShortestEditGivesUpPastTheBound(t *testing.T) {
	a, b := []byte("aaaaaaaaaa"), []byte("bbbbbbbbbb")
	eq := func(i, j int) bool { return a[i] == b[j] }
	if _, ok := ShortestEdit(len(a), len(b), eq, 19); ok {
		t.Fatal("20 edits fitted in a bound of 19")
	}
	if edits, ok := ShortestEdit(len(a), len(b), eq, 20); !ok || len(edits) != 20 {
		t.Fatalf("bound 20: %d edits, ok %v", len(edits), ok)
	}
	if edits, ok := ShortestEdit(0, 0, eq, 0); !ok || len(edits) != 0 {
		t.Fatalf("empty sequences: %v %v", edits, ok)
	}
}

func TestDifferencesReportsChangedMissingAndExtraItems(t *testing.T) {
	live := []string{"provider 1", "account 1 " + strings.Repeat("x", 300) + " alice", "account 2 bob", "account 3 carol"}
	rebuilt := []string{"provider 1", "account 1 " + strings.Repeat("x", 300) + " alicia", "account 3 carol", "account 4 dave"}
	eq := func(i, j int) bool { return live[i] == rebuilt[j] }
	render := func(second bool, i int) string {
		if second {
			return rebuilt[i]
		}
		return live[i]
	}
	lines, total := Differences(len(live), len(rebuilt), eq, render, 10)
	want := []string{
		"- …" + strings.Repeat("x", 115) + " alice",
		"+ …" + strings.Repeat("x", 115) + " alicia",
		"- account 2 bob",
		"+ account 4 dave",
	}
	if total != 4 || !slices.Equal(lines, want) {
		t.Fatalf("%d differences:\n%s\nwant 4:\n%s", total, strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if lines, total := Differences(len(live), len(live), func(i, j int) bool { return live[i] == live[j] }, render, 10); total != 0 || len(lines) != 0 {
		t.Fatalf("a rendering differs from itself: %v", lines)
	}
	if lines, total := Differences(len(live), len(rebuilt), eq, render, 1); total != 4 || len(lines) != 2 {
		t.Fatalf("limit 1: %d lines, %d differences", len(lines), total)
	}
}

func TestDifferencesFarApartComparesByPosition(t *testing.T) {
	n := maxDiffEdits + 10
	eq := func(i, j int) bool { return i%2 == 0 && i == j }
	render := func(second bool, i int) string { return fmt.Sprint(second, i) }
	lines, total := Differences(n, n, eq, render, 6)
	if total != n/2 || len(lines) != 7 || !strings.HasPrefix(lines[0], "(more than") {
		t.Fatalf("%d differences in %d lines: %v", total, len(lines), lines)
	}
}

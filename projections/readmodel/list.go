package readmodel

import (
	"errors"
	"fmt"
	"iter"
	"slices"
)

// ErrUnknownSortField is returned (wrapped) by a list whose Sort names a
// field the list cannot be sorted by. Each list's fields are listed in its
// *SortFields variable, for the HTTP layer's validation.
var ErrUnknownSortField = errors.New("readmodel: unknown sort field")

// SortKey is one key of a list's order.
type SortKey struct {
	Field string
	Desc  bool
}

// Page says which part of a list, in which order, a query wants.
type Page struct {
	// Start is how many items to skip (negative counts as 0).
	Start int
	// Limit is the page size; <= 0 means every item from Start on.
	Limit int
	// Sort is the order, most significant key first; empty means ascending
	// id. Ties are always broken by ascending id, so paging is stable.
	Sort []SortKey
}

// window returns the bounds [lo, hi) of the page within total items.
func (p Page) window(total int) (lo, hi int) {
	lo = min(max(p.Start, 0), total)
	hi = total
	if p.Limit > 0 && p.Limit < total-lo {
		hi = lo + p.Limit
	}
	return lo, hi
}

// List is the answer of a list query: the number of items matching the
// filters (before paging) and the requested page.
type List[T any] struct {
	Total int
	// Items yields the page's items in order. It may be ranged over any
	// number of times, from any goroutine, without holding a lock: the
	// page was fixed when the query ran, and each item is a fresh copy,
	// built as it is yielded, so a long page can be streamed.
	Items iter.Seq[T]
}

// Slice returns the page's items as a slice.
func (l List[T]) Slice() []T { return slices.Collect(l.Items) }

// emptyList returns a list with no items.
func emptyList[T any]() List[T] {
	return List[T]{Items: func(func(T) bool) {}}
}

// listOf returns a list over items, yielded as view(item).
func listOf[E, T any](total int, items []E, view func(E) T) List[T] {
	return List[T]{Total: total, Items: func(yield func(T) bool) {
		for _, e := range items {
			if !yield(view(e)) {
				return
			}
		}
	}}
}

// comparator builds the order of keys over fields (field name → ascending
// comparison). It returns nil for an empty key list (the natural id order).
// Ties fall back to tie, the ascending id comparison.
func comparator[E any](keys []SortKey, fields map[string]func(a, b E) int, tie func(a, b E) int) (func(a, b E) int, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	cmps := make([]func(a, b E) int, 0, len(keys)+1)
	for _, k := range keys {
		f, ok := fields[k.Field]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownSortField, k.Field)
		}
		if k.Desc {
			asc := f
			f = func(a, b E) int { return asc(b, a) }
		}
		cmps = append(cmps, f)
	}
	cmps = append(cmps, tie)
	return func(a, b E) int {
		for _, c := range cmps {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	}, nil
}

// idOrder reports whether keys ask for the natural order by id alone
// (empty, or a single "id" key) and whether it is descending.
func idOrder(keys []SortKey) (byID, desc bool) {
	switch {
	case len(keys) == 0:
		return true, false
	case keys[0].Field == "id":
		// Later keys cannot matter: ids are unique.
		return true, keys[0].Desc
	}
	return false, false
}

// sortPage sorts items by cmp (nil: leave them in id order) and returns the
// total and the page's part of items.
func sortPage[E any](items []E, p Page, cmp func(a, b E) int) (int, []E) {
	if cmp != nil {
		slices.SortFunc(items, cmp)
	}
	lo, hi := p.window(len(items))
	return len(items), items[lo:hi]
}

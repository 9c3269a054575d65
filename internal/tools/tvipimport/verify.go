package tvipimport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Difference is one way the target differs from the source.
type Difference struct {
	Resource string
	ID       int64
	// Field is empty when the whole object is missing on one side.
	Field          string
	Source, Target string
}

func (d Difference) String() string {
	switch {
	case d.Field != "":
		return fmt.Sprintf("%s %d %s: %s at the source, %s at the target", d.Resource, d.ID, d.Field, d.Source, d.Target)
	case d.Target == "":
		return fmt.Sprintf("%s %d: missing at the target", d.Resource, d.ID)
	default:
		return fmt.Sprintf("%s %d: imported, but gone at the source", d.Resource, d.ID)
	}
}

// Verify reads both sides again and lists every field of every copied
// object that differs: an object missing at the target, one imported
// before that the source no longer has, and each field unlike the
// source's. Resources the source does not serve are left out. The error is
// for a read that failed.
func Verify(ctx context.Context, o Options) ([]Difference, error) {
	o = o.withDefaults()
	source, target := newClient(o.Source, o.HTTP, o.Retry), newClient(o.Target, o.HTTP, o.Retry)
	var diffs []Difference
	for _, r := range resources {
		src, err := source.list(ctx, "/api/provider/"+r.name, o.PageSize)
		if errors.Is(err, errNotServed) {
			continue
		}
		if err != nil {
			return diffs, fmt.Errorf("%s: reading the source: %w", r.name, err)
		}
		tgt, err := target.list(ctx, "/api/provider/"+r.name, o.PageSize)
		if err != nil {
			return diffs, fmt.Errorf("%s: reading the target: %w", r.name, err)
		}
		var ranges importRanges
		if err := target.call(ctx, http.MethodPost, "/api/admin/import/ids", nil, map[string]any{"kind": r.kind}, &ranges); err != nil {
			return diffs, fmt.Errorf("%s: the target's import ranges: %w", r.name, err)
		}
		byID := make(map[int64]object, len(tgt))
		for _, t := range tgt {
			if id, ok := t.id(); ok {
				byID[id] = t
			}
		}
		seen := map[int64]bool{}
		for _, s := range src {
			id, ok := s.id()
			if !ok {
				continue
			}
			seen[id] = true
			t, ok := byID[id]
			if !ok {
				diffs = append(diffs, Difference{Resource: r.name, ID: id, Source: "present"})
				continue
			}
			for _, f := range r.differs(s, t) {
				diffs = append(diffs, Difference{Resource: r.name, ID: id, Field: f, Source: show(s[f]), Target: show(t[f])})
			}
		}
		var gone []int64
		for id := range byID {
			if !seen[id] && ranges.imported(id) {
				gone = append(gone, id)
			}
		}
		slices.Sort(gone)
		for _, id := range gone {
			diffs = append(diffs, Difference{Resource: r.name, ID: id, Target: "present"})
		}
	}
	return diffs, nil
}

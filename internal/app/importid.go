package app

import (
	"context"
	"fmt"
	"sync/atomic"
)

// importIDKey keys the import's id in a context.
type importIDKey struct{}

// importID is the id an import gives the object it creates.
type importID struct {
	id    int64
	taken atomic.Bool
}

// WithImportID returns a context in which a create takes id as its new
// object's id instead of a new one from the allocator (Executor.NewID).
// This is how objects copied from another system keep their ids: the id
// must lie in a range reserved for import (IDAllocator.ReserveImport), else
// the create fails with ErrIDNotImported. One create, one id: a second new
// id asked for within the context is an error.
func WithImportID(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, importIDKey{}, &importID{id: id})
}

// ImportIDFrom returns the id WithImportID put in ctx.
func ImportIDFrom(ctx context.Context) (int64, bool) {
	imp, ok := ctx.Value(importIDKey{}).(*importID)
	if !ok {
		return 0, false
	}
	return imp.id, true
}

func (imp *importID) take(ctx context.Context, a *IDAllocator) (int64, error) {
	if imp.taken.Swap(true) {
		return 0, opError("import", a.stream, fmt.Errorf("%w: an import creates one object, under id %d", ErrIDNotImported, imp.id))
	}
	if imp.id <= 0 {
		return 0, opError("import", a.stream, fmt.Errorf("%w: id %d is not positive", ErrIDNotImported, imp.id))
	}
	if err := a.checkImport(ctx, imp.id); err != nil {
		return 0, opError("import", a.stream, err)
	}
	return imp.id, nil
}

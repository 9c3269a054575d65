package query

import (
	"errors"
	"fmt"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// listScope is the read model scope of the caller's lists: a
// provider-scoped admin never sees another provider's data.
func listScope(c app.Caller) readmodel.Scope {
	if c.Scope == nil {
		return readmodel.AllProviders
	}
	return readmodel.ProviderScope(*c.Scope)
}

// listError turns a list query's unknown sort field into a validation error
// on "sort" (the HTTP layer checks sort fields first, so this is a safety
// net) and passes other errors through.
func listError(err error) error {
	if errors.Is(err, readmodel.ErrUnknownSortField) {
		return domain.NewValidationError("sort", err.Error())
	}
	return err
}

// notFound reports that the object what id does not exist.
func notFound(what string, id any) error {
	return fmt.Errorf("%s %v: %w", what, id, domain.ErrNotFound)
}

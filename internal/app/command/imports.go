package command

import (
	"context"
	"slices"
	"strings"

	"tvsm/domain"
	"tvsm/internal/app"
)

// ImportKinds are the kinds of ids an import may keep: every object the
// Provider and Admin APIs create under an integer id. Account and device
// subscriptions share the kind "subscription".
var ImportKinds = []string{
	"provider", "region", "category", "channel", "tariff_tag", "tariff", "device_type",
	"account", "account_network", "subscription", "device",
}

// Imports handles what an import of another system's objects needs beyond
// the creates themselves (which take the object's id from
// app.WithImportID): ids reserved for import.
type Imports struct{ w *writer }

// ReserveIDs reserves the ids of kind above the highest reserved so far, up
// to through, for import (app.IDAllocator.ReserveImport), and returns every
// range reserved for import. Superadmins only: the ids are the node's.
func (h *Imports) ReserveIDs(ctx context.Context, c app.Caller, kind string, through int64) (app.ImportRanges, error) {
	if err := c.RequireSuperadmin(); err != nil {
		return app.ImportRanges{}, err
	}
	problems := map[string]string{}
	if !slices.Contains(ImportKinds, kind) {
		problems["kind"] = "unknown: want one of " + strings.Join(ImportKinds, ", ")
	}
	if through < 0 {
		problems["through"] = "must not be negative"
	}
	if len(problems) > 0 {
		return app.ImportRanges{}, &domain.ValidationError{Fields: problems}
	}
	return h.w.x.IDs(kind).ReserveImport(ctx, through, c.Meta())
}

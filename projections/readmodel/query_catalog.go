package readmodel

import (
	"cmp"
	"strings"

	"tvsm/domain"
)

// Lists of the small entities (hundreds to a few thousand rows): each query
// copies the matches under the read lock and sorts them.

// ProviderSortFields are the fields ListProviders can sort by.
var ProviderSortFields = []string{"id", "name"}

// ProviderQuery selects providers.
type ProviderQuery struct {
	// Scope limits the rows to one provider: a scoped administrator sees
	// only its own provider.
	Scope Scope
	Page
	// Enabled keeps enabled (true) or disabled (false) providers.
	Enabled *bool
}

// ListProviders returns the providers q selects (deleted ones never).
// Their Billing.Token is the billing proxy's secret: never show it.
func (m *Model) ListProviders(q ProviderQuery) (List[domain.Provider], error) {
	return listVersioned(m, q.Page,
		func(s *state) map[int64]versioned[domain.Provider] { return s.providers },
		func(p *domain.Provider) bool {
			return p.Exists() && q.Scope.Allows(p.ID) && (q.Enabled == nil || p.Enabled == *q.Enabled)
		},
		map[string]func(a, b *domain.Provider) int{
			"id":   func(a, b *domain.Provider) int { return cmp.Compare(a.ID, b.ID) },
			"name": func(a, b *domain.Provider) int { return strings.Compare(a.Name, b.Name) },
		}, copyProvider)
}

// TariffSortFields are the fields ListTariffs can sort by.
var TariffSortFields = []string{"id", "name", "provider"}

// TariffQuery selects tariffs.
type TariffQuery struct {
	// Scope limits the rows to one provider's; it must be set (see Scope).
	Scope Scope
	Page
	// Provider keeps the tariffs of one provider (0: any).
	Provider int64
	// Enabled keeps enabled (true) or disabled (false) tariffs.
	Enabled *bool
}

// ListTariffs returns the tariffs q selects (deleted ones never).
func (m *Model) ListTariffs(q TariffQuery) (List[domain.Tariff], error) {
	provider, ok := q.Scope.narrow(q.Provider)
	if !ok {
		return emptyList[domain.Tariff](), nil
	}
	return listVersioned(m, q.Page,
		func(s *state) map[int64]versioned[domain.Tariff] { return s.tariffs },
		func(t *domain.Tariff) bool {
			return t.Exists() && (provider == 0 || t.Provider == provider) && (q.Enabled == nil || t.Enabled == *q.Enabled)
		},
		map[string]func(a, b *domain.Tariff) int{
			"id":       func(a, b *domain.Tariff) int { return cmp.Compare(a.ID, b.ID) },
			"name":     func(a, b *domain.Tariff) int { return strings.Compare(a.Name, b.Name) },
			"provider": func(a, b *domain.Tariff) int { return cmp.Compare(a.Provider, b.Provider) },
		}, copyTariff)
}

// ChannelSortFields are the fields ListChannels can sort by.
var ChannelSortFields = []string{"id", "name", "number"}

// ChannelQuery selects channels. Channels belong to no provider (they are
// the operator's line-up, which tariffs pick from), so there is no scope:
// every administrator sees them all.
type ChannelQuery struct {
	Page
	// Category keeps the channels listed in one category (0: any).
	Category int64
}

// ListChannels returns the channels q selects (deleted ones never).
func (m *Model) ListChannels(q ChannelQuery) (List[domain.Channel], error) {
	return listVersioned(m, q.Page,
		func(s *state) map[int64]versioned[domain.Channel] { return s.channels },
		func(c *domain.Channel) bool {
			if !c.Exists() {
				return false
			}
			if q.Category == 0 {
				return true
			}
			for _, id := range c.Categories {
				if id == q.Category {
					return true
				}
			}
			return false
		},
		map[string]func(a, b *domain.Channel) int{
			"id":     func(a, b *domain.Channel) int { return cmp.Compare(a.ID, b.ID) },
			"name":   func(a, b *domain.Channel) int { return strings.Compare(a.Name, b.Name) },
			"number": func(a, b *domain.Channel) int { return cmp.Compare(a.Number, b.Number) },
		}, copyChannel)
}

// CategorySortFields are the fields ListCategories can sort by.
var CategorySortFields = []string{"id", "name"}

// CategoryQuery selects channel categories. Like channels, categories
// belong to no provider.
type CategoryQuery struct {
	Page
}

// ListCategories returns the categories q selects (deleted ones never).
func (m *Model) ListCategories(q CategoryQuery) (List[domain.Category], error) {
	return listVersioned(m, q.Page,
		func(s *state) map[int64]versioned[domain.Category] { return s.categories },
		func(c *domain.Category) bool { return c.Exists() },
		map[string]func(a, b *domain.Category) int{
			"id":   func(a, b *domain.Category) int { return cmp.Compare(a.ID, b.ID) },
			"name": func(a, b *domain.Category) int { return strings.Compare(a.Name, b.Name) },
		}, copyCategory)
}

// AdminSortFields are the fields ListAdmins can sort by. Administrators
// have no id: their natural order is by login.
var AdminSortFields = []string{"login", "provider"}

// AdminQuery selects administrators.
type AdminQuery struct {
	// Scope limits the rows to the administrators of one provider; only
	// AllProviders shows superadmins.
	Scope Scope
	Page
	// Provider keeps the administrators scoped to one provider (0: any,
	// superadmins included).
	Provider int64
}

// ListAdmins returns the administrators q selects (deleted ones never),
// with their password hashes: never show them.
func (m *Model) ListAdmins(q AdminQuery) (List[domain.Admin], error) {
	provider, ok := q.Scope.narrow(q.Provider)
	if !ok {
		return emptyList[domain.Admin](), nil
	}
	byLogin := func(a, b *domain.Admin) int { return strings.Compare(a.Login, b.Login) }
	order, err := comparator(q.Sort, map[string]func(a, b *domain.Admin) int{
		"login": byLogin,
		"provider": func(a, b *domain.Admin) int {
			// Superadmins (no provider) first.
			return cmp.Compare(derefOr(a.Provider, 0), derefOr(b.Provider, 0))
		},
	}, byLogin)
	if err != nil {
		return List[domain.Admin]{}, err
	}
	if order == nil {
		order = byLogin
	}
	var found []*domain.Admin
	m.read(func(s *state) {
		for _, e := range s.admins {
			a := e.v
			if a.Exists() && (provider == 0 || (a.Provider != nil && *a.Provider == provider)) {
				c := copyAdmin(a)
				found = append(found, &c)
			}
		}
	})
	total, page := sortPage(found, q.Page, order)
	return listOf(total, page, func(a *domain.Admin) domain.Admin { return *a }), nil
}

func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// listVersioned lists the entities of a small-entity map that keep, in
// the page's order (fields by name; ties and the default by "id").
func listVersioned[T any](m *Model, p Page, table func(*state) map[int64]versioned[T], keep func(*T) bool,
	fields map[string]func(a, b *T) int, copyOf func(T) T) (List[T], error) {
	order, err := comparator(p.Sort, fields, fields["id"])
	if err != nil {
		return List[T]{}, err
	}
	if order == nil {
		order = fields["id"]
	}
	var found []*T
	m.read(func(s *state) {
		for _, e := range table(s) {
			if keep(&e.v) {
				c := copyOf(e.v)
				found = append(found, &c)
			}
		}
	})
	total, page := sortPage(found, p, order)
	return listOf(total, page, func(x *T) T { return *x }), nil
}

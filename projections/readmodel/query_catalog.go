package readmodel

import (
	"cmp"
	"slices"
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
	// Search keeps the providers whose name contains it, ignoring case.
	Search string
}

// ListProviders returns the providers q selects (deleted ones never).
// Their Billing.Token is the billing proxy's secret: never show it.
func (m *Model) ListProviders(q ProviderQuery) (List[domain.Provider], error) {
	needle := foldNeedle(q.Search)
	return listVersioned(m, q.Page,
		func(s *state) map[int64]versioned[domain.Provider] { return s.providers },
		func(p *domain.Provider) bool {
			return p.Exists() && q.Scope.Allows(p.ID) && (q.Enabled == nil || p.Enabled == *q.Enabled) &&
				containsFold(p.Name, needle)
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
	// Channel keeps the tariffs listing one channel (0: any).
	Channel int64
	// Tag keeps the tariffs labelled with one tariff tag (0: any).
	Tag int64
	// Search keeps the tariffs whose name contains it, ignoring case.
	Search string
}

// ListTariffs returns the tariffs q selects (deleted ones never).
func (m *Model) ListTariffs(q TariffQuery) (List[domain.Tariff], error) {
	provider, ok := q.Scope.narrow(q.Provider)
	if !ok {
		return emptyList[domain.Tariff](), nil
	}
	needle := foldNeedle(q.Search)
	return listVersioned(m, q.Page,
		func(s *state) map[int64]versioned[domain.Tariff] { return s.tariffs },
		func(t *domain.Tariff) bool {
			return t.Exists() && (provider == 0 || t.Provider == provider) && (q.Enabled == nil || t.Enabled == *q.Enabled) &&
				(q.Channel == 0 || slices.Contains(t.Channels, q.Channel)) &&
				(q.Tag == 0 || (t.Tag != nil && *t.Tag == q.Tag)) && containsFold(t.Name, needle)
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
// the operator's line-up, which tariffs pick from): every administrator
// sees them all, and Scope only limits which tariff may filter them.
type ChannelQuery struct {
	Page
	// Category keeps the channels listed in one category (0: any).
	Category int64
	// Tariff keeps the channels one tariff lists (0: any); a tariff that
	// does not exist, or whose provider is outside Scope, lists none.
	Tariff int64
	// Scope limits the Tariff filter to the tariffs of one provider (see
	// Scope); without a Tariff filter it does not matter.
	Scope Scope
	// Enabled keeps enabled (true) or disabled (false) channels.
	Enabled *bool
	// Search keeps the channels whose name or text name contains it,
	// ignoring case.
	Search string
}

// ListChannels returns the channels q selects (deleted ones never).
func (m *Model) ListChannels(q ChannelQuery) (List[domain.Channel], error) {
	var inTariff map[int64]bool
	if q.Tariff != 0 {
		t, ok := m.Tariff(q.Tariff)
		if !ok || !q.Scope.Allows(t.Provider) {
			return emptyList[domain.Channel](), nil
		}
		inTariff = make(map[int64]bool, len(t.Channels))
		for _, id := range t.Channels {
			inTariff[id] = true
		}
	}
	needle := foldNeedle(q.Search)
	return listVersioned(m, q.Page,
		func(s *state) map[int64]versioned[domain.Channel] { return s.channels },
		func(c *domain.Channel) bool {
			return c.Exists() && (q.Category == 0 || slices.Contains(c.Categories, q.Category)) &&
				(inTariff == nil || inTariff[c.ID]) && (q.Enabled == nil || !c.Disabled == *q.Enabled) &&
				(containsFold(c.Name, needle) || containsFold(c.TextName, needle))
		},
		map[string]func(a, b *domain.Channel) int{
			"id":     func(a, b *domain.Channel) int { return cmp.Compare(a.ID, b.ID) },
			"name":   func(a, b *domain.Channel) int { return strings.Compare(a.Name, b.Name) },
			"number": func(a, b *domain.Channel) int { return cmp.Compare(a.Number, b.Number) },
		}, copyChannel)
}

// CategorySortFields are the fields ListCategories can sort by.
var CategorySortFields = NamedSortFields

// CategoryQuery selects channel categories. Like channels, categories
// belong to no provider.
type CategoryQuery struct {
	Page
	// Search keeps the categories whose name contains it, ignoring case.
	Search string
}

// ListCategories returns the categories q selects (deleted ones never).
func (m *Model) ListCategories(q CategoryQuery) (List[domain.Category], error) {
	return listNamed(m, q.Page, q.Search, func(s *state) map[int64]versioned[domain.Category] { return s.categories },
		func(c *domain.Category) (int64, string, bool) { return c.ID, c.Name, c.Exists() }, copyCategory)
}

// CategoryChannels returns, for each of the categories ids, the live
// channels that list it, in ascending id order: the channels of the
// Provider API's favourite groups.
func (m *Model) CategoryChannels(ids []int64) map[int64][]int64 {
	out := make(map[int64][]int64, len(ids))
	for _, id := range ids {
		out[id] = []int64{}
	}
	m.read(func(s *state) {
		for _, e := range s.channels {
			if !e.v.Exists() {
				continue
			}
			for _, cat := range e.v.Categories {
				if l, ok := out[cat]; ok {
					out[cat] = append(l, e.v.ID)
				}
			}
		}
	})
	for _, l := range out {
		slices.Sort(l)
	}
	return out
}

// LiveCategories returns the ids of ids whose categories exist, in order.
func (m *Model) LiveCategories(ids []int64) []int64 {
	out := make([]int64, 0, len(ids))
	m.read(func(s *state) {
		for _, id := range ids {
			if c, ok := s.categories[id]; ok && c.v.Exists() {
				out = append(out, id)
			}
		}
	})
	return out
}

// TariffTagSortFields are the fields ListTariffTags can sort by.
var TariffTagSortFields = []string{"id", "name", "position", "provider"}

// TariffTagQuery selects tariff tags.
type TariffTagQuery struct {
	// Scope limits the rows to one provider's; it must be set (see Scope).
	Scope Scope
	Page
	// Provider keeps the tags of one provider (0: any).
	Provider int64
	// Enabled keeps enabled (true) or disabled (false) tags.
	Enabled *bool
	// Search keeps the tags whose name contains it, ignoring case.
	Search string
}

// ListTariffTags returns the tariff tags q selects (deleted ones never).
func (m *Model) ListTariffTags(q TariffTagQuery) (List[domain.TariffTag], error) {
	provider, ok := q.Scope.narrow(q.Provider)
	if !ok {
		return emptyList[domain.TariffTag](), nil
	}
	needle := foldNeedle(q.Search)
	return listVersioned(m, q.Page,
		func(s *state) map[int64]versioned[domain.TariffTag] { return s.tags },
		func(t *domain.TariffTag) bool {
			return t.Exists() && (provider == 0 || t.Provider == provider) && (q.Enabled == nil || t.Enabled == *q.Enabled) &&
				containsFold(t.Name, needle)
		},
		map[string]func(a, b *domain.TariffTag) int{
			"id":       func(a, b *domain.TariffTag) int { return cmp.Compare(a.ID, b.ID) },
			"name":     func(a, b *domain.TariffTag) int { return strings.Compare(a.Name, b.Name) },
			"position": func(a, b *domain.TariffTag) int { return cmp.Compare(a.Position, b.Position) },
			"provider": func(a, b *domain.TariffTag) int { return cmp.Compare(a.Provider, b.Provider) },
		}, copyTag)
}

// TariffsTagged returns the live tariffs labelled with tag, in ascending
// id order.
func (m *Model) TariffsTagged(tag int64) []int64 {
	var out []int64
	m.read(func(s *state) {
		for _, e := range s.tariffs {
			if e.v.Exists() && e.v.Tag != nil && *e.v.Tag == tag {
				out = append(out, e.v.ID)
			}
		}
	})
	slices.Sort(out)
	return out
}

// ProvidersInRegion returns the live providers whose region is region, in
// ascending id order.
func (m *Model) ProvidersInRegion(region int64) []int64 {
	var out []int64
	m.read(func(s *state) {
		for _, e := range s.providers {
			if e.v.Exists() && e.v.RegionTag != nil && *e.v.RegionTag == region {
				out = append(out, e.v.ID)
			}
		}
	})
	slices.Sort(out)
	return out
}

// NamedSortFields are the fields the lists of regions, device types and
// categories can sort by.
var NamedSortFields = []string{"id", "name"}

// RegionQuery selects regions. Regions belong to no provider.
type RegionQuery struct {
	Page
	// Search keeps the regions whose name contains it, ignoring case.
	Search string
}

// ListRegions returns the regions q selects (deleted ones never).
func (m *Model) ListRegions(q RegionQuery) (List[domain.Region], error) {
	return listNamed(m, q.Page, q.Search, func(s *state) map[int64]versioned[domain.Region] { return s.regions },
		func(r *domain.Region) (int64, string, bool) { return r.ID, r.Name, r.Exists() }, copyRegion)
}

// DeviceTypeQuery selects device types. Device types belong to no
// provider.
type DeviceTypeQuery struct {
	Page
	// Search keeps the device types whose name contains it, ignoring case.
	Search string
}

// ListDeviceTypes returns the device types q selects (deleted ones
// never); "name" sorts by the device type's name.
func (m *Model) ListDeviceTypes(q DeviceTypeQuery) (List[domain.DeviceType], error) {
	return listNamed(m, q.Page, q.Search, func(s *state) map[int64]versioned[domain.DeviceType] { return s.devTypes },
		func(d *domain.DeviceType) (int64, string, bool) { return d.ID, d.Name, d.Exists() }, copyDeviceType)
}

// listNamed lists entities that are an id and a name (NamedSortFields),
// keeping the live ones whose name contains search.
func listNamed[T any](m *Model, p Page, search string, table func(*state) map[int64]versioned[T],
	fields func(*T) (id int64, name string, live bool), copyOf func(T) T) (List[T], error) {
	needle := foldNeedle(search)
	return listVersioned(m, p, table,
		func(v *T) bool {
			_, name, live := fields(v)
			return live && containsFold(name, needle)
		},
		map[string]func(a, b *T) int{
			"id": func(a, b *T) int {
				x, _, _ := fields(a)
				y, _, _ := fields(b)
				return cmp.Compare(x, y)
			},
			"name": func(a, b *T) int {
				_, x, _ := fields(a)
				_, y, _ := fields(b)
				return strings.Compare(x, y)
			},
		}, copyOf)
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

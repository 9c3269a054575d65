package query

import (
	"slices"

	"tvsm/projections/readmodel"
)

// StatsCatalog is what the Statistics API shows beside the facts: which
// providers exist, the names of tariffs, channels and categories, and the
// contract of an account. ReadModelCatalog implements it.
type StatsCatalog interface {
	// Providers returns the ids of the existing providers, ascending.
	Providers() []int64
	ProviderExists(id int64) bool
	// TariffName returns a tariff's name; "" once it is deleted.
	TariffName(id int64) string
	// ProviderChannels returns the channels of a provider's tariffs.
	ProviderChannels(provider int64) []int64
	Channel(id int64) (ChannelInfo, bool)
	Category(id int64) (CategoryInfo, bool)
	// AccountContract returns an account's contract_info; "" when unset or
	// the account is deleted.
	AccountContract(id int64) string
}

// ChannelInfo is a channel of the account statistic's dictionary.
type ChannelInfo struct {
	ID         int64
	Name       string
	Categories []int64
}

// CategoryInfo is a channel category ("favorites" in the account
// statistic).
type CategoryInfo struct {
	ID   int64
	Name string
}

// ReadModelCatalog is the StatsCatalog of the in-memory read model.
type ReadModelCatalog struct{ Model *readmodel.Model }

// Providers implements StatsCatalog.
func (c ReadModelCatalog) Providers() []int64 {
	list, err := c.Model.ListProviders(readmodel.ProviderQuery{Scope: readmodel.AllProviders})
	if err != nil {
		return nil
	}
	var ids []int64
	for p := range list.Items {
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	return ids
}

// ProviderExists implements StatsCatalog.
func (c ReadModelCatalog) ProviderExists(id int64) bool {
	_, ok := c.Model.Provider(id)
	return ok
}

// TariffName implements StatsCatalog.
func (c ReadModelCatalog) TariffName(id int64) string {
	t, _ := c.Model.Tariff(id)
	return t.Name
}

// ProviderChannels implements StatsCatalog.
func (c ReadModelCatalog) ProviderChannels(provider int64) []int64 {
	list, err := c.Model.ListTariffs(readmodel.TariffQuery{Scope: readmodel.AllProviders, Provider: provider})
	if err != nil {
		return nil
	}
	var ids []int64
	for t := range list.Items {
		ids = append(ids, t.Channels...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Channel implements StatsCatalog.
func (c ReadModelCatalog) Channel(id int64) (ChannelInfo, bool) {
	ch, ok := c.Model.Channel(id)
	return ChannelInfo{ID: ch.ID, Name: ch.Name, Categories: ch.Categories}, ok
}

// Category implements StatsCatalog.
func (c ReadModelCatalog) Category(id int64) (CategoryInfo, bool) {
	cat, ok := c.Model.Category(id)
	return CategoryInfo{ID: cat.ID, Name: cat.Name}, ok
}

// AccountContract implements StatsCatalog.
func (c ReadModelCatalog) AccountContract(id int64) string {
	a, ok := c.Model.Account(id)
	if !ok || a.ContractInfo == nil {
		return ""
	}
	return *a.ContractInfo
}

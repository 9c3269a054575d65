package httpapi

import (
	"fmt"
	"math"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app/command"
)

// JSON forms of the Admin API's objects, and the decoding of their request
// bodies. Secrets are write-only: a provider's billing.token is never
// returned (billing.token_set says whether one is stored) and an admin's
// password never is. Empty optional text (billing.url, a description, a
// logo URL) is returned as null, as the Provider API returns unset fields.

// adminProviderJSON is a provider.
type adminProviderJSON struct {
	ID                     int64            `json:"id"`
	Name                   string           `json:"name"`
	Enabled                bool             `json:"enabled"`
	DevicesPerAccountLimit *int             `json:"devices_per_account_limit"`
	FreeTariff             *int64           `json:"free_tariff"`
	RegionTag              *int64           `json:"region_tag"`
	Comment                *string          `json:"comment"`
	LogoURL                *string          `json:"logo_url"`
	Billing                adminBillingJSON `json:"billing"`
}

// adminBillingJSON is a provider's billing settings without the token.
type adminBillingJSON struct {
	Resolve  bool    `json:"resolve"`
	URL      *string `json:"url"`
	TokenSet bool    `json:"token_set"`
}

// adminTariffJSON is a tariff.
type adminTariffJSON struct {
	ID          int64   `json:"id"`
	Provider    int64   `json:"provider"`
	Name        string  `json:"name"`
	Enabled     bool    `json:"enabled"`
	Channels    []int64 `json:"channels"`
	Description *string `json:"description"`
	TarifTag    *int64  `json:"tarif_tag"`
}

// adminChannelJSON is a channel; text_name is null when the channel has no
// name other than name.
type adminChannelJSON struct {
	ID             int64   `json:"id"`
	Name           string  `json:"name"`
	Number         int     `json:"number"`
	LogoURL        *string `json:"logo_url"`
	Description    *string `json:"description"`
	Categories     []int64 `json:"categories"`
	TextName       *string `json:"text_name"`
	Enabled        bool    `json:"enabled"`
	TimeShiftDepth *int    `json:"time_shift_depth"`
}

// adminCategoryJSON is a channel category; a region has the same form.
type adminCategoryJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// adminAdminJSON is an administrator; provider null is a superadmin.
type adminAdminJSON struct {
	Login    string `json:"login"`
	Provider *int64 `json:"provider"`
}

func adminProviderView(p domain.Provider) adminProviderJSON {
	return adminProviderJSON{
		ID:                     p.ID,
		Name:                   p.Name,
		Enabled:                p.Enabled,
		DevicesPerAccountLimit: p.DevicesPerAccountLimit,
		FreeTariff:             p.FreeTariff,
		RegionTag:              p.RegionTag,
		Comment:                adminText(p.Comment),
		LogoURL:                adminText(p.LogoURL),
		Billing: adminBillingJSON{
			Resolve:  p.Billing.Resolve,
			URL:      adminText(p.Billing.URL),
			TokenSet: p.Billing.Token != "",
		},
	}
}

func adminTariffView(t domain.Tariff) adminTariffJSON {
	return adminTariffJSON{
		ID:          t.ID,
		Provider:    t.Provider,
		Name:        t.Name,
		Enabled:     t.Enabled,
		Channels:    adminIDs(t.Channels),
		Description: adminText(t.Description),
		TarifTag:    t.Tag,
	}
}

func adminChannelView(ch domain.Channel) adminChannelJSON {
	return adminChannelJSON{
		ID:             ch.ID,
		Name:           ch.Name,
		Number:         ch.Number,
		LogoURL:        adminText(ch.LogoURL),
		Description:    adminText(ch.Description),
		Categories:     adminIDs(ch.Categories),
		TextName:       adminText(ch.TextName),
		Enabled:        !ch.Disabled,
		TimeShiftDepth: ch.TimeShiftDepth,
	}
}

func adminCategoryView(cat domain.Category) adminCategoryJSON {
	return adminCategoryJSON{ID: cat.ID, Name: cat.Name}
}

func adminRegionView(r domain.Region) adminCategoryJSON {
	return adminCategoryJSON{ID: r.ID, Name: r.Name}
}

func adminAdminView(a domain.Admin) adminAdminJSON {
	return adminAdminJSON{Login: a.Login, Provider: a.Provider}
}

// adminText returns nil for "", else a pointer to s.
func adminText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// adminIDs returns ids, or an empty list for nil (lists are never null).
func adminIDs(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// decodeAdminProvider reads a provider body. Null clears the nullable
// fields devices_per_account_limit, free_tariff, region_tag, comment,
// logo_url, billing.url and billing.token ("" clears the last four as
// well); null means unchanged for the others. billing.token_set, which the
// API returns, is ignored.
func decodeAdminProvider(o *wire.Object) command.ProviderFields {
	f := command.ProviderFields{
		Name:                   o.String("name"),
		Enabled:                o.Bool("enabled"),
		DevicesPerAccountLimit: adminInt(o, "devices_per_account_limit", true, 0, domain.MaxDeviceLimit),
		FreeTariff:             o.NullableInt64("free_tariff"),
		RegionTag:              o.NullableInt64(domain.RegionTagField),
		Comment:                o.NullableString("comment"),
		LogoURL:                o.NullableString("logo_url"),
	}
	if b, ok := o.Object("billing").Get(); ok {
		f.Billing = domain.BillingPatch{
			Resolve: b.Bool("resolve"),
			URL:     b.NullableString("url"),
			Token:   b.NullableString("token"),
		}
	}
	return f
}

// decodeAdminTariff reads a tariff body. A null description or tarif_tag
// clears it; channels is a list of channel ids ([] clears it).
func decodeAdminTariff(o *wire.Object) command.TariffFields { return decodeTariff(o, "name") }

// decodeTariff reads a tariff body whose name is under nameKey: "name" in
// the Admin API, "tarif_name" in the Provider API.
func decodeTariff(o *wire.Object, nameKey string) command.TariffFields {
	return command.TariffFields{
		Provider:    o.Int64("provider"),
		Name:        o.String(nameKey),
		Enabled:     o.Bool("enabled"),
		Channels:    o.Int64List("channels"),
		Description: o.NullableString("description"),
		Tag:         o.NullableInt64(domain.TariffTagField),
	}
}

// decodeAdminChannel reads a channel body. A null logo_url, description,
// text_name or time_shift_depth clears it; categories is a list of
// category ids ([] clears it).
func decodeAdminChannel(o *wire.Object) command.ChannelFields {
	return command.ChannelFields{
		Name:           o.String("name"),
		Number:         adminInt(o, "number", false, 0, domain.MaxChannelNumber),
		LogoURL:        o.NullableString("logo_url"),
		Description:    o.NullableString("description"),
		Categories:     o.Int64List("categories"),
		TextName:       o.NullableString("text_name"),
		Enabled:        o.Bool("enabled"),
		TimeShiftDepth: adminInt(o, "time_shift_depth", true, 0, domain.MaxTimeShiftDepth),
	}
}

// decodeAdminCategory reads a category or region body.
func decodeAdminCategory(o *wire.Object) command.CategoryFields {
	return command.CategoryFields{Name: o.String("name")}
}

// decodeAdminAdmin reads an administrator body. provider null (or absent
// on create) makes a superadmin.
func decodeAdminAdmin(o *wire.Object) command.AdminFields {
	return command.AdminFields{
		Login:    o.String("login"),
		Password: o.String("password"),
		Provider: o.NullableInt64("provider"),
	}
}

// adminInt reads an integer field that the domain keeps as an int, within
// [lo, hi]; a value outside is recorded as the field's error.
func adminInt(o *wire.Object, name string, nullable bool, lo, hi int64) wire.Optional[int] {
	var v wire.Optional[int64]
	if nullable {
		v = o.NullableInt64(name)
	} else {
		v = o.Int64(name)
	}
	n, ok := v.Get()
	switch {
	case !ok:
		return wire.Optional[int]{Present: v.Present, Null: v.Null}
	case n < lo || n > hi || n > math.MaxInt || n < math.MinInt:
		o.Fail(name, fmt.Sprintf("must be between %d and %d", lo, hi))
		return wire.Optional[int]{}
	}
	return wire.Some(int(n))
}

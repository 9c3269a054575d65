package httpapi

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// The catalog of the Provider API, under TVIP's paths and field names (the
// ones its Python SDK reads): tariffs (/tarifs), their tags (/tarif_tags),
// providers, channels, channel categories (/favorite_group), regions and
// device types. Every list takes quick_search, a case-insensitive substring
// of the object's name.

// mountProviderCatalog adds the catalog collections whose reads api has.
func mountProviderCatalog(g *gin.RouterGroup, api ProviderAPI, idem Idempotency) {
	if api.TariffReads != nil {
		providerTarifs(api, idem).mount(g)
	}
	if api.TariffTagReads != nil {
		providerTarifTags(api, idem).mount(g)
	}
	if api.ProviderReads != nil {
		providerProviders(api).mount(g)
	}
	if api.ChannelReads != nil {
		providerChannels(api).mount(g)
	}
	if api.FavoriteGroupReads != nil {
		providerFavoriteGroups(api).mount(g)
	}
	if api.RegionReads != nil {
		providerRegions(api).mount(g)
	}
	if api.DeviceTypeReads != nil {
		providerDeviceTypes(api, idem).mount(g)
	}
}

// providerSortPage is providerPage with the list's sort keys renamed from
// this API's field names to the read model's (display_number → number).
func providerSortPage(q ListQuery, names map[string]string) readmodel.Page {
	p := providerPage(q)
	for i, k := range p.Sort {
		if name, ok := names[k.Field]; ok {
			p.Sort[i].Field = name
		}
	}
	return p
}

// providerEnabled returns the enabled filter, nil when not given.
func providerEnabled(q ListQuery) *bool {
	if v, ok := q.Bool("enabled"); ok {
		return &v
	}
	return nil
}

// deletes returns the Delete of w, nil when w is.
func deletes[T, F any](w Writes[T, F]) func(context.Context, app.Caller, int64) (T, error) {
	if w == nil {
		return nil
	}
	return w.Delete
}

// renderJSON is the answer to a create: the view as JSON.
func renderJSON[T, V any](view func(T) V) func(T) ([]byte, error) {
	return func(v T) ([]byte, error) { return json.Marshal(view(v)) }
}

// --- /tarifs

// providerTarifList is what GET /api/provider/tarifs accepts.
var providerTarifList = ListSpec{
	Sort: []string{"id", "tarif_name", "provider"},
	Filters: map[string]FilterType{
		"channel":   FilterInt,
		"enabled":   FilterBool,
		"provider":  FilterInt,
		"tarif_tag": FilterInt,
	},
}

// providerTarifJSON is a tariff as TVIP's SDK reads it (id, tarif_name,
// provider, tarif_tag, enabled), with its channels and description.
type providerTarifJSON struct {
	ID          int64   `json:"id"`
	TarifName   string  `json:"tarif_name"`
	Provider    int64   `json:"provider"`
	TarifTag    *int64  `json:"tarif_tag"`
	Enabled     bool    `json:"enabled"`
	Channels    []int64 `json:"channels"`
	Description *string `json:"description"`
}

func providerTarif(t domain.Tariff) providerTarifJSON {
	return providerTarifJSON{
		ID:          t.ID,
		TarifName:   t.Name,
		Provider:    t.Provider,
		TarifTag:    t.Tag,
		Enabled:     t.Enabled,
		Channels:    adminIDs(t.Channels),
		Description: adminText(t.Description),
	}
}

// providerTarifs is /tarifs, the Provider API's view of the tariffs the
// Admin API calls /tariffs. A provider-scoped admin writes its own
// provider's, which a create without provider is for.
func providerTarifs(api ProviderAPI, idem Idempotency) providerResource[domain.Tariff, command.TariffFields, readmodel.TariffQuery, providerTarifJSON] {
	return providerResource[domain.Tariff, command.TariffFields, readmodel.TariffQuery, providerTarifJSON]{
		path: "/tarifs", what: "tarif", spec: providerTarifList, idem: idem,
		reads: api.TariffReads, writes: api.Tariffs, del: deletes(api.Tariffs),
		query: func(q ListQuery, bad map[string]string) readmodel.TariffQuery {
			return readmodel.TariffQuery{
				Page:     providerSortPage(q, map[string]string{"tarif_name": "name"}),
				Provider: providerFilterID(q, "provider", bad),
				Enabled:  providerEnabled(q),
				Channel:  providerFilterID(q, "channel", bad),
				Tag:      providerFilterID(q, "tarif_tag", bad),
				Search:   q.QuickSearch,
			}
		},
		normalize: func(c app.Caller, f command.TariffFields) command.TariffFields { return f.WithDefaults(c) },
		fields:    map[string]string{"name": "tarif_name"},
		decode:    readProviderTarif, view: providerTarif, render: renderJSON(providerTarif),
	}
}

// readProviderTarif reads a tariff body. tarif_tag null clears the tag;
// "name" is taken when "tarif_name" is absent (the Admin API's spelling).
func readProviderTarif(obj *wire.Object) command.TariffFields {
	if !obj.Has("tarif_name") && obj.Has("name") {
		return decodeTariff(obj, "name")
	}
	return decodeTariff(obj, "tarif_name")
}

// --- /tarif_tags

// providerTarifTagList is what GET /api/provider/tarif_tags accepts.
var providerTarifTagList = ListSpec{
	Sort:    readmodel.TariffTagSortFields,
	Filters: map[string]FilterType{"enabled": FilterBool, "provider": FilterInt},
}

// providerTarifTagJSON is a tariff tag.
type providerTarifTagJSON struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Enabled  bool   `json:"enabled"`
	Provider int64  `json:"provider"`
	Position int    `json:"position"`
}

func providerTarifTag(t domain.TariffTag) providerTarifTagJSON {
	return providerTarifTagJSON{ID: t.ID, Name: t.Name, Enabled: t.Enabled, Provider: t.Provider, Position: t.Position}
}

// providerTarifTags is /tarif_tags. Deleting a tag that tariffs name is
// refused (409 naming them).
func providerTarifTags(api ProviderAPI, idem Idempotency) providerResource[domain.TariffTag, command.TariffTagFields, readmodel.TariffTagQuery, providerTarifTagJSON] {
	return providerResource[domain.TariffTag, command.TariffTagFields, readmodel.TariffTagQuery, providerTarifTagJSON]{
		path: "/tarif_tags", what: "tarif_tag", spec: providerTarifTagList, idem: idem,
		reads: api.TariffTagReads, writes: api.TariffTags, del: deletes(api.TariffTags),
		query: func(q ListQuery, bad map[string]string) readmodel.TariffTagQuery {
			return readmodel.TariffTagQuery{
				Page:     providerPage(q),
				Provider: providerFilterID(q, "provider", bad),
				Enabled:  providerEnabled(q),
				Search:   q.QuickSearch,
			}
		},
		normalize: func(c app.Caller, f command.TariffTagFields) command.TariffTagFields { return f.WithDefaults(c) },
		decode:    readProviderTarifTag, view: providerTarifTag, render: renderJSON(providerTarifTag),
	}
}

// readProviderTarifTag reads a tariff tag body; position null means
// unchanged (0 on create).
func readProviderTarifTag(obj *wire.Object) command.TariffTagFields {
	return command.TariffTagFields{
		Provider: obj.Int64("provider"),
		Name:     obj.String("name"),
		Enabled:  obj.Bool("enabled"),
		Position: domain.Optional[int](adminInt(obj, "position", false, 0, domain.MaxTariffTagPosition)),
	}
}

// --- /providers

// providerProviderList is what GET /api/provider/providers accepts.
var providerProviderList = ListSpec{
	Sort:    []string{"id", "provider_name"},
	Filters: map[string]FilterType{"enabled": FilterBool},
}

// providerProviderJSON is a provider as TVIP's SDK reads it. The billing
// settings, and their secret, are the Admin API's only.
type providerProviderJSON struct {
	ID                     int64   `json:"id"`
	RegionTag              *int64  `json:"region_tag"`
	ProviderName           string  `json:"provider_name"`
	ProviderComment        *string `json:"provider_comment"`
	Enabled                bool    `json:"enabled"`
	LogoURL                *string `json:"logo_url"`
	DevicesPerAccountLimit *int    `json:"devices_per_account_limit"`
}

func providerProvider(p domain.Provider) providerProviderJSON {
	return providerProviderJSON{
		ID:                     p.ID,
		RegionTag:              p.RegionTag,
		ProviderName:           p.Name,
		ProviderComment:        adminText(p.Comment),
		Enabled:                p.Enabled,
		LogoURL:                adminText(p.LogoURL),
		DevicesPerAccountLimit: p.DevicesPerAccountLimit,
	}
}

// providerProviders is /providers: read only (providers are written
// through the Admin API). A provider-scoped admin sees its own only.
func providerProviders(api ProviderAPI) providerResource[domain.Provider, struct{}, readmodel.ProviderQuery, providerProviderJSON] {
	return providerResource[domain.Provider, struct{}, readmodel.ProviderQuery, providerProviderJSON]{
		path: "/providers", what: "provider", spec: providerProviderList, reads: api.ProviderReads,
		query: func(q ListQuery, _ map[string]string) readmodel.ProviderQuery {
			return readmodel.ProviderQuery{
				Page:    providerSortPage(q, map[string]string{"provider_name": "name"}),
				Enabled: providerEnabled(q),
				Search:  q.QuickSearch,
			}
		},
		view: providerProvider,
	}
}

// --- /channels

// providerChannelList is what GET /api/provider/channels accepts.
var providerChannelList = ListSpec{
	Sort:    []string{"id", "name", "display_number"},
	Filters: map[string]FilterType{"tarif": FilterInt, "enabled": FilterBool},
}

// providerChannelJSON is a channel as TVIP's SDK reads it: display_number
// is the channel's number as a string, favorites its categories
// (/favorite_group ids), text_name its name when it has no other.
type providerChannelJSON struct {
	ID             int64   `json:"id"`
	Name           string  `json:"name"`
	TextName       string  `json:"text_name"`
	DisplayNumber  string  `json:"display_number"`
	LogoURL        *string `json:"logo_url"`
	Enabled        bool    `json:"enabled"`
	TimeShiftDepth *int    `json:"time_shift_depth"`
	Favorites      []int64 `json:"favorites"`
}

func providerChannel(ch domain.Channel) providerChannelJSON {
	text := ch.TextName
	if text == "" {
		text = ch.Name
	}
	return providerChannelJSON{
		ID:             ch.ID,
		Name:           ch.Name,
		TextName:       text,
		DisplayNumber:  strconv.Itoa(ch.Number),
		LogoURL:        adminText(ch.LogoURL),
		Enabled:        !ch.Disabled,
		TimeShiftDepth: ch.TimeShiftDepth,
		Favorites:      adminIDs(ch.Categories),
	}
}

// providerChannels is /channels: read only, for every admin; tarif lists
// the channels of one tariff the admin may see.
func providerChannels(api ProviderAPI) providerResource[domain.Channel, struct{}, readmodel.ChannelQuery, providerChannelJSON] {
	return providerResource[domain.Channel, struct{}, readmodel.ChannelQuery, providerChannelJSON]{
		path: "/channels", what: "channel", spec: providerChannelList, reads: api.ChannelReads,
		query: func(q ListQuery, bad map[string]string) readmodel.ChannelQuery {
			return readmodel.ChannelQuery{
				Page:    providerSortPage(q, map[string]string{"display_number": "number"}),
				Tariff:  providerFilterID(q, "tarif", bad),
				Enabled: providerEnabled(q),
				Search:  q.QuickSearch,
			}
		},
		view: providerChannel,
	}
}

// --- /favorite_group

// providerFavoriteGroupJSON is a channel category (a favourite group) with
// the channels that list it.
type providerFavoriteGroupJSON struct {
	ID       int64   `json:"id"`
	Name     string  `json:"name"`
	Channels []int64 `json:"channels"`
}

func providerFavoriteGroup(g query.FavoriteGroup) providerFavoriteGroupJSON {
	return providerFavoriteGroupJSON{ID: g.ID, Name: g.Name, Channels: adminIDs(g.Channels)}
}

// providerFavoriteGroups is /favorite_group: the channel categories, read
// only, for every admin.
func providerFavoriteGroups(api ProviderAPI) providerResource[query.FavoriteGroup, struct{}, readmodel.CategoryQuery, providerFavoriteGroupJSON] {
	return providerResource[query.FavoriteGroup, struct{}, readmodel.CategoryQuery, providerFavoriteGroupJSON]{
		path: "/favorite_group", what: "favorite group", spec: ListSpec{Sort: readmodel.CategorySortFields},
		reads: api.FavoriteGroupReads,
		query: func(q ListQuery, _ map[string]string) readmodel.CategoryQuery {
			return readmodel.CategoryQuery{Page: providerPage(q), Search: q.QuickSearch}
		},
		view: providerFavoriteGroup,
	}
}

// --- /regions

// providerRegionJSON is a region.
type providerRegionJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func providerRegion(r domain.Region) providerRegionJSON {
	return providerRegionJSON{ID: r.ID, Name: r.Name}
}

// providerRegions is /regions: read only (regions are written through the
// Admin API), for every admin.
func providerRegions(api ProviderAPI) providerResource[domain.Region, struct{}, readmodel.RegionQuery, providerRegionJSON] {
	return providerResource[domain.Region, struct{}, readmodel.RegionQuery, providerRegionJSON]{
		path: "/regions", what: "region", spec: ListSpec{Sort: readmodel.NamedSortFields}, reads: api.RegionReads,
		query: func(q ListQuery, _ map[string]string) readmodel.RegionQuery {
			return readmodel.RegionQuery{Page: providerPage(q), Search: q.QuickSearch}
		},
		view: providerRegion,
	}
}

// --- /device_types

// providerDeviceTypeJSON is a device type.
type providerDeviceTypeJSON struct {
	ID         int64  `json:"id"`
	DeviceType string `json:"device_type"`
}

func providerDeviceType(d domain.DeviceType) providerDeviceTypeJSON {
	return providerDeviceTypeJSON{ID: d.ID, DeviceType: d.Name}
}

// providerDeviceTypes is /device_types: every admin reads them, only
// superadmins write them (403 for a provider-scoped admin).
func providerDeviceTypes(api ProviderAPI, idem Idempotency) providerResource[domain.DeviceType, command.NameFields, readmodel.DeviceTypeQuery, providerDeviceTypeJSON] {
	return providerResource[domain.DeviceType, command.NameFields, readmodel.DeviceTypeQuery, providerDeviceTypeJSON]{
		path: "/device_types", what: "device_type", idem: idem,
		spec:  ListSpec{Sort: []string{"id", "device_type"}},
		reads: api.DeviceTypeReads, writes: api.DeviceTypes, del: deletes(api.DeviceTypes),
		query: func(q ListQuery, _ map[string]string) readmodel.DeviceTypeQuery {
			return readmodel.DeviceTypeQuery{Page: providerSortPage(q, map[string]string{"device_type": "name"}), Search: q.QuickSearch}
		},
		decode: readProviderDeviceType, view: providerDeviceType, render: renderJSON(providerDeviceType),
	}
}

// readProviderDeviceType reads a device type body.
func readProviderDeviceType(obj *wire.Object) command.NameFields {
	return command.NameFields{Name: obj.String("device_type")}
}

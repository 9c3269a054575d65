package domain_test

import (
	"strings"
	"testing"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

// Given–when–then specifications of the catalog aggregates the Provider
// API's SDK reads beside tariffs and channels: tariff tags, regions and
// device types, and the fields tariffs, providers and channels gained for
// it.

type (
	tagCase        = domaintest.Case[domain.TariffTag, domain.TariffTagCommand]
	regionCase     = domaintest.Case[domain.Region, domain.RegionCommand]
	deviceTypeCase = domaintest.Case[domain.DeviceType, domain.DeviceTypeCommand]
)

var tagCreated = domain.TariffTagCreated{TagID: 4, Provider: 7, Name: "Sport", Enabled: true, Position: 2}

func TestTariffTagCommands(t *testing.T) {
	deleted := domain.TariffTagDeleted{TagID: 4}
	spec := domaintest.For(domain.TariffTagDecider()).Codec(eventRegistry())
	spec.Run(t,
		tagCase{Name: "create, enabled by default", When: domain.CreateTariffTag{ID: 4, Provider: 7, Name: "Sport", Position: 2},
			Then: []domain.Event{tagCreated}},
		tagCase{Name: "create disabled", When: domain.CreateTariffTag{ID: 5, Provider: 7, Name: "Old", Enabled: ptr(false)},
			Then: []domain.Event{domain.TariffTagCreated{TagID: 5, Provider: 7, Name: "Old"}}},
		tagCase{Name: "create twice", Given: []domain.Event{tagCreated}, When: domain.CreateTariffTag{ID: 4, Provider: 7, Name: "x"}, Err: domain.ErrAlreadyExists},
		tagCase{Name: "update", Given: []domain.Event{tagCreated},
			When: domain.UpdateTariffTag{ID: 4, Name: domain.Some("Sports"), Enabled: domain.Some(false), Position: domain.Some(0)},
			Then: []domain.Event{domain.TariffTagUpdated{TagID: 4, Name: domain.Some("Sports"), Enabled: domain.Some(false), Position: domain.Some(0)}}},
		tagCase{Name: "a full re-send appends nothing", Given: []domain.Event{tagCreated},
			When: domain.UpdateTariffTag{ID: 4, Provider: domain.Some[int64](7), Name: domain.Some("Sport"), Enabled: domain.Some(true), Position: domain.Some(2)}},
		tagCase{Name: "update unknown", When: domain.UpdateTariffTag{ID: 4, Name: domain.Some("x")}, Err: domain.ErrNotFound},
		tagCase{Name: "delete", Given: []domain.Event{tagCreated}, When: domain.DeleteTariffTag{ID: 4}, Then: []domain.Event{deleted}},
		tagCase{Name: "delete deleted", Given: []domain.Event{tagCreated, deleted}, When: domain.DeleteTariffTag{ID: 4}, Err: domain.ErrNotFound},
		tagCase{Name: "update deleted", Given: []domain.Event{tagCreated, deleted}, When: domain.UpdateTariffTag{ID: 4, Position: domain.Some(1)}, Err: domain.ErrNotFound},
	)
	spec.Given(tagCreated, domain.TariffTagUpdated{TagID: 4, Enabled: domain.Some(false), Position: domain.Some(9)}).
		ThenState(t, domain.TariffTag{ID: 4, Provider: 7, Name: "Sport", Position: 9})
}

func TestTariffTagValidation(t *testing.T) {
	d := domain.TariffTagDecider()
	for _, tt := range []struct {
		name   string
		cmd    domain.TariffTagCommand
		fields []string
	}{
		{"empty create", domain.CreateTariffTag{Position: -1}, []string{"id", "provider", "name", "position"}},
		{"long name", domain.CreateTariffTag{ID: 4, Provider: 7, Name: strings.Repeat("n", domain.MaxTariffTagNameLen+1)}, []string{"name"}},
		{"position too large", domain.UpdateTariffTag{ID: 4, Position: domain.Some(domain.MaxTariffTagPosition + 1)}, []string{"position"}},
		{"provider changes", domain.UpdateTariffTag{ID: 4, Provider: domain.Some[int64](8)}, []string{"provider"}},
		{"null name and enabled", domain.UpdateTariffTag{ID: 4, Name: domain.Null[string](), Enabled: domain.Null[bool]()}, []string{"name", "enabled"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, decideErr(t, d, tt.cmd, tagCreated), tt.fields...)
		})
	}
}

func TestRegionCommands(t *testing.T) {
	created := domain.RegionCreated{RegionID: 2, Name: "North"}
	deleted := domain.RegionDeleted{RegionID: 2}
	spec := domaintest.For(domain.RegionDecider()).Codec(eventRegistry())
	spec.Run(t,
		regionCase{Name: "create", When: domain.CreateRegion{ID: 2, Name: "North"}, Then: []domain.Event{created}},
		regionCase{Name: "create twice", Given: []domain.Event{created}, When: domain.CreateRegion{ID: 2, Name: "North"}, Err: domain.ErrAlreadyExists},
		regionCase{Name: "create after delete", Given: []domain.Event{created, deleted}, When: domain.CreateRegion{ID: 2, Name: "North"}, Err: domain.ErrAlreadyExists},
		regionCase{Name: "rename", Given: []domain.Event{created}, When: domain.UpdateRegion{ID: 2, Name: domain.Some("South")},
			Then: []domain.Event{domain.RegionRenamed{RegionID: 2, Name: "South"}}},
		regionCase{Name: "same name appends nothing", Given: []domain.Event{created}, When: domain.UpdateRegion{ID: 2, Name: domain.Some("North")}},
		regionCase{Name: "null name is refused", Given: []domain.Event{created}, When: domain.UpdateRegion{ID: 2, Name: domain.Null[string]()}, Err: domain.ErrValidation},
		regionCase{Name: "bad create", When: domain.CreateRegion{ID: 2, Name: "North\n"}, Err: domain.ErrValidation},
		regionCase{Name: "rename unknown", When: domain.UpdateRegion{ID: 2, Name: domain.Some("x")}, Err: domain.ErrNotFound},
		regionCase{Name: "delete", Given: []domain.Event{created}, When: domain.DeleteRegion{ID: 2}, Then: []domain.Event{deleted}},
		regionCase{Name: "delete deleted", Given: []domain.Event{created, deleted}, When: domain.DeleteRegion{ID: 2}, Err: domain.ErrNotFound},
	)
	spec.Given(created, domain.RegionRenamed{RegionID: 2, Name: "East"}).ThenState(t, domain.Region{ID: 2, Name: "East"})
	wantFields(t, decideErr(t, domain.RegionDecider(), domain.RegionCommand(domain.CreateRegion{Name: ""})), "id", "name")
}

func TestDeviceTypeCommands(t *testing.T) {
	created := domain.DeviceTypeCreated{DeviceTypeID: 3, Name: "tvip_s605"}
	deleted := domain.DeviceTypeDeleted{DeviceTypeID: 3}
	spec := domaintest.For(domain.DeviceTypeDecider()).Codec(eventRegistry())
	spec.Run(t,
		deviceTypeCase{Name: "create", When: domain.CreateDeviceType{ID: 3, Name: "tvip_s605"}, Then: []domain.Event{created}},
		deviceTypeCase{Name: "create twice", Given: []domain.Event{created}, When: domain.CreateDeviceType{ID: 3, Name: "x"}, Err: domain.ErrAlreadyExists},
		deviceTypeCase{Name: "rename", Given: []domain.Event{created}, When: domain.UpdateDeviceType{ID: 3, Name: domain.Some("android")},
			Then: []domain.Event{domain.DeviceTypeRenamed{DeviceTypeID: 3, Name: "android"}}},
		deviceTypeCase{Name: "re-send appends nothing", Given: []domain.Event{created}, When: domain.UpdateDeviceType{ID: 3, Name: domain.Some("tvip_s605")}},
		deviceTypeCase{Name: "absent name appends nothing", Given: []domain.Event{created}, When: domain.UpdateDeviceType{ID: 3}},
		deviceTypeCase{Name: "rename unknown", When: domain.UpdateDeviceType{ID: 3, Name: domain.Some("x")}, Err: domain.ErrNotFound},
		deviceTypeCase{Name: "delete", Given: []domain.Event{created}, When: domain.DeleteDeviceType{ID: 3}, Then: []domain.Event{deleted}},
		deviceTypeCase{Name: "rename deleted", Given: []domain.Event{created, deleted}, When: domain.UpdateDeviceType{ID: 3, Name: domain.Some("x")}, Err: domain.ErrNotFound},
	)
	spec.Given(created, domain.DeviceTypeRenamed{DeviceTypeID: 3, Name: "tv"}).ThenState(t, domain.DeviceType{ID: 3, Name: "tv"})
	// The device type's name is its wire field device_type.
	d := domain.DeviceTypeDecider()
	wantFields(t, decideErr(t, d, domain.DeviceTypeCommand(domain.CreateDeviceType{ID: 3, Name: " padded"})), "device_type")
	wantFields(t, decideErr(t, d, domain.DeviceTypeCommand(domain.UpdateDeviceType{ID: 3, Name: domain.Some("")}), created), "device_type")
}

func TestTariffTagField(t *testing.T) {
	spec := domaintest.For(domain.TariffDecider()).Codec(eventRegistry())
	tagged := domain.TariffCreated{TariffID: 5, Provider: 7, Name: "Basic", Enabled: true, Channels: []int64{}, Tag: ptr[int64](4)}
	spec.Run(t,
		tariffCase{Name: "create with a tag", When: domain.CreateTariff{ID: 5, Provider: 7, Name: "Basic", Tag: ptr[int64](4)},
			Then: []domain.Event{tagged}},
		tariffCase{Name: "change the tag", Given: []domain.Event{tagged}, When: domain.UpdateTariff{ID: 5, Tag: domain.Some[int64](6)},
			Then: []domain.Event{domain.TariffUpdated{TariffID: 5, Tag: domain.Some[int64](6)}}},
		tariffCase{Name: "null clears the tag", Given: []domain.Event{tagged}, When: domain.UpdateTariff{ID: 5, Tag: domain.Null[int64]()},
			Then: []domain.Event{domain.TariffUpdated{TariffID: 5, Tag: domain.Null[int64]()}}},
		tariffCase{Name: "the same tag appends nothing", Given: []domain.Event{tagged}, When: domain.UpdateTariff{ID: 5, Tag: domain.Some[int64](4)}},
		tariffCase{Name: "null on no tag appends nothing", Given: []domain.Event{tariffCreated}, When: domain.UpdateTariff{ID: 5, Tag: domain.Null[int64]()}},
	)
	spec.Given(tagged, domain.TariffUpdated{TariffID: 5, Tag: domain.Null[int64]()}).
		ThenState(t, domain.Tariff{ID: 5, Provider: 7, Name: "Basic", Enabled: true, Channels: []int64{}})
	d := domain.TariffDecider()
	wantFields(t, decideErr(t, d, domain.TariffCommand(domain.CreateTariff{ID: 5, Provider: 7, Name: "B", Tag: ptr[int64](0)})), domain.TariffTagField)
	wantFields(t, decideErr(t, d, domain.TariffCommand(domain.UpdateTariff{ID: 5, Tag: domain.Some[int64](-2)}), tagged), domain.TariffTagField)
}

func TestProviderCatalogFields(t *testing.T) {
	spec := domaintest.For(domain.ProviderDecider()).Codec(eventRegistry())
	full := domain.ProviderCreated{ProviderID: 7, Name: "Acme TV", Enabled: true, RegionTag: ptr[int64](2),
		Comment: "Main\nprovider", LogoURL: "https://cdn.example/acme.png"}
	spec.Run(t,
		providerCase{Name: "create with region, comment and logo",
			When: domain.CreateProvider{ID: 7, Name: "Acme TV", RegionTag: ptr[int64](2), Comment: "Main\nprovider", LogoURL: "https://cdn.example/acme.png"},
			Then: []domain.Event{full}},
		providerCase{Name: "null clears them", Given: []domain.Event{full},
			When: domain.UpdateProvider{ID: 7, RegionTag: domain.Null[int64](), Comment: domain.Null[string](), LogoURL: domain.Null[string]()},
			Then: []domain.Event{domain.ProviderUpdated{ProviderID: 7, RegionTag: domain.Null[int64](), Comment: domain.Some(""), LogoURL: domain.Some("")}}},
		providerCase{Name: "a re-send appends nothing", Given: []domain.Event{full},
			When: domain.UpdateProvider{ID: 7, RegionTag: domain.Some[int64](2), Comment: domain.Some("Main\nprovider"), LogoURL: domain.Some("https://cdn.example/acme.png")}},
		providerCase{Name: "nulls on unset fields append nothing", Given: []domain.Event{providerCreated},
			When: domain.UpdateProvider{ID: 7, RegionTag: domain.Null[int64](), Comment: domain.Null[string](), LogoURL: domain.Null[string]()}},
		providerCase{Name: "change the region", Given: []domain.Event{full}, When: domain.UpdateProvider{ID: 7, RegionTag: domain.Some[int64](3)},
			Then: []domain.Event{domain.ProviderUpdated{ProviderID: 7, RegionTag: domain.Some[int64](3)}}},
	)
	spec.Given(full, domain.ProviderUpdated{ProviderID: 7, RegionTag: domain.Null[int64](), Comment: domain.Some("c")}).
		ThenState(t, domain.Provider{ID: 7, Name: "Acme TV", Enabled: true, Comment: "c", LogoURL: "https://cdn.example/acme.png"})
	d := domain.ProviderDecider()
	wantFields(t, decideErr(t, d, domain.ProviderCommand(domain.CreateProvider{ID: 7, Name: "A", RegionTag: ptr[int64](0),
		Comment: strings.Repeat("c", domain.MaxProviderCommentLen+1), LogoURL: "ftp://x"})), domain.RegionTagField, "comment", "logo_url")
	wantFields(t, decideErr(t, d, domain.ProviderCommand(domain.UpdateProvider{ID: 7, LogoURL: domain.Some("/logo.png"), Comment: domain.Some("\x00")}), full),
		"logo_url", "comment")
}

func TestChannelCatalogFields(t *testing.T) {
	spec := domaintest.For(domain.ChannelDecider()).Codec(eventRegistry())
	full := domain.ChannelCreated{ChannelID: 3, Name: "News 24", Number: 24, Categories: []int64{}, TextName: "News 24 HD",
		Disabled: true, TimeShiftDepth: ptr(72)}
	spec.Run(t,
		channelCase{Name: "create disabled with a text name and time shift",
			When: domain.CreateChannel{ID: 3, Name: "News 24", Number: 24, TextName: "News 24 HD", Enabled: ptr(false), TimeShiftDepth: ptr(72)},
			Then: []domain.Event{full}},
		channelCase{Name: "created enabled by default", When: domain.CreateChannel{ID: 3, Name: "News 24", Number: 24, Enabled: ptr(true)},
			Then: []domain.Event{domain.ChannelCreated{ChannelID: 3, Name: "News 24", Number: 24, Categories: []int64{}}}},
		channelCase{Name: "enable, clear text name and time shift", Given: []domain.Event{full},
			When: domain.UpdateChannel{ID: 3, Enabled: domain.Some(true), TextName: domain.Null[string](), TimeShiftDepth: domain.Null[int]()},
			Then: []domain.Event{domain.ChannelUpdated{ChannelID: 3, Enabled: domain.Some(true), TextName: domain.Some(""), TimeShiftDepth: domain.Null[int]()}}},
		channelCase{Name: "a re-send appends nothing", Given: []domain.Event{full},
			When: domain.UpdateChannel{ID: 3, Enabled: domain.Some(false), TextName: domain.Some("News 24 HD"), TimeShiftDepth: domain.Some(72)}},
		channelCase{Name: "disable", Given: []domain.Event{channelCreated}, When: domain.UpdateChannel{ID: 3, Enabled: domain.Some(false)},
			Then: []domain.Event{domain.ChannelUpdated{ChannelID: 3, Enabled: domain.Some(false)}}},
	)
	// Channels created before they could be disabled are enabled.
	spec.Given(channelCreated).ThenState(t, domain.Channel{ID: 3, Name: "News 24", Number: 24, LogoURL: "https://cdn.example/24.png", Categories: []int64{1}})
	spec.Given(full, domain.ChannelUpdated{ChannelID: 3, Enabled: domain.Some(true), TimeShiftDepth: domain.Some(0)}).
		ThenState(t, domain.Channel{ID: 3, Name: "News 24", Number: 24, Categories: []int64{}, TextName: "News 24 HD", TimeShiftDepth: ptr(0)})
	d := domain.ChannelDecider()
	wantFields(t, decideErr(t, d, domain.ChannelCommand(domain.CreateChannel{ID: 3, Name: "n", TextName: " x", TimeShiftDepth: ptr(-1)})),
		"text_name", "time_shift_depth")
	wantFields(t, decideErr(t, d, domain.ChannelCommand(domain.UpdateChannel{ID: 3, Enabled: domain.Null[bool](), TimeShiftDepth: domain.Some(-5)}), full),
		"enabled", "time_shift_depth")
}

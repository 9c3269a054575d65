package domain_test

import (
	"strings"
	"testing"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

type tariffCase = domaintest.Case[domain.Tariff, domain.TariffCommand]

var tariffCreated = domain.TariffCreated{TariffID: 5, Provider: 7, Name: "Basic", Enabled: true, Channels: []int64{3, 1, 2}}

func TestTariffCommands(t *testing.T) {
	deleted := domain.TariffDeleted{TariffID: 5}
	spec := domaintest.For(domain.TariffDecider()).Codec(eventRegistry())
	spec.Run(t,
		tariffCase{
			Name: "create drops repeated channels, keeps order",
			When: domain.CreateTariff{ID: 5, Provider: 7, Name: "Basic", Channels: []int64{3, 1, 3, 2, 1}},
			Then: []domain.Event{tariffCreated},
		},
		tariffCase{
			Name: "create without channels",
			When: domain.CreateTariff{ID: 6, Provider: 7, Name: "Empty", Enabled: ptr(false), Description: "nothing\nyet"},
			Then: []domain.Event{domain.TariffCreated{TariffID: 6, Provider: 7, Name: "Empty", Channels: []int64{}, Description: "nothing\nyet"}},
		},
		tariffCase{Name: "create twice", Given: []domain.Event{tariffCreated}, When: domain.CreateTariff{ID: 5, Provider: 7, Name: "x"}, Err: domain.ErrAlreadyExists},
		tariffCase{
			Name:  "update",
			Given: []domain.Event{tariffCreated},
			When:  domain.UpdateTariff{ID: 5, Name: domain.Some("Basic+"), Channels: domain.Some([]int64{1, 1, 4}), Description: domain.Some("d")},
			Then:  []domain.Event{domain.TariffUpdated{TariffID: 5, Name: domain.Some("Basic+"), Channels: domain.Some([]int64{1, 4}), Description: domain.Some("d")}},
		},
		tariffCase{
			Name:  "null channels clears them",
			Given: []domain.Event{tariffCreated},
			When:  domain.UpdateTariff{ID: 5, Channels: domain.Null[[]int64]()},
			Then:  []domain.Event{domain.TariffUpdated{TariffID: 5, Channels: domain.Some([]int64{})}},
		},
		tariffCase{
			Name:  "resync appends nothing",
			Given: []domain.Event{tariffCreated},
			When: domain.UpdateTariff{ID: 5, Provider: domain.Some[int64](7), Name: domain.Some("Basic"), Enabled: domain.Some(true),
				Channels: domain.Some([]int64{3, 1, 2, 3}), Description: domain.Null[string]()},
		},
		tariffCase{Name: "update unknown", When: domain.UpdateTariff{ID: 5}, Err: domain.ErrNotFound},
		tariffCase{Name: "delete", Given: []domain.Event{tariffCreated}, When: domain.DeleteTariff{ID: 5}, Then: []domain.Event{deleted}},
		tariffCase{Name: "update deleted", Given: []domain.Event{tariffCreated, deleted}, When: domain.UpdateTariff{ID: 5, Name: domain.Some("x")}, Err: domain.ErrNotFound},
	)
	spec.Given(tariffCreated, domain.TariffUpdated{TariffID: 5, Enabled: domain.Some(false), Channels: domain.Some([]int64{9})}).
		ThenState(t, domain.Tariff{ID: 5, Provider: 7, Name: "Basic", Channels: []int64{9}})
}

func TestTariffValidation(t *testing.T) {
	d := domain.TariffDecider()
	tests := []struct {
		name   string
		cmd    domain.TariffCommand
		fields []string
	}{
		{"empty create", domain.CreateTariff{}, []string{"id", "provider", "name"}},
		{"long name and description", domain.CreateTariff{ID: 5, Provider: 7, Name: strings.Repeat("n", 101), Description: strings.Repeat("d", 1001)},
			[]string{"name", "description"}},
		{"channel id zero", domain.CreateTariff{ID: 5, Provider: 7, Name: "n", Channels: []int64{1, 0}}, []string{"channels"}},
		{"too many channels", domain.CreateTariff{ID: 5, Provider: 7, Name: "n", Channels: make([]int64, domain.MaxTariffChannels+1)}, []string{"channels"}},
		{"provider changes", domain.UpdateTariff{ID: 5, Provider: domain.Some[int64](8)}, []string{"provider"}},
		{"negative channel on update", domain.UpdateTariff{ID: 5, Channels: domain.Some([]int64{-1})}, []string{"channels"}},
		{"name null", domain.UpdateTariff{ID: 5, Name: domain.Null[string]()}, []string{"name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, decideErr(t, d, tt.cmd, tariffCreated), tt.fields...)
		})
	}
	// 45 characters is a recommendation only: longer names are accepted.
	long := domain.CreateTariff{ID: 6, Provider: 7, Name: strings.Repeat("n", domain.RecommendedTariffNameLen+1)}
	if _, err := d.Decide(d.Initial(), long, domaintest.Now()); err != nil {
		t.Errorf("name of %d characters: %v", domain.RecommendedTariffNameLen+1, err)
	}
}

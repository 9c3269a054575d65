package domain_test

import (
	"testing"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

type channelCase = domaintest.Case[domain.Channel, domain.ChannelCommand]
type categoryCase = domaintest.Case[domain.Category, domain.CategoryCommand]

var channelCreated = domain.ChannelCreated{ChannelID: 3, Name: "News 24", Number: 24, LogoURL: "https://cdn.example/24.png", Categories: []int64{1}}

func TestChannelCommands(t *testing.T) {
	deleted := domain.ChannelDeleted{ChannelID: 3}
	spec := domaintest.For(domain.ChannelDecider()).Codec(eventRegistry())
	spec.Run(t,
		channelCase{
			Name: "create",
			When: domain.CreateChannel{ID: 3, Name: "News 24", Number: 24, LogoURL: "https://cdn.example/24.png", Categories: []int64{1, 1}},
			Then: []domain.Event{channelCreated},
		},
		channelCase{Name: "create twice", Given: []domain.Event{channelCreated}, When: domain.CreateChannel{ID: 3, Name: "x"}, Err: domain.ErrAlreadyExists},
		channelCase{
			Name:  "update",
			Given: []domain.Event{channelCreated},
			When:  domain.UpdateChannel{ID: 3, Number: domain.Some(0), LogoURL: domain.Null[string](), Categories: domain.Some([]int64{2, 1})},
			Then:  []domain.Event{domain.ChannelUpdated{ChannelID: 3, Number: domain.Some(0), LogoURL: domain.Some(""), Categories: domain.Some([]int64{2, 1})}},
		},
		channelCase{
			Name:  "resync appends nothing",
			Given: []domain.Event{channelCreated},
			When: domain.UpdateChannel{ID: 3, Name: domain.Some("News 24"), Number: domain.Some(24), LogoURL: domain.Some("https://cdn.example/24.png"),
				Description: domain.Null[string](), Categories: domain.Some([]int64{1})},
		},
		channelCase{Name: "update unknown", When: domain.UpdateChannel{ID: 3}, Err: domain.ErrNotFound},
		channelCase{Name: "delete", Given: []domain.Event{channelCreated}, When: domain.DeleteChannel{ID: 3}, Then: []domain.Event{deleted}},
		channelCase{Name: "delete deleted", Given: []domain.Event{channelCreated, deleted}, When: domain.DeleteChannel{ID: 3}, Err: domain.ErrNotFound},
	)
	spec.Given(channelCreated, domain.ChannelUpdated{ChannelID: 3, Name: domain.Some("N"), Description: domain.Some("d")}).
		ThenState(t, domain.Channel{ID: 3, Name: "N", Number: 24, LogoURL: "https://cdn.example/24.png", Description: "d", Categories: []int64{1}})
}

func TestChannelValidation(t *testing.T) {
	d := domain.ChannelDecider()
	tests := []struct {
		name   string
		cmd    domain.ChannelCommand
		fields []string
	}{
		{"empty create", domain.CreateChannel{Number: -1}, []string{"id", "name", "number"}},
		{"relative logo", domain.CreateChannel{ID: 3, Name: "n", LogoURL: "logo.png"}, []string{"logo_url"}},
		{"bad category", domain.CreateChannel{ID: 3, Name: "n", Categories: []int64{0}}, []string{"categories"}},
		{"number null", domain.UpdateChannel{ID: 3, Number: domain.Null[int]()}, []string{"number"}},
		{"description with NUL", domain.UpdateChannel{ID: 3, Description: domain.Some("a\x00")}, []string{"description"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, decideErr(t, d, tt.cmd, channelCreated), tt.fields...)
		})
	}
}

func TestCategoryCommands(t *testing.T) {
	created := domain.CategoryCreated{CategoryID: 1, Name: "News"}
	deleted := domain.CategoryDeleted{CategoryID: 1}
	spec := domaintest.For(domain.CategoryDecider()).Codec(eventRegistry())
	spec.Run(t,
		categoryCase{Name: "create", When: domain.CreateCategory{ID: 1, Name: "News"}, Then: []domain.Event{created}},
		categoryCase{Name: "create twice", Given: []domain.Event{created}, When: domain.CreateCategory{ID: 1, Name: "News"}, Err: domain.ErrAlreadyExists},
		categoryCase{Name: "rename", Given: []domain.Event{created}, When: domain.UpdateCategory{ID: 1, Name: domain.Some("Sport")},
			Then: []domain.Event{domain.CategoryRenamed{CategoryID: 1, Name: "Sport"}}},
		categoryCase{Name: "same name", Given: []domain.Event{created}, When: domain.UpdateCategory{ID: 1, Name: domain.Some("News")}},
		categoryCase{Name: "no name", Given: []domain.Event{created}, When: domain.UpdateCategory{ID: 1}},
		categoryCase{Name: "empty name", Given: []domain.Event{created}, When: domain.UpdateCategory{ID: 1, Name: domain.Some("")}, Err: domain.ErrValidation},
		categoryCase{Name: "bad create", When: domain.CreateCategory{ID: 1, Name: " News"}, Err: domain.ErrValidation},
		categoryCase{Name: "delete", Given: []domain.Event{created}, When: domain.DeleteCategory{ID: 1}, Then: []domain.Event{deleted}},
		categoryCase{Name: "rename deleted", Given: []domain.Event{created, deleted}, When: domain.UpdateCategory{ID: 1, Name: domain.Some("x")}, Err: domain.ErrNotFound},
	)
	spec.Given(created, domain.CategoryRenamed{CategoryID: 1, Name: "Sport"}).ThenState(t, domain.Category{ID: 1, Name: "Sport"})
	wantFields(t, decideErr(t, domain.CategoryDecider(), domain.CategoryCommand(domain.CreateCategory{})), "id", "name")
}

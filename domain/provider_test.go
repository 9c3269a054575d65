package domain_test

import (
	"strings"
	"testing"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

type providerCase = domaintest.Case[domain.Provider, domain.ProviderCommand]

var providerCreated = domain.ProviderCreated{ProviderID: 7, Name: "Acme TV", Enabled: true}

var providerWithBilling = domain.ProviderCreated{
	ProviderID: 7, Name: "Acme TV", Enabled: true, DevicesPerAccountLimit: ptr(3), FreeTariff: ptr[int64](11),
	BillingResolve: true, BillingURL: "https://billing.example/api", BillingToken: "s3cret",
}

func providerSpec() domaintest.Spec[domain.Provider, domain.ProviderCommand] {
	return domaintest.For(domain.ProviderDecider()).Codec(eventRegistry())
}

func TestProviderCommands(t *testing.T) {
	deleted := domain.ProviderDeleted{ProviderID: 7}
	providerSpec().Run(t,
		providerCase{
			Name: "create, enabled by default",
			When: domain.CreateProvider{ID: 7, Name: "Acme TV"},
			Then: []domain.Event{providerCreated},
		},
		providerCase{
			Name: "create with everything",
			When: domain.CreateProvider{ID: 7, Name: "Acme TV", Enabled: ptr(true), DevicesPerAccountLimit: ptr(3), FreeTariff: ptr[int64](11),
				Billing: domain.Billing{Resolve: true, URL: "https://billing.example/api", Token: "s3cret"}},
			Then: []domain.Event{providerWithBilling},
		},
		providerCase{
			Name: "create disabled",
			When: domain.CreateProvider{ID: 8, Name: "B", Enabled: ptr(false)},
			Then: []domain.Event{domain.ProviderCreated{ProviderID: 8, Name: "B"}},
		},
		providerCase{Name: "create twice", Given: []domain.Event{providerCreated}, When: domain.CreateProvider{ID: 7, Name: "x"}, Err: domain.ErrAlreadyExists},
		providerCase{
			Name:  "partial update",
			Given: []domain.Event{providerCreated},
			When:  domain.UpdateProvider{ID: 7, Name: domain.Some("Acme"), DevicesPerAccountLimit: domain.Some(2)},
			Then:  []domain.Event{domain.ProviderUpdated{ProviderID: 7, Name: domain.Some("Acme"), DevicesPerAccountLimit: domain.Some(2)}},
		},
		providerCase{
			Name:  "nullable fields set to null",
			Given: []domain.Event{providerWithBilling},
			When:  domain.UpdateProvider{ID: 7, DevicesPerAccountLimit: domain.Null[int](), FreeTariff: domain.Null[int64]()},
			Then:  []domain.Event{domain.ProviderUpdated{ProviderID: 7, DevicesPerAccountLimit: domain.Null[int](), FreeTariff: domain.Null[int64]()}},
		},
		providerCase{
			Name:  "turn billing on",
			Given: []domain.Event{providerCreated},
			When: domain.UpdateProvider{ID: 7, Billing: domain.BillingPatch{Resolve: domain.Some(true),
				URL: domain.Some("http://10.0.0.1:8080/"), Token: domain.Some("t")}},
			Then: []domain.Event{domain.ProviderUpdated{ProviderID: 7, BillingResolve: domain.Some(true),
				BillingURL: domain.Some("http://10.0.0.1:8080/"), BillingToken: domain.Some("t")}},
		},
		providerCase{
			Name:  "turn billing off keeps url and token",
			Given: []domain.Event{providerWithBilling},
			When:  domain.UpdateProvider{ID: 7, Billing: domain.BillingPatch{Resolve: domain.Some(false)}},
			Then:  []domain.Event{domain.ProviderUpdated{ProviderID: 7, BillingResolve: domain.Some(false)}},
		},
		providerCase{
			Name:  "null url and token clear them once billing is off",
			Given: []domain.Event{providerWithBilling, domain.ProviderUpdated{ProviderID: 7, BillingResolve: domain.Some(false)}},
			When:  domain.UpdateProvider{ID: 7, Billing: domain.BillingPatch{URL: domain.Null[string](), Token: domain.Null[string]()}},
			Then:  []domain.Event{domain.ProviderUpdated{ProviderID: 7, BillingURL: domain.Some(""), BillingToken: domain.Some("")}},
		},
		providerCase{
			Name:  "same values append nothing",
			Given: []domain.Event{providerWithBilling},
			When: domain.UpdateProvider{ID: 7, Name: domain.Some("Acme TV"), Enabled: domain.Some(true), DevicesPerAccountLimit: domain.Some(3),
				FreeTariff: domain.Some[int64](11), Billing: domain.BillingPatch{Resolve: domain.Some(true),
					URL: domain.Some("https://billing.example/api"), Token: domain.Some("s3cret")}},
		},
		providerCase{Name: "update unknown", When: domain.UpdateProvider{ID: 7, Name: domain.Some("x")}, Err: domain.ErrNotFound},
		providerCase{Name: "delete", Given: []domain.Event{providerCreated}, When: domain.DeleteProvider{ID: 7}, Then: []domain.Event{deleted}},
		providerCase{Name: "update deleted", Given: []domain.Event{providerCreated, deleted}, When: domain.UpdateProvider{ID: 7, Name: domain.Some("x")}, Err: domain.ErrNotFound},
		providerCase{Name: "delete deleted", Given: []domain.Event{providerCreated, deleted}, When: domain.DeleteProvider{ID: 7}, Err: domain.ErrNotFound},
		providerCase{Name: "create deleted", Given: []domain.Event{providerCreated, deleted}, When: domain.CreateProvider{ID: 7, Name: "x"}, Err: domain.ErrAlreadyExists},
	)

	providerSpec().Given(providerWithBilling, domain.ProviderUpdated{ProviderID: 7, Name: domain.Some("New"), FreeTariff: domain.Null[int64]()}).
		ThenState(t, domain.Provider{ID: 7, Name: "New", Enabled: true, DevicesPerAccountLimit: ptr(3),
			Billing: domain.Billing{Resolve: true, URL: "https://billing.example/api", Token: "s3cret"}})
}

func TestProviderValidation(t *testing.T) {
	d := domain.ProviderDecider()
	tests := []struct {
		name   string
		cmd    domain.ProviderCommand
		given  []domain.Event
		fields []string
	}{
		{"empty create", domain.CreateProvider{}, nil, []string{"id", "name"}},
		{"name too long", domain.CreateProvider{ID: 7, Name: strings.Repeat("n", 101)}, nil, []string{"name"}},
		{"negative limit, bad free tariff", domain.CreateProvider{ID: 7, Name: "n", DevicesPerAccountLimit: ptr(-1), FreeTariff: ptr[int64](0)}, nil,
			[]string{"devices_per_account_limit", "free_tariff"}},
		{"resolve without url and token", domain.CreateProvider{ID: 7, Name: "n", Billing: domain.Billing{Resolve: true}}, nil,
			[]string{"billing.url", "billing.token"}},
		{"relative url", domain.CreateProvider{ID: 7, Name: "n", Billing: domain.Billing{URL: "/api"}}, nil, []string{"billing.url"}},
		{"ftp url", domain.CreateProvider{ID: 7, Name: "n", Billing: domain.Billing{Resolve: true, URL: "ftp://x/", Token: "t"}}, nil, []string{"billing.url"}},
		{"update name null", domain.UpdateProvider{ID: 7, Name: domain.Null[string]()}, []domain.Event{providerCreated}, []string{"name"}},
		{"update resolve null", domain.UpdateProvider{ID: 7, Billing: domain.BillingPatch{Resolve: domain.Null[bool]()}}, []domain.Event{providerCreated}, []string{"billing.resolve"}},
		{"resolve on without url", domain.UpdateProvider{ID: 7, Billing: domain.BillingPatch{Resolve: domain.Some(true), Token: domain.Some("t")}},
			[]domain.Event{providerCreated}, []string{"billing.url"}},
		{"clear the token while resolving", domain.UpdateProvider{ID: 7, Billing: domain.BillingPatch{Token: domain.Null[string]()}},
			[]domain.Event{providerWithBilling}, []string{"billing.token"}},
		{"bad limit", domain.UpdateProvider{ID: 7, DevicesPerAccountLimit: domain.Some(-1)}, []domain.Event{providerCreated}, []string{"devices_per_account_limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, decideErr(t, d, tt.cmd, tt.given...), tt.fields...)
		})
	}
}

func TestProviderStreams(t *testing.T) {
	for _, c := range []domain.ProviderCommand{domain.CreateProvider{ID: 7}, domain.UpdateProvider{ID: 7}, domain.DeleteProvider{ID: 7}} {
		if got := c.Stream(); got != "provider-7" {
			t.Errorf("%T.Stream() = %q", c, got)
		}
	}
}

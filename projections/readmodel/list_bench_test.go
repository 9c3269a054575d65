package readmodel

import (
	"testing"
)

// BenchmarkListAccounts1M times account list queries on 1,000,000 typical
// accounts of 10 providers (the page is consumed, as the HTTP layer does):
//
//	go test -run '^$' -bench ListAccounts1M ./projections/readmodel/
func BenchmarkListAccounts1M(b *testing.B) {
	m := New(nil)
	buildTypical(m, 1_000_000, 10)
	yes := true
	cases := []struct {
		name string
		q    AccountQuery
	}{
		{"first page", AccountQuery{Scope: AllProviders, Page: Page{Limit: 50}}},
		{"deep page", AccountQuery{Scope: AllProviders, Page: Page{Start: 900_000, Limit: 50}}},
		{"provider, last page desc", AccountQuery{Scope: ProviderScope(3), Page: Page{Start: 99_950, Limit: 50, Sort: []SortKey{{Field: "id", Desc: true}}}}},
		{"login", AccountQuery{Scope: AllProviders, Login: "user00500000"}},
		{"enabled filter", AccountQuery{Scope: AllProviders, Enabled: &yes, Page: Page{Start: 500_000, Limit: 50}}},
		{"quick_search", AccountQuery{Scope: AllProviders, QuickSearch: "sidorov 123", Page: Page{Limit: 50}}},
		{"provider sorted by login", AccountQuery{Scope: ProviderScope(3), Page: Page{Limit: 50, Sort: []SortKey{{Field: "login", Desc: true}}}}},
		{"all sorted by fullname", AccountQuery{Scope: AllProviders, Page: Page{Limit: 50, Sort: []SortKey{{Field: "fullname"}}}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				l, err := m.ListAccounts(c.q)
				if err != nil {
					b.Fatal(err)
				}
				for range l.Items {
				}
			}
		})
	}
	b.Run("subscriptions of a tariff", func(b *testing.B) {
		for b.Loop() {
			l := must(m.ListSubscriptions(SubscriptionQuery{Scope: ProviderScope(2), Tariff: 301, Page: Page{Limit: 50}}))
			for range l.Items {
			}
		}
	})
	b.Run("devices first page", func(b *testing.B) {
		for b.Loop() {
			l := must(m.ListDevices(DeviceQuery{Scope: AllProviders, Page: Page{Limit: 50}}))
			for range l.Items {
			}
		}
	})
}

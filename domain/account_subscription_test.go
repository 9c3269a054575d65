package domain_test

import (
	"slices"
	"testing"
	"time"

	"tvsm/domain"
)

// sub1 is an open-ended subscription to tariff 5 from January 1st; sub2 one
// to tariff 6 for January.
var (
	sub1 = domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 1, Tariff: 5, Start: day(1, 1)}
	sub2 = domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 2, Tariff: 6, Start: day(1, 1), Stop: ptr(day(2, 1))}
)

func TestAddSubscription(t *testing.T) {
	msk := time.FixedZone("MSK", 3*3600)
	accountSpec().Run(t,
		accountCase{
			Name:  "open-ended",
			Given: []domain.Event{created},
			When:  domain.AddSubscription{AccountID: 42, SubscriptionID: 1, Tariff: 5, TariffProvider: 7, Start: day(1, 1)},
			Then:  []domain.Event{sub1},
		},
		accountCase{
			Name:  "with a stop, times stored in UTC",
			Given: []domain.Event{created, sub1},
			When: domain.AddSubscription{AccountID: 42, SubscriptionID: 2, Tariff: 6, TariffProvider: 7,
				Start: day(1, 1).In(msk), Stop: ptr(day(2, 1).In(msk))},
			Then: []domain.Event{sub2},
		},
		accountCase{
			Name:  "same tariff twice is allowed",
			Given: []domain.Event{created, sub1},
			When:  domain.AddSubscription{AccountID: 42, SubscriptionID: 3, Tariff: 5, TariffProvider: 7, Start: day(3, 1)},
			Then:  []domain.Event{domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 3, Tariff: 5, Start: day(3, 1)}},
		},
		accountCase{
			Name:  "duplicate id",
			Given: []domain.Event{created, sub1},
			When:  domain.AddSubscription{AccountID: 42, SubscriptionID: 1, Tariff: 5, TariffProvider: 7, Start: day(1, 1)},
			Err:   domain.ErrAlreadyExists,
		},
		accountCase{
			Name: "unknown account",
			When: domain.AddSubscription{AccountID: 42, SubscriptionID: 1, Tariff: 5, TariffProvider: 7, Start: day(1, 1)},
			Err:  domain.ErrNotFound,
		},
	)
}

func TestAddSubscriptionValidation(t *testing.T) {
	d := domain.AccountDecider()
	tests := []struct {
		name   string
		cmd    domain.AddSubscription
		fields []string
	}{
		{"nothing", domain.AddSubscription{AccountID: 42}, []string{"id", "tarif", "start"}},
		{"tariff of another provider", domain.AddSubscription{AccountID: 42, SubscriptionID: 1, Tariff: 5, TariffProvider: 8, Start: day(1, 1)}, []string{"tarif"}},
		{"stop equals start", domain.AddSubscription{AccountID: 42, SubscriptionID: 1, Tariff: 5, TariffProvider: 7, Start: day(1, 1), Stop: ptr(day(1, 1))}, []string{"stop"}},
		{"stop before start", domain.AddSubscription{AccountID: 42, SubscriptionID: 1, Tariff: 5, TariffProvider: 7, Start: day(2, 1), Stop: ptr(day(1, 1))}, []string{"stop"}},
		{"year 10000", domain.AddSubscription{AccountID: 42, SubscriptionID: 1, Tariff: 5, TariffProvider: 7, Start: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, []string{"start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, decideErr(t, d, domain.AccountCommand(tt.cmd), created), tt.fields...)
		})
	}
}

func TestAddSubscriptionLimit(t *testing.T) {
	given := []domain.Event{created}
	for i := range domain.MaxSubscriptionsPerAccount {
		given = append(given, domain.SubscriptionAdded{AccountID: 42, SubscriptionID: int64(i + 1), Tariff: 5, Start: day(1, 1)})
	}
	cmd := domain.AddSubscription{AccountID: 42, SubscriptionID: 5000, Tariff: 5, TariffProvider: 7, Start: day(1, 1)}
	wantFields(t, decideErr(t, domain.AccountDecider(), domain.AccountCommand(cmd), given...), "account")
}

// TestSubscriptionTransitions follows a subscription's states: none →
// open-ended → ended at stop, and an update that changes nothing appends
// nothing.
func TestSubscriptionTransitions(t *testing.T) {
	end := domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Stop: domain.Some(day(3, 1))}
	ended := domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 1, Stop: domain.Some(day(3, 1))}
	accountSpec().Run(t,
		accountCase{Name: "open-ended → ended at stop", Given: []domain.Event{created, sub1}, When: end, Then: []domain.Event{ended}},
		accountCase{Name: "ending again at the same stop", Given: []domain.Event{created, sub1, ended}, When: end},
		accountCase{
			Name:  "resync of the whole subscription",
			Given: []domain.Event{created, sub2},
			When: domain.UpdateSubscription{AccountID: 42, SubscriptionID: 2, Tariff: domain.Some[int64](6),
				Start: domain.Some(day(1, 1)), Stop: domain.Some(day(2, 1).In(time.FixedZone("X", 3600)))},
		},
		accountCase{Name: "null stop on an open subscription", Given: []domain.Event{created, sub1},
			When: domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Stop: domain.Null[time.Time]()}},
		accountCase{
			Name:  "stop null reopens",
			Given: []domain.Event{created, sub2},
			When:  domain.UpdateSubscription{AccountID: 42, SubscriptionID: 2, Stop: domain.Null[time.Time]()},
			Then:  []domain.Event{domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 2, Stop: domain.Null[time.Time]()}},
		},
		accountCase{
			Name:  "move start and switch tariff",
			Given: []domain.Event{created, sub2},
			When: domain.UpdateSubscription{AccountID: 42, SubscriptionID: 2, Tariff: domain.Some[int64](9), TariffProvider: 7,
				Start: domain.Some(day(1, 15))},
			Then: []domain.Event{domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 2, Tariff: domain.Some[int64](9),
				Start: domain.Some(day(1, 15))}},
		},
		accountCase{
			Name:  "unknown subscription",
			Given: []domain.Event{created, sub1},
			When:  domain.UpdateSubscription{AccountID: 42, SubscriptionID: 3, Stop: domain.Some(day(3, 1))},
			Err:   domain.ErrNotFound,
		},
		accountCase{
			Name:  "remove",
			Given: []domain.Event{created, sub1, sub2},
			When:  domain.RemoveSubscription{AccountID: 42, SubscriptionID: 1},
			Then:  []domain.Event{domain.SubscriptionRemoved{AccountID: 42, SubscriptionID: 1}},
		},
		accountCase{
			Name:  "remove twice",
			Given: []domain.Event{created, sub1, domain.SubscriptionRemoved{AccountID: 42, SubscriptionID: 1}},
			When:  domain.RemoveSubscription{AccountID: 42, SubscriptionID: 1},
			Err:   domain.ErrNotFound,
		},
	)

	accountSpec().Given(created, sub1).When(end).ThenState(t, domain.Account{
		ID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "Alice Smith", Enabled: true,
		Subscriptions: []domain.Subscription{{ID: 1, Tariff: 5, Start: day(1, 1), Stop: day(3, 1)}},
	})
}

func TestUpdateSubscriptionValidation(t *testing.T) {
	d := domain.AccountDecider()
	tests := []struct {
		name   string
		cmd    domain.UpdateSubscription
		fields []string
	}{
		{"stop before start", domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Stop: domain.Some(day(1, 1).Add(-time.Second))}, []string{"stop"}},
		{"start after stop", domain.UpdateSubscription{AccountID: 42, SubscriptionID: 2, Start: domain.Some(day(2, 1))}, []string{"stop"}},
		{"start null", domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Start: domain.Null[time.Time]()}, []string{"start"}},
		{"tariff null", domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Tariff: domain.Null[int64]()}, []string{"tarif"}},
		{"tariff of another provider", domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Tariff: domain.Some[int64](9), TariffProvider: 8}, []string{"tarif"}},
		{"tariff zero", domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Tariff: domain.Some[int64](0), TariffProvider: 7}, []string{"tarif"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, decideErr(t, d, domain.AccountCommand(tt.cmd), created, sub1, sub2), tt.fields...)
		})
	}
	// Re-sending the current tariff needs no provider check: the app may
	// not look the tariff up for an unchanged value.
	accountSpec().Given(created, sub1).
		When(domain.UpdateSubscription{AccountID: 42, SubscriptionID: 1, Tariff: domain.Some[int64](5)}).Then(t)
}

// TestServicesAvailable: services need an enabled account with a
// subscription active now.
func TestServicesAvailable(t *testing.T) {
	d := domain.AccountDecider()
	disabled := domain.AccountUpdated{AccountID: 42, Enabled: domain.Some(false)}
	ended := domain.SubscriptionChanged{AccountID: 42, SubscriptionID: 1, Stop: domain.Some(day(1, 10))}
	future := domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 3, Tariff: 8, Start: day(6, 1)}
	tests := []struct {
		name    string
		history []domain.Event
		now     time.Time
		want    bool
		tariffs []int64
	}{
		{"no subscription", []domain.Event{created}, day(1, 5), false, nil},
		{"open-ended", []domain.Event{created, sub1}, day(1, 5), true, []int64{5}},
		{"at start", []domain.Event{created, sub1}, day(1, 1), true, []int64{5}},
		{"before start", []domain.Event{created, sub1}, day(1, 1).Add(-time.Second), false, nil},
		{"ended, before stop", []domain.Event{created, sub1, ended}, day(1, 9), true, []int64{5}},
		{"ended, at stop", []domain.Event{created, sub1, ended}, day(1, 10), false, nil},
		{"two tariffs", []domain.Event{created, sub1, sub2}, day(1, 20), true, []int64{5, 6}},
		{"one of two ended", []domain.Event{created, sub1, sub2}, day(2, 1), true, []int64{5}},
		{"only a future subscription", []domain.Event{created, future}, day(1, 5), false, nil},
		{"disabled with an active subscription", []domain.Event{created, sub1, disabled}, day(1, 5), false, []int64{5}},
		{"deleted", []domain.Event{created, sub1, domain.AccountDeleted{AccountID: 42}}, day(1, 5), false, nil},
		{"never created", nil, day(1, 5), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := d.Replay(tt.history...)
			if got := a.ServicesAvailable(tt.now); got != tt.want {
				t.Errorf("ServicesAvailable = %v, want %v", got, tt.want)
			}
			if got := a.ActiveTariffs(tt.now); !slices.Equal(got, tt.tariffs) {
				t.Errorf("ActiveTariffs = %v, want %v", got, tt.tariffs)
			}
		})
	}
	// The same tariff twice is listed once.
	again := domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 4, Tariff: 5, Start: day(1, 2)}
	if got := d.Replay(created, sub1, again).ActiveTariffs(day(1, 5)); !slices.Equal(got, []int64{5}) {
		t.Errorf("ActiveTariffs = %v, want [5]", got)
	}
}

func TestSubscriptionStopPtr(t *testing.T) {
	a := domain.AccountDecider().Replay(created, sub1, sub2)
	s1, _ := a.Subscription(1)
	s2, _ := a.Subscription(2)
	if s1.StopPtr() != nil || !s1.Open() {
		t.Errorf("open subscription: StopPtr %v", s1.StopPtr())
	}
	if p := s2.StopPtr(); p == nil || !p.Equal(day(2, 1)) {
		t.Errorf("ended subscription: StopPtr %v", p)
	}
	if _, ok := a.Subscription(3); ok {
		t.Errorf("Subscription(3) found")
	}
}

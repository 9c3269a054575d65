package readmodel

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// TestAccountMatchesDomain drives accounts with random valid commands
// (decided by the domain), applies each event to the model, and checks
// after every event that the model's account is the aggregate's state:
// the compact record loses nothing.
func TestAccountMatchesDomain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := New(nil)
	f := newFeed()
	d := domain.AccountDecider()
	texts := []string{"", "a", "Ünïcödé ✓", "line\nbreak", "long value with spaces and more than 127 bytes.................................................................................................................."}
	opt := func() domain.Optional[string] {
		switch rng.IntN(4) {
		case 0:
			return domain.Null[string]()
		case 1:
			return domain.Optional[string]{}
		}
		return domain.Some(texts[rng.IntN(len(texts))])
	}
	optID := func() domain.Optional[int64] {
		switch rng.IntN(4) {
		case 0:
			return domain.Null[int64]()
		case 1:
			return domain.Optional[int64]{}
		}
		return domain.Some(int64(1 + rng.IntN(3)))
	}
	macs := []string{"00:1a:79:00:00:01", "00-1A-79-00-00-02", "001a79000003"}
	optMAC := func() domain.Optional[string] {
		if o := opt(); !o.Present || o.Null {
			return o
		}
		return domain.Some(macs[rng.IntN(len(macs))])
	}
	nextID := int64(1000)
	for acc := int64(1); acc <= 40; acc++ {
		state := domain.Account{}
		now := base
		steps := 0
		for steps < 40 {
			now = now.Add(time.Duration(rng.IntN(100000)) * time.Millisecond)
			var cmd domain.AccountCommand
			switch op := rng.IntN(12); {
			case !state.Exists():
				cmd = domain.CreateAccount{ID: acc, Provider: 1 + acc%3, Login: fmt.Sprintf("login-%d", acc), PinMD5: "0123456789abcdef0123456789abcdef",
					Fullname: "Full Name", Enabled: ptr(rng.IntN(2) == 0), ContractInfo: opt().Ptr(), DevicesPerAccountLimit: ptr(5)}
			case op == 0:
				cmd = domain.UpdateAccount{ID: acc, Enabled: domain.Some(rng.IntN(2) == 0), Login: domain.Some(fmt.Sprintf("l%d-%d", acc, rng.IntN(5))),
					Fullname: domain.Some(texts[1+rng.IntN(len(texts)-1)]), RemoteCustomField: opt(), ContractInfo: opt(), MainAddress: opt(),
					AccountDesc: opt(), RegionTag: optID(), DevicesPerAccountLimit: domain.Some(rng.IntN(8))}
			case op <= 2:
				nextID++
				var stop *time.Time
				if rng.IntN(2) == 0 {
					stop = ptr(now.Add(time.Duration(rng.IntN(1e6)) * time.Second).Add(time.Nanosecond))
				}
				add := domain.AddSubscription{AccountID: acc, SubscriptionID: nextID, Tariff: int64(rng.IntN(5) + 1), TariffProvider: state.Provider,
					Start: now, Stop: stop}
				if d := optID(); d.Present && !d.Null {
					add.TimeShiftDepth = ptr(int(d.Value) * 24)
				}
				if len(state.Devices) > 0 && rng.IntN(2) == 0 {
					add.Device = state.Devices[rng.IntN(len(state.Devices))].ID
				}
				cmd = add
			case op == 3 && len(state.Subscriptions) > 0:
				s := state.Subscriptions[rng.IntN(len(state.Subscriptions))]
				stop := domain.Null[time.Time]()
				if rng.IntN(2) == 0 {
					stop = domain.Some(s.Start.Add(time.Duration(1+rng.IntN(1e9)) * time.Microsecond))
				}
				var depth domain.Optional[int]
				if o := optID(); o.Present {
					depth = domain.Optional[int]{Present: true, Null: o.Null, Value: int(o.Value)}
				}
				cmd = domain.UpdateSubscription{AccountID: acc, SubscriptionID: s.ID, Stop: stop, Tariff: domain.Some(int64(rng.IntN(5) + 1)),
					TariffProvider: state.Provider, TimeShiftDepth: depth}
			case op == 4 && len(state.Subscriptions) > 0:
				cmd = domain.RemoveSubscription{AccountID: acc, SubscriptionID: state.Subscriptions[rng.IntN(len(state.Subscriptions))].ID}
			case op <= 6:
				nextID++
				classes := domain.DeviceClasses()
				cmd = domain.BindDevice{AccountID: acc, DeviceID: nextID, UniqueID: fmt.Sprintf("uid-%d", rng.IntN(1000)), Class: classes[rng.IntN(len(classes))], Model: texts[rng.IntN(len(texts))],
					Fields: domain.DeviceFields{MAC: optMAC().Ptr(), Comment: opt().Ptr(), UseNAT: rng.IntN(2) == 0, DeviceType: optID().Ptr()}}
			case op == 7 && len(state.Devices) > 0:
				cmd = domain.UnbindDevice{AccountID: acc, DeviceID: state.Devices[rng.IntN(len(state.Devices))].ID}
			case op == 8 && steps > 30 && acc%5 == 0:
				cmd = domain.DeleteAccount{ID: acc}
			case op >= 9 && len(state.Devices) > 0:
				dev := state.Devices[rng.IntN(len(state.Devices))]
				cmd = domain.ChangeDevice{AccountID: acc, DeviceID: dev.ID, MAC: optMAC(), RemoteCustomField: opt(), Comment: opt(),
					UseNAT: domain.Some(rng.IntN(2) == 0), UdpxyAddr: opt(), DeviceType: optID()}
			default:
				continue
			}
			events, err := d.Decide(state, cmd, now)
			if err != nil {
				continue // e.g. the device limit; try another command
			}
			for _, e := range events {
				state = d.Evolve(state, e)
				rec := f.record(domain.AccountStream(acc), e, now)
				if err := m.Apply(t.Context(), decoded(m, []eventstore.RecordedEvent{rec}), projections.Live); err != nil {
					t.Fatal(err)
				}
				got, ok := m.AccountState(acc)
				if state.Deleted {
					if ok {
						t.Fatalf("account %d: deleted, but the model has %+v", acc, got)
					}
					continue
				}
				if !ok || !equalAccounts(got, state) {
					t.Fatalf("account %d after %T:\n got %+v\nwant %+v", acc, e, got, state)
				}
				checkIndexes(t, m, state)
			}
			steps++
			if state.Deleted {
				break
			}
		}
	}
	if st := m.Stats(); st.Position.Commit < 1000 || st.Accounts == 40 || st.Devices == 0 {
		t.Errorf("the random walk did too little: %+v", st)
	}
}

// checkIndexes checks that every subscription and device of a is found
// through the model's indexes.
func checkIndexes(t *testing.T, m *Model, a domain.Account) {
	t.Helper()
	v, ok := m.AccountByLogin(a.Provider, a.Login)
	if !ok || v.ID != a.ID {
		t.Fatalf("account %d not found by login %q", a.ID, a.Login)
	}
	for _, s := range a.Subscriptions {
		got, ok := m.Subscription(s.ID)
		if !ok || !reflect.DeepEqual(got.Subscription, s) || got.Account != a.ID {
			t.Fatalf("subscription %d: %+v, %v; want %+v", s.ID, got, ok, s)
		}
	}
	for _, d := range a.Devices {
		got, ok := m.Device(d.ID)
		if !ok || !reflect.DeepEqual(got.Device, d) {
			t.Fatalf("device %d: %+v, %v; want %+v", d.ID, got, ok, d)
		}
		found := false
		for x := range must(m.ListDevices(DeviceQuery{Scope: AllProviders, UniqueID: d.UniqueID})).Items {
			found = found || x.ID == d.ID
		}
		if !found {
			t.Fatalf("device %d not found by unique id %q", d.ID, d.UniqueID)
		}
	}
	own, ofDevices := 0, 0
	for _, s := range a.Subscriptions {
		if s.Device == 0 {
			own++
		} else {
			ofDevices++
		}
	}
	if n := must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Account: a.ID})).Total; n != own {
		t.Fatalf("account %d lists %d subscriptions, has %d of its own", a.ID, n, own)
	}
	if n := must(m.ListSubscriptions(SubscriptionQuery{Scope: AllProviders, Account: a.ID, Devices: true})).Total; n != ofDevices {
		t.Fatalf("account %d lists %d device subscriptions, has %d", a.ID, n, ofDevices)
	}
}

package stats

import (
	"slices"
	"time"

	"tvsm/domain"
)

// state is what the projector knows at the end of the log it has applied:
// per account only what a day's statistic needs, in a dense slice so that
// closing a day is one pass over it.
type state struct {
	accounts []account
	slot     map[int64]int32 // account id → index in accounts
	tariffs  map[int64]tariff
	// classes interns device class names; a device keeps an index.
	classes []string
	// seen is the earliest day each (provider, class) was written as seen.
	seen map[classKey]Day

	open    Day  // the day events are being applied to
	started bool // open is set: some event was applied
}

// account is one subscriber. subs is never modified in place (a change
// makes a new slice), so the closed days of the window can keep the slice
// each of them ended with.
type account struct {
	id       int64
	provider int64
	subs     []sub
	devices  []device
	// viewed has bit k set when the account watched on day open-k.
	viewed  uint64
	enabled bool
	exists  bool // created and not deleted
}

// sub is a subscription's window [start, stop) in unix seconds; stop 0 is
// open-ended.
type sub struct {
	id, tariff  int64
	start, stop int64
}

type device struct {
	id    int64
	class uint8 // index in state.classes
}

type tariff struct {
	provider int64
	exists   bool
}

type classKey struct {
	provider int64
	class    string
}

func newState() *state {
	return &state{slot: map[int64]int32{}, tariffs: map[int64]tariff{}, seen: map[classKey]Day{}}
}

// account returns the account with id, or nil.
func (s *state) account(id int64) *account {
	i, ok := s.slot[id]
	if !ok {
		return nil
	}
	return &s.accounts[i]
}

// classIndex interns a device class name.
func (s *state) classIndex(class string) uint8 {
	if i := slices.Index(s.classes, class); i >= 0 {
		return uint8(i)
	}
	if len(s.classes) == 255 { // a misbehaving client inventing classes
		return 255
	}
	s.classes = append(s.classes, class)
	return uint8(len(s.classes) - 1)
}

func (s *state) className(i uint8) string {
	if int(i) < len(s.classes) {
		return s.classes[i]
	}
	return ""
}

// applyAccount applies an event of an account stream.
func (s *state) applyAccount(e domain.Event) {
	switch e := e.(type) {
	case domain.AccountCreated:
		if _, dup := s.slot[e.AccountID]; dup {
			return
		}
		s.slot[e.AccountID] = int32(len(s.accounts))
		s.accounts = append(s.accounts, account{id: e.AccountID, provider: e.Provider, enabled: e.Enabled, exists: true})
	case domain.AccountUpdated:
		if a := s.account(e.AccountID); a != nil && e.Enabled.HasValue() {
			a.enabled = e.Enabled.Value
		}
	case domain.AccountDeleted:
		if a := s.account(e.AccountID); a != nil {
			a.exists, a.subs, a.devices = false, nil, nil
		}
	case domain.SubscriptionAdded:
		if a := s.account(e.AccountID); a != nil {
			n := sub{id: e.SubscriptionID, tariff: e.Tariff, start: e.Start.Unix()}
			if e.Stop != nil {
				n.stop = stopSeconds(*e.Stop)
			}
			a.subs = append(slices.Clip(a.subs), n)
		}
	case domain.SubscriptionChanged:
		if a := s.account(e.AccountID); a != nil {
			a.subs = changeSub(a.subs, e)
		}
	case domain.SubscriptionRemoved:
		if a := s.account(e.AccountID); a != nil {
			a.subs = slices.DeleteFunc(slices.Clone(a.subs), func(x sub) bool { return x.id == e.SubscriptionID })
		}
	case domain.DeviceBound:
		if a := s.account(e.AccountID); a != nil {
			a.devices = append(slices.DeleteFunc(a.devices, func(d device) bool { return d.id == e.DeviceID }),
				device{id: e.DeviceID, class: s.classIndex(string(e.Class))})
		}
	case domain.DeviceUnbound:
		if a := s.account(e.AccountID); a != nil {
			a.devices = slices.DeleteFunc(a.devices, func(d device) bool { return d.id == e.DeviceID })
		}
	}
}

// changeSub returns subs with e applied, as a new slice.
func changeSub(subs []sub, e domain.SubscriptionChanged) []sub {
	i := slices.IndexFunc(subs, func(x sub) bool { return x.id == e.SubscriptionID })
	if i < 0 {
		return subs
	}
	out := slices.Clone(subs)
	if v, ok := e.Tariff.Get(); ok {
		out[i].tariff = v
	}
	if v, ok := e.Start.Get(); ok {
		out[i].start = v.Unix()
	}
	switch {
	case e.Stop.IsNull():
		out[i].stop = 0
	case e.Stop.HasValue():
		out[i].stop = stopSeconds(e.Stop.Value)
	}
	return out
}

// stopSeconds is a stop time in unix seconds; 0 is reserved for open-ended,
// so a stop at exactly the epoch becomes one second later.
func stopSeconds(t time.Time) int64 {
	if s := t.Unix(); s != 0 {
		return s
	}
	return 1
}

// applyTariff applies an event of a tariff stream.
func (s *state) applyTariff(e domain.Event) {
	switch e := e.(type) {
	case domain.TariffCreated:
		s.tariffs[e.TariffID] = tariff{provider: e.Provider, exists: true}
	case domain.TariffDeleted:
		if t, ok := s.tariffs[e.TariffID]; ok {
			t.exists = false
			s.tariffs[e.TariffID] = t
		}
	}
}

// tariffsAt appends to buf the distinct tariffs of subs whose window covers
// the last instant before end (unix seconds of a midnight): started before
// it and not stopped before it. A stop at 23:59 leaves the day out; a stop
// at the next midnight (00:00) keeps it.
func tariffsAt(buf []int64, subs []sub, end int64) []int64 {
	for _, x := range subs {
		if x.start < end && (x.stop == 0 || x.stop >= end) && !slices.Contains(buf, x.tariff) {
			buf = append(buf, x.tariff)
		}
	}
	return buf
}

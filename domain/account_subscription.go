package domain

import (
	"fmt"
	"time"
)

// MaxSubscriptionsPerAccount bounds an account's subscription history, so a
// sync job that adds instead of updating cannot grow one account without
// end.
const MaxSubscriptionsPerAccount = 1000

// Problem texts of subscription fields.
const (
	problemStopBeforeStart = "must be after start"
	problemOtherProvider   = "belongs to another provider"
)

// AddSubscription subscribes the account to Tariff from Start until Stop
// (nil: open-ended). The application allocates SubscriptionID, looks the
// tariff up and passes its provider in TariffProvider; decide refuses a
// tariff of another provider. Times are stored in UTC. With Device set, the
// subscription is that bound device's own (TVIP's device subscription).
type AddSubscription struct {
	AccountID      int64
	SubscriptionID int64
	Tariff         int64
	TariffProvider int64
	Start          time.Time
	Stop           *time.Time
	Device         int64
	TimeShiftDepth *int
}

// UpdateSubscription changes the fields present in it: a Stop value ends the
// subscription, a null Stop reopens it. A Tariff different from the current
// one needs TariffProvider, as in AddSubscription; Tariff and Start cannot
// be null.
type UpdateSubscription struct {
	AccountID      int64
	SubscriptionID int64
	Tariff         Optional[int64]
	TariffProvider int64
	Start          Optional[time.Time]
	Stop           Optional[time.Time]
	TimeShiftDepth Optional[int]
}

// RemoveSubscription deletes a subscription outright (ending one is an
// UpdateSubscription with Stop).
type RemoveSubscription struct {
	AccountID      int64
	SubscriptionID int64
}

// Stream implements AccountCommand.
func (c AddSubscription) Stream() string { return AccountStream(c.AccountID) }

// Stream implements AccountCommand.
func (c UpdateSubscription) Stream() string { return AccountStream(c.AccountID) }

// Stream implements AccountCommand.
func (c RemoveSubscription) Stream() string { return AccountStream(c.AccountID) }

func (AddSubscription) accountCommand()    {}
func (UpdateSubscription) accountCommand() {}
func (RemoveSubscription) accountCommand() {}

func addSubscription(s Account, c AddSubscription) ([]Event, error) {
	var p problems
	p.add("id", checkID(c.SubscriptionID))
	switch {
	case c.Tariff <= 0:
		p.add("tarif", problemRequired)
	case c.TariffProvider != s.Provider:
		p.add("tarif", problemOtherProvider)
	}
	p.add("start", checkTime(c.Start))
	if c.Stop != nil {
		p.add("stop", checkTime(*c.Stop))
		if !c.Stop.After(c.Start) {
			p.add("stop", problemStopBeforeStart)
		}
	}
	if c.TimeShiftDepth != nil {
		p.add("time_shift_depth", checkTimeShiftDepth(*c.TimeShiftDepth))
	}
	if c.Device != 0 {
		if _, ok := s.Device(c.Device); !ok {
			p.add("device", "is not a device of the account")
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if _, ok := s.Subscription(c.SubscriptionID); ok {
		return nil, alreadyExists("subscription", c.SubscriptionID)
	}
	if len(s.Subscriptions) >= MaxSubscriptionsPerAccount {
		return nil, NewValidationError("account", fmt.Sprintf("has the maximum of %d subscriptions", MaxSubscriptionsPerAccount))
	}
	e := SubscriptionAdded{AccountID: s.ID, SubscriptionID: c.SubscriptionID, Tariff: c.Tariff, Start: normTime(c.Start),
		Device: c.Device, TimeShiftDepth: c.TimeShiftDepth}
	if c.Stop != nil {
		stop := normTime(*c.Stop)
		e.Stop = &stop
	}
	return []Event{e}, nil
}

func updateSubscription(s Account, c UpdateSubscription) ([]Event, error) {
	cur, ok := s.Subscription(c.SubscriptionID)
	if !ok {
		return nil, notFound("subscription", c.SubscriptionID)
	}
	var p problems
	e := SubscriptionChanged{AccountID: s.ID, SubscriptionID: cur.ID}
	e.Tariff = patchValue(&p, "tarif", c.Tariff, cur.Tariff, func(id int64) string {
		switch {
		case id <= 0:
			return problemPositive
		case id != cur.Tariff && c.TariffProvider != s.Provider:
			return problemOtherProvider
		}
		return ""
	})
	next := cur
	if v, ok := c.Start.Get(); ok {
		p.add("start", checkTime(v))
		next.Start = normTime(v)
	} else if c.Start.IsNull() {
		p.add("start", problemNotNull)
	}
	if v, ok := c.Stop.Get(); ok {
		p.add("stop", checkTime(v))
		next.Stop = normTime(v)
	} else if c.Stop.IsNull() {
		next.Stop = time.Time{}
	}
	if !next.Open() && !next.Stop.After(next.Start) {
		p.add("stop", problemStopBeforeStart)
	}
	e.TimeShiftDepth = patchNullable(&p, "time_shift_depth", c.TimeShiftDepth, cur.TimeShiftDepth,
		checkTimeShiftDepth)
	if err := p.err(); err != nil {
		return nil, err
	}
	if !next.Start.Equal(cur.Start) {
		e.Start = Some(next.Start)
	}
	switch {
	case next.Open() && !cur.Open():
		e.Stop = Null[time.Time]()
	case !next.Open() && !next.Stop.Equal(cur.Stop):
		e.Stop = Some(next.Stop)
	}
	if !e.Tariff.Present && !e.Start.Present && !e.Stop.Present && !e.TimeShiftDepth.Present {
		return nil, nil
	}
	return []Event{e}, nil
}

func removeSubscription(s Account, c RemoveSubscription) ([]Event, error) {
	if _, ok := s.Subscription(c.SubscriptionID); !ok {
		return nil, notFound("subscription", c.SubscriptionID)
	}
	return []Event{SubscriptionRemoved{AccountID: s.ID, SubscriptionID: c.SubscriptionID}}, nil
}

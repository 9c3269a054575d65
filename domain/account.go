package domain

import (
	"errors"
	"slices"
	"time"
)

// Account is a subscriber of a provider, with its subscriptions and bound
// devices (stream account-{id}). Its id is allocated outside the domain. The
// zero Account does not exist yet.
//
// The read model may keep an Account per subscriber in memory, so the state
// is lean: no maps, nullable strings as pointers (nil is null, and null is
// the common case), small slices. States share memory with earlier states
// and with events; treat them as immutable.
type Account struct {
	ID       int64
	Provider int64 // fixed at creation
	Login    string
	PinMD5   string // 32 lowercase hex characters; "" for an account without a password
	Fullname string

	RemoteCustomField *string
	ContractInfo      *string
	MainAddress       *string
	AccountDesc       *string
	RegionTag         *int64 // a region's id
	// DevicesPerAccountLimit overrides the provider's limit; nil defers to
	// it.
	DevicesPerAccountLimit *int

	Enabled bool
	Deleted bool
	// Erased is set, with Deleted, once the account was erased: its
	// personal fields are empty and it can neither be changed nor erased
	// again.
	Erased bool

	Subscriptions []Subscription // in the order added
	Devices       []Device       // in the order bound
}

// Subscription is an account's subscription to a tariff over [Start, Stop).
// A zero Stop means open-ended (null on the wire): a zero time is never a
// valid stop, and the value form keeps the state free of pointers.
//
// Device is 0 for a subscription of the whole account, else the id of the
// bound device it is for (TVIP's device subscriptions): it gives that
// device, and no other, the tariff's services.
type Subscription struct {
	ID     int64
	Tariff int64
	Start  time.Time // UTC
	Stop   time.Time // UTC; zero: open-ended
	Device int64
	// TimeShiftDepth is the archive depth the subscription gives, as the
	// provider sets it (TVIP's time_shift_depth); nil when unset.
	TimeShiftDepth *int
}

// Open reports whether the subscription has no stop date.
func (s Subscription) Open() bool { return s.Stop.IsZero() }

// StopPtr returns the stop date, or nil when open-ended: the wire form.
func (s Subscription) StopPtr() *time.Time {
	if s.Open() {
		return nil
	}
	t := s.Stop
	return &t
}

// ActiveAt reports whether the subscription gives service at now: Start <=
// now and (open-ended or now < Stop).
func (s Subscription) ActiveAt(now time.Time) bool {
	return !now.Before(s.Start) && (s.Open() || now.Before(s.Stop))
}

// Exists reports whether the account was created and not deleted.
func (a Account) Exists() bool { return a.ID != 0 && !a.Deleted }

// ServicesAvailable reports whether devices of the account get service at
// now: the account is enabled and has an active subscription of its own. A
// disabled account, or one without an active subscription, still
// authorises its devices; they show a no-services message.
func (a Account) ServicesAvailable(now time.Time) bool { return a.DeviceServicesAvailable(0, now) }

// DeviceServicesAvailable is ServicesAvailable for one bound device: the
// account's own subscriptions count, and so do the device's.
func (a Account) DeviceServicesAvailable(device int64, now time.Time) bool {
	if !a.Exists() || !a.Enabled {
		return false
	}
	for _, s := range a.Subscriptions {
		if s.ActiveAt(now) && (s.Device == 0 || s.Device == device) {
			return true
		}
	}
	return false
}

// ActiveTariffs returns the ids of the tariffs with a subscription of the
// account's own active at now, without repeats, in subscription order; nil
// when there are none. It ignores Enabled: use ServicesAvailable to decide
// whether to serve them.
func (a Account) ActiveTariffs(now time.Time) []int64 { return a.DeviceActiveTariffs(0, now) }

// DeviceActiveTariffs is ActiveTariffs for one bound device: the account's
// subscriptions and the device's own.
func (a Account) DeviceActiveTariffs(device int64, now time.Time) []int64 {
	var ids []int64
	for _, s := range a.Subscriptions {
		if s.ActiveAt(now) && (s.Device == 0 || s.Device == device) && !slices.Contains(ids, s.Tariff) {
			ids = append(ids, s.Tariff)
		}
	}
	return ids
}

// Subscription returns the subscription with the given id.
func (a Account) Subscription(id int64) (Subscription, bool) {
	i := a.subscriptionIndex(id)
	if i < 0 {
		return Subscription{}, false
	}
	return a.Subscriptions[i], true
}

func (a Account) subscriptionIndex(id int64) int {
	return slices.IndexFunc(a.Subscriptions, func(s Subscription) bool { return s.ID == id })
}

// DeviceLimit returns the number of devices the account may bind, given its
// provider's limit: the account's own limit when set, else the provider's;
// nil means unlimited.
func (a Account) DeviceLimit(providerLimit *int) *int {
	if a.DevicesPerAccountLimit != nil {
		return a.DevicesPerAccountLimit
	}
	return providerLimit
}

// AccountCommand is a command on an account: CreateAccount, UpdateAccount,
// DeleteAccount, EraseAccount, AddSubscription, UpdateSubscription, RemoveSubscription,
// BindDevice, ChangeDevice or UnbindDevice.
type AccountCommand interface {
	Stream() string
	accountCommand()
}

// AccountDecider returns the decider of the account aggregate.
func AccountDecider() Decider[Account, AccountCommand] {
	return Decider[Account, AccountCommand]{
		Initial: func() Account { return Account{} },
		Evolve:  evolveAccount,
		Decide:  decideAccount,
	}
}

var errAccountTarget = errors.New("account command decided on another account's state")

func decideAccount(s Account, c AccountCommand, now time.Time) ([]Event, error) {
	switch c := c.(type) {
	case CreateAccount:
		return createAccount(s, c)
	case EraseAccount:
		if s.ID == 0 || s.Erased {
			return nil, notFound("account", c.ID)
		}
		if s.ID != c.ID {
			return nil, errAccountTarget
		}
		return eraseAccount(s, c, now)
	}
	var id int64
	switch c := c.(type) {
	case UpdateAccount:
		id = c.ID
	case DeleteAccount:
		id = c.ID
	case AddSubscription:
		id = c.AccountID
	case UpdateSubscription:
		id = c.AccountID
	case RemoveSubscription:
		id = c.AccountID
	case BindDevice:
		id = c.AccountID
	case ChangeDevice:
		id = c.AccountID
	case UnbindDevice:
		id = c.AccountID
	default:
		return nil, errors.New("domain: unknown account command")
	}
	switch {
	case !s.Exists():
		return nil, notFound("account", id)
	case s.ID != id:
		return nil, errAccountTarget
	}
	switch c := c.(type) {
	case UpdateAccount:
		return updateAccount(s, c)
	case DeleteAccount:
		return []Event{AccountDeleted{AccountID: s.ID}}, nil
	case AddSubscription:
		return addSubscription(s, c)
	case UpdateSubscription:
		return updateSubscription(s, c)
	case RemoveSubscription:
		return removeSubscription(s, c)
	case BindDevice:
		return bindDevice(s, c)
	case ChangeDevice:
		return changeDevice(s, c)
	case UnbindDevice:
		return unbindDevice(s, c)
	}
	return nil, nil // unreachable: the first switch lists every command
}

// evolveAccount applies an event. Slices are copied before they change, so
// earlier states (and events) are never modified.
func evolveAccount(s Account, e Event) Account {
	switch e := e.(type) {
	case AccountCreated:
		return Account{
			ID:                     e.AccountID,
			Provider:               e.Provider,
			Login:                  e.Login,
			PinMD5:                 e.PinMD5,
			Fullname:               e.Fullname,
			RemoteCustomField:      e.RemoteCustomField,
			ContractInfo:           e.ContractInfo,
			MainAddress:            e.MainAddress,
			AccountDesc:            e.AccountDesc,
			RegionTag:              e.RegionTag,
			DevicesPerAccountLimit: e.DevicesPerAccountLimit,
			Enabled:                e.Enabled,
		}
	case AccountUpdated:
		applyValue(&s.Enabled, e.Enabled)
		applyValue(&s.Login, e.Login)
		applyValue(&s.PinMD5, e.PinMD5)
		applyValue(&s.Fullname, e.Fullname)
		applyNullable(&s.RemoteCustomField, e.RemoteCustomField)
		applyNullable(&s.ContractInfo, e.ContractInfo)
		applyNullable(&s.MainAddress, e.MainAddress)
		applyNullable(&s.AccountDesc, e.AccountDesc)
		applyNullable(&s.RegionTag, e.RegionTag)
		applyNullable(&s.DevicesPerAccountLimit, e.DevicesPerAccountLimit)
	case AccountDeleted:
		// The subscriptions and devices go with the account; dropping them
		// keeps deleted accounts cheap in memory.
		s.Deleted, s.Subscriptions, s.Devices = true, nil, nil
	case AccountErased:
		return evolveErased(s)
	case SubscriptionAdded:
		sub := Subscription{ID: e.SubscriptionID, Tariff: e.Tariff, Start: e.Start, Device: e.Device, TimeShiftDepth: e.TimeShiftDepth}
		if e.Stop != nil {
			sub.Stop = *e.Stop
		}
		s.Subscriptions = appendCopy(s.Subscriptions, sub)
	case SubscriptionChanged:
		if i := s.subscriptionIndex(e.SubscriptionID); i >= 0 {
			s.Subscriptions = slices.Clone(s.Subscriptions)
			sub := &s.Subscriptions[i]
			applyValue(&sub.Tariff, e.Tariff)
			applyValue(&sub.Start, e.Start)
			if e.Stop.Present {
				sub.Stop, _ = e.Stop.Get() // null reopens: zero Stop
			}
			applyNullable(&sub.TimeShiftDepth, e.TimeShiftDepth)
		}
	case SubscriptionRemoved:
		if i := s.subscriptionIndex(e.SubscriptionID); i >= 0 {
			s.Subscriptions = deleteCopy(s.Subscriptions, i)
		}
	case DeviceBound:
		d := Device{ID: e.DeviceID, UniqueID: e.UniqueID, Class: e.Class.intern(), Model: e.Model, DeviceFields: e.fields()}
		s.Devices = appendCopy(s.Devices, d)
	case DeviceChanged:
		if i := s.deviceIndex(e.DeviceID); i >= 0 {
			s.Devices = slices.Clone(s.Devices)
			f := &s.Devices[i].DeviceFields
			applyNullable(&f.MAC, e.MAC)
			applyNullable(&f.RemoteCustomField, e.RemoteCustomField)
			applyNullable(&f.Comment, e.Comment)
			applyValue(&f.UseNAT, e.UseNAT)
			applyNullable(&f.UdpxyAddr, e.UdpxyAddr)
			applyNullable(&f.DeviceType, e.DeviceType)
		}
	case DeviceUnbound:
		if i := s.deviceIndex(e.DeviceID); i >= 0 {
			s.Devices = deleteCopy(s.Devices, i)
		}
	}
	return s
}

// appendCopy returns a new slice of exactly len(s)+1 elements: s then v. It
// never writes to s's array, and wastes no capacity on states that are kept
// for a million accounts.
func appendCopy[T any](s []T, v T) []T {
	out := make([]T, len(s)+1)
	copy(out, s)
	out[len(s)] = v
	return out
}

// deleteCopy returns a new slice without element i (nil when empty); s is
// not modified.
func deleteCopy[T any](s []T, i int) []T {
	if len(s) == 1 {
		return nil
	}
	out := make([]T, 0, len(s)-1)
	return append(append(out, s[:i]...), s[i+1:]...)
}

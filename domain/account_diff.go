package domain

import (
	"fmt"
	"strconv"
)

// FieldChange is one field of an account history entry: its wire name and
// its values before and after the event. Old and New are nil (null or not
// set), bool, int, int64, string, DeviceClass or time.Time (UTC; the HTTP
// layer formats it as the API's date-time).
//
// Fields of subscriptions and devices are named after the item:
// "subscriptions[7].stop", "devices[12].unique_id".
type FieldChange struct {
	Field string
	Old   any
	New   any
	// Secret marks a field whose values are withheld (pin_md5): the history
	// shows that it changed, Old and New are nil.
	Secret bool
}

// Diff returns the fields event e changes on a, the state before e, in a
// fixed order; nil for events that change no field (AccountDeleted) and for
// events of other aggregates.
func (a Account) Diff(e Event) []FieldChange {
	var d diff
	switch e := e.(type) {
	case AccountCreated:
		d.add("provider", nil, e.Provider)
		d.add("login", nil, e.Login)
		d.secret("pin_md5")
		d.add("fullname", nil, e.Fullname)
		d.add("enabled", nil, e.Enabled)
		d.add("remote_custom_field", nil, orNil(e.RemoteCustomField))
		d.add("contract_info", nil, orNil(e.ContractInfo))
		d.add("main_address", nil, orNil(e.MainAddress))
		d.add("account_desc", nil, orNil(e.AccountDesc))
		d.add("region_tag", nil, orNil(e.RegionTag))
		d.add("devices_per_account_limit", nil, orNil(e.DevicesPerAccountLimit))
	case AccountUpdated:
		diffValue(&d, "login", a.Login, e.Login)
		if e.PinMD5.Present {
			d.secret("pin_md5")
		}
		diffValue(&d, "fullname", a.Fullname, e.Fullname)
		diffValue(&d, "enabled", a.Enabled, e.Enabled)
		diffNullable(&d, "remote_custom_field", a.RemoteCustomField, e.RemoteCustomField)
		diffNullable(&d, "contract_info", a.ContractInfo, e.ContractInfo)
		diffNullable(&d, "main_address", a.MainAddress, e.MainAddress)
		diffNullable(&d, "account_desc", a.AccountDesc, e.AccountDesc)
		diffNullable(&d, "region_tag", a.RegionTag, e.RegionTag)
		diffNullable(&d, "devices_per_account_limit", a.DevicesPerAccountLimit, e.DevicesPerAccountLimit)
	case SubscriptionAdded:
		p := subscriptionPrefix(e.SubscriptionID)
		d.add(p+"tarif", nil, e.Tariff)
		d.add(p+"start", nil, e.Start)
		d.add(p+"stop", nil, orNil(e.Stop))
		if e.Device != 0 {
			d.add(p+"device", nil, e.Device)
		}
		d.add(p+"time_shift_depth", nil, orNil(e.TimeShiftDepth))
	case SubscriptionChanged:
		p := subscriptionPrefix(e.SubscriptionID)
		cur, _ := a.Subscription(e.SubscriptionID)
		diffValue(&d, p+"tarif", cur.Tariff, e.Tariff)
		diffValue(&d, p+"start", cur.Start, e.Start)
		diffNullable(&d, p+"stop", cur.StopPtr(), e.Stop)
		diffNullable(&d, p+"time_shift_depth", cur.TimeShiftDepth, e.TimeShiftDepth)
	case SubscriptionRemoved:
		p := subscriptionPrefix(e.SubscriptionID)
		if cur, ok := a.Subscription(e.SubscriptionID); ok {
			d.add(p+"tarif", cur.Tariff, nil)
			d.add(p+"start", cur.Start, nil)
			d.add(p+"stop", orNil(cur.StopPtr()), nil)
			if cur.Device != 0 {
				d.add(p+"device", cur.Device, nil)
			}
			d.add(p+"time_shift_depth", orNil(cur.TimeShiftDepth), nil)
		}
	case DeviceBound:
		p := devicePrefix(e.DeviceID)
		d.add(p+"unique_id", nil, e.UniqueID)
		d.add(p+"class", nil, e.Class)
		d.add(p+"model", nil, model(e.Model))
		d.deviceFields(p, DeviceFields{}, e.fields())
	case DeviceChanged:
		p := devicePrefix(e.DeviceID)
		cur, _ := a.Device(e.DeviceID)
		next := a.evolveDevice(e)
		d.deviceFields(p, cur.DeviceFields, next)
	case DeviceUnbound:
		p := devicePrefix(e.DeviceID)
		if cur, ok := a.Device(e.DeviceID); ok {
			d.add(p+"unique_id", cur.UniqueID, nil)
			d.add(p+"class", cur.Class, nil)
			d.add(p+"model", model(cur.Model), nil)
			d.deviceFields(p, cur.DeviceFields, DeviceFields{})
		}
	}
	return d
}

// evolveDevice returns the provider's fields of e's device after e.
func (a Account) evolveDevice(e DeviceChanged) DeviceFields {
	next := evolveAccount(a, e)
	d, _ := next.Device(e.DeviceID)
	return d.DeviceFields
}

// deviceFields records the provider's fields of a device that differ
// between old and new.
func (d *diff) deviceFields(prefix string, old, new DeviceFields) {
	d.add(prefix+"mac", orNil(old.MAC), orNil(new.MAC))
	d.add(prefix+"remote_custom_field", orNil(old.RemoteCustomField), orNil(new.RemoteCustomField))
	d.add(prefix+"comment", orNil(old.Comment), orNil(new.Comment))
	d.add(prefix+"use_nat", old.UseNAT, new.UseNAT)
	d.add(prefix+"udpxy_addr", orNil(old.UdpxyAddr), orNil(new.UdpxyAddr))
	d.add(prefix+"device_type", orNil(old.DeviceType), orNil(new.DeviceType))
}

// SummarizeAccountEvent returns a short English line for an account history
// entry: "account created", "subscription 7 ended", "device 12 bound".
func SummarizeAccountEvent(e Event) string {
	switch e := e.(type) {
	case AccountCreated:
		return "account created"
	case AccountUpdated:
		if on, ok := e.Enabled.Get(); ok {
			if on {
				return "account enabled"
			}
			return "account disabled"
		}
		return "account updated"
	case AccountDeleted:
		return "account deleted"
	case AccountErased:
		return "account erased"
	case SubscriptionAdded:
		if e.Device != 0 {
			return fmt.Sprintf("subscription %d added for device %d", e.SubscriptionID, e.Device)
		}
		return fmt.Sprintf("subscription %d added", e.SubscriptionID)
	case SubscriptionChanged:
		switch {
		case e.Stop.IsNull():
			return fmt.Sprintf("subscription %d reopened", e.SubscriptionID)
		case e.Stop.Present:
			return fmt.Sprintf("subscription %d ended", e.SubscriptionID)
		}
		return fmt.Sprintf("subscription %d changed", e.SubscriptionID)
	case SubscriptionRemoved:
		return fmt.Sprintf("subscription %d removed", e.SubscriptionID)
	case DeviceBound:
		return fmt.Sprintf("device %d bound", e.DeviceID)
	case DeviceChanged:
		return fmt.Sprintf("device %d changed", e.DeviceID)
	case DeviceUnbound:
		return fmt.Sprintf("device %d unbound", e.DeviceID)
	case BillingCalled:
		return e.summary()
	}
	if e == nil {
		return ""
	}
	return e.EventType()
}

// diff collects field changes, leaving out fields whose value stays the
// same (null to null on create).
type diff []FieldChange

func (d *diff) add(field string, old, new any) {
	if old == new {
		return
	}
	*d = append(*d, FieldChange{Field: field, Old: old, New: new})
}

func (d *diff) secret(field string) { *d = append(*d, FieldChange{Field: field, Secret: true}) }

// model returns a device model for a diff: nil when empty, since a model is
// optional and "" means not reported.
func model(m string) any {
	if m == "" {
		return nil
	}
	return m
}

// diffValue records a non-nullable field the event sets.
func diffValue[T any](d *diff, field string, old T, o Optional[T]) {
	if v, ok := o.Get(); ok {
		d.add(field, old, v)
	}
}

// diffNullable records a nullable field the event sets or clears.
func diffNullable[T any](d *diff, field string, old *T, o Optional[T]) {
	if o.Present {
		d.add(field, orNil(old), optionalAny(o))
	}
}

func subscriptionPrefix(id int64) string { return "subscriptions[" + strconv.FormatInt(id, 10) + "]." }

func devicePrefix(id int64) string { return "devices[" + strconv.FormatInt(id, 10) + "]." }

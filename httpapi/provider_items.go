package httpapi

import (
	"encoding/json"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// providerSubscriptionList is what GET /api/provider/account_subscriptions
// accepts.
var providerSubscriptionList = ListSpec{
	Sort: readmodel.SubscriptionSortFields,
	Filters: map[string]FilterType{
		"account":  FilterInt,
		"tarif":    FilterInt,
		"provider": FilterInt,
	},
	Params: []string{"as_of"},
}

// providerSubscriptions is /account_subscriptions.
func providerSubscriptions(api ProviderAPI, idem Idempotency) providerResource[readmodel.Subscription, command.SubscriptionInput, readmodel.SubscriptionQuery, providerSubscriptionJSON] {
	return providerResource[readmodel.Subscription, command.SubscriptionInput, readmodel.SubscriptionQuery, providerSubscriptionJSON]{
		path: "/account_subscriptions", what: "subscription", spec: providerSubscriptionList, idem: idem,
		reads: api.SubscriptionReads, writes: api.Subscriptions, del: api.Subscriptions.Delete,
		query: func(q ListQuery, bad map[string]string) readmodel.SubscriptionQuery {
			return readmodel.SubscriptionQuery{
				Page:        providerPage(q),
				Account:     providerFilterID(q, "account", bad),
				Tariff:      providerFilterID(q, "tarif", bad),
				Provider:    providerFilterID(q, "provider", bad),
				QuickSearch: q.QuickSearch,
			}
		},
		decode: readProviderSubscription, view: providerSubscription, render: encodeProviderSubscription,
		listAt: api.AccountReads.SubscriptionsAsOf,
	}
}

// readProviderSubscription reads the subscription fields of a body; an
// update that ends it sends "stop".
func readProviderSubscription(obj *wire.Object) command.SubscriptionInput {
	in := command.SubscriptionInput{
		Account:        obj.Int64("account"),
		Tariff:         obj.Int64("tarif"),
		Start:          obj.DateTime("start"),
		Stop:           obj.NullableDateTime("stop"),
		TimeShiftDepth: obj.NullableInt64("time_shift_depth"),
	}
	if !obj.Has("tarif") { // the spelling of the billing interface
		in.Tariff = obj.Int64("tariff")
	}
	return in
}

// providerDeviceSubscriptionList is what GET
// /api/provider/device_subscriptions accepts.
var providerDeviceSubscriptionList = ListSpec{
	Sort: readmodel.DeviceSubscriptionSortFields,
	Filters: map[string]FilterType{
		"device":   FilterInt,
		"account":  FilterInt,
		"tarif":    FilterInt,
		"provider": FilterInt,
	},
}

// providerDeviceSubscriptions is /device_subscriptions: a device's own
// subscriptions (TVIP), which give that device the tariff's services.
func providerDeviceSubscriptions(api ProviderAPI, idem Idempotency) providerResource[readmodel.Subscription, command.SubscriptionInput, readmodel.SubscriptionQuery, providerDeviceSubscriptionJSON] {
	return providerResource[readmodel.Subscription, command.SubscriptionInput, readmodel.SubscriptionQuery, providerDeviceSubscriptionJSON]{
		path: "/device_subscriptions", what: "device subscription", spec: providerDeviceSubscriptionList, idem: idem,
		reads: api.DeviceSubscriptionReads, writes: api.DeviceSubscriptions, del: api.DeviceSubscriptions.Delete,
		query: func(q ListQuery, bad map[string]string) readmodel.SubscriptionQuery {
			return readmodel.SubscriptionQuery{
				Page:        providerPage(q),
				Device:      providerFilterID(q, "device", bad),
				Account:     providerFilterID(q, "account", bad),
				Tariff:      providerFilterID(q, "tarif", bad),
				Provider:    providerFilterID(q, "provider", bad),
				QuickSearch: q.QuickSearch,
			}
		},
		decode: func(obj *wire.Object) command.SubscriptionInput {
			in := readProviderSubscription(obj)
			in.Device = obj.Int64("device")
			return in
		},
		view: providerDeviceSubscription, render: encodeProviderDeviceSubscription,
	}
}

// providerDeviceList is what GET /api/provider/devices accepts.
var providerDeviceList = ListSpec{
	Sort: readmodel.DeviceSortFields,
	Filters: map[string]FilterType{
		"account":             FilterInt,
		"provider":            FilterInt,
		"unique_id":           FilterString,
		"device_type":         FilterInt,
		"remote_custom_field": FilterString,
		"mac":                 FilterString,
		// TVIP's PHP SDK offers it: the devices of enabled (or disabled)
		// accounts.
		"enabled": FilterBool,
	},
	Params: []string{"as_of"},
}

// providerDevices is /devices: a create registers a device for an account
// before it logs in (pre-bound), an update changes the provider's fields
// or moves it to another account, and DELETE unbinds it.
func providerDevices(api ProviderAPI, idem Idempotency) providerResource[readmodel.Device, command.DeviceInput, readmodel.DeviceQuery, providerDeviceJSON] {
	return providerResource[readmodel.Device, command.DeviceInput, readmodel.DeviceQuery, providerDeviceJSON]{
		path: "/devices", what: "device", spec: providerDeviceList, idem: idem,
		reads: api.DeviceReads, writes: api.Devices, del: api.Devices.Delete,
		query: func(q ListQuery, bad map[string]string) readmodel.DeviceQuery {
			dq := readmodel.DeviceQuery{
				Page:        providerPage(q),
				Account:     providerFilterID(q, "account", bad),
				Provider:    providerFilterID(q, "provider", bad),
				DeviceType:  providerFilterID(q, "device_type", bad),
				QuickSearch: q.QuickSearch,
			}
			dq.UniqueID, _ = q.String("unique_id")
			if v, ok := q.Bool("enabled"); ok {
				dq.Enabled = &v
			}
			if v, ok := q.String("remote_custom_field"); ok {
				dq.RemoteCustomField = &v
			}
			if v, ok := q.String("mac"); ok {
				mac, err := domain.NormalizeMAC(strings.TrimSpace(v))
				if err != nil {
					bad["mac"] = err.Error()
				}
				dq.MAC = mac
			}
			return dq
		},
		decode: readProviderDevice,
		view:   func(d readmodel.Device) providerDeviceJSON { return providerDevice(d, api.DeviceOnline) },
		render: func(d readmodel.Device) ([]byte, error) { return json.Marshal(providerDevice(d, api.DeviceOnline)) },
		listAt: api.AccountReads.DevicesAsOf,
	}
}

// readProviderDevice reads the device fields of a body. The keys TVIP's
// device object has that only logins and connections set (ipaddr,
// last_online, first_online, last_fw_ver, operation_system), and created,
// are read-only and ignored, so that a record read and sent back passes.
func readProviderDevice(obj *wire.Object) command.DeviceInput {
	return command.DeviceInput{
		Account:           obj.Int64("account"),
		UniqueID:          obj.String("unique_id"),
		Class:             obj.String("class"),
		Model:             obj.NullableString("model"),
		Provider:          obj.Int64("provider"),
		MAC:               obj.NullableString("mac"),
		RemoteCustomField: obj.NullableString("remote_custom_field"),
		Comment:           obj.NullableString("comment"),
		UseNAT:            obj.Bool("use_nat"),
		UdpxyAddr:         obj.NullableString("udpxy_addr"),
		DeviceType:        obj.NullableInt64("device_type"),
	}
}

// providerNetworkList is what GET /api/provider/account_network accepts.
var providerNetworkList = ListSpec{
	Sort: readmodel.NetworkSortFields,
	Filters: map[string]FilterType{
		"account":  FilterInt,
		"provider": FilterInt,
	},
}

// providerNetworks is /account_network: IP networks of accounts, from
// which devices may log in without credentials (docs/provider-api.md).
func providerNetworks(api ProviderAPI, idem Idempotency) providerResource[readmodel.AccountNetwork, command.NetworkInput, readmodel.NetworkQuery, providerNetworkJSON] {
	return providerResource[readmodel.AccountNetwork, command.NetworkInput, readmodel.NetworkQuery, providerNetworkJSON]{
		path: "/account_network", what: "account network", spec: providerNetworkList, idem: idem,
		reads: api.NetworkReads, writes: api.Networks, del: api.Networks.Delete,
		query: func(q ListQuery, bad map[string]string) readmodel.NetworkQuery {
			return readmodel.NetworkQuery{
				Page:        providerPage(q),
				Account:     providerFilterID(q, "account", bad),
				Provider:    providerFilterID(q, "provider", bad),
				QuickSearch: q.QuickSearch,
			}
		},
		decode: func(obj *wire.Object) command.NetworkInput {
			return command.NetworkInput{
				Network:     obj.String("network"),
				Account:     obj.Int64("account"),
				Description: obj.NullableString("description"),
			}
		},
		view: providerNetwork, render: encodeProviderNetwork,
	}
}

// changes answers the change feed:
//
//	{"data":[{"position":"123","entity":"account","id":42,"type":"AccountUpdated.v1","time":"..."}],"next":"123"}
//
// after (default: the beginning) is exclusive; limit defaults to 100 (also
// for 0 or less) and is capped at 1000. An empty data means the client is
// up to date; it continues from next, which may have moved past changes it
// does not see.
func (h *providerHandlers) changes(c *gin.Context) {
	bad := map[string]string{}
	after, err := ParsePosition(c.Query("after"))
	if err != nil {
		bad["after"] = err.Error()
	}
	limit := 0 // the feed's default
	if v := c.Query("limit"); strings.TrimSpace(v) != "" {
		if n, err := wire.ParseInt(v); err != nil {
			bad["limit"] = err.Error()
		} else {
			limit = int(max(min(n, query.MaxChangesLimit), 0))
		}
	}
	if len(bad) > 0 {
		WriteError(c, ValidationFailed(bad))
		return
	}
	page, err := h.api.Changes.After(c.Request.Context(), callerOf(c), after, limit)
	if err != nil {
		WriteError(c, err)
		return
	}
	data := make([]providerFeedJSON, len(page.Changes))
	for i, ch := range page.Changes {
		data[i] = providerFeedEntry(ch)
	}
	providerJSON(c, gin.H{"data": data, "next": FormatPosition(page.Next)})
}

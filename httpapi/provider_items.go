package httpapi

import (
	"strings"

	"github.com/gin-gonic/gin"

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
}

// providerSubscriptions is /account_subscriptions.
func providerSubscriptions(api ProviderAPI, idem Idempotency) providerResource[readmodel.Subscription, command.SubscriptionInput, readmodel.SubscriptionQuery, providerSubscriptionJSON] {
	return providerResource[readmodel.Subscription, command.SubscriptionInput, readmodel.SubscriptionQuery, providerSubscriptionJSON]{
		path: "/account_subscriptions", what: "subscription", spec: providerSubscriptionList, idem: idem,
		reads: api.SubscriptionReads, writes: api.Subscriptions, del: api.Subscriptions.Delete,
		query: func(q ListQuery, bad map[string]string) readmodel.SubscriptionQuery {
			return readmodel.SubscriptionQuery{
				Page:     providerPage(q),
				Account:  providerFilterID(q, "account", bad),
				Tariff:   providerFilterID(q, "tarif", bad),
				Provider: providerFilterID(q, "provider", bad),
			}
		},
		decode: readProviderSubscription, view: providerSubscription, render: encodeProviderSubscription,
	}
}

// readProviderSubscription reads the subscription fields of a body; an
// update that ends it sends "stop".
func readProviderSubscription(obj *wire.Object) command.SubscriptionInput {
	in := command.SubscriptionInput{
		Account: obj.Int64("account"),
		Tariff:  obj.Int64("tarif"),
		Start:   obj.DateTime("start"),
		Stop:    obj.NullableDateTime("stop"),
	}
	if !obj.Has("tarif") { // the spelling of the billing interface
		in.Tariff = obj.Int64("tariff")
	}
	return in
}

// providerDeviceList is what GET /api/provider/devices accepts.
var providerDeviceList = ListSpec{
	Sort: readmodel.DeviceSortFields,
	Filters: map[string]FilterType{
		"account":   FilterInt,
		"provider":  FilterInt,
		"unique_id": FilterString,
	},
}

// providerDevices is /devices: read, and DELETE unbinds a device from its
// account.
func providerDevices(api ProviderAPI) providerResource[readmodel.Device, struct{}, readmodel.DeviceQuery, providerDeviceJSON] {
	return providerResource[readmodel.Device, struct{}, readmodel.DeviceQuery, providerDeviceJSON]{
		path: "/devices", what: "device", spec: providerDeviceList,
		reads: api.DeviceReads, del: api.Devices.Unbind,
		query: func(q ListQuery, bad map[string]string) readmodel.DeviceQuery {
			dq := readmodel.DeviceQuery{
				Page:     providerPage(q),
				Account:  providerFilterID(q, "account", bad),
				Provider: providerFilterID(q, "provider", bad),
			}
			dq.UniqueID, _ = q.String("unique_id")
			return dq
		},
		view: providerDevice,
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

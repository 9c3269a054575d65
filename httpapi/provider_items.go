package httpapi

import (
	"context"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
	"tvsm/internal/app"
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

func (h *providerHandlers) listSubscriptions(c *gin.Context) {
	q, err := ParseListQuery(c, providerSubscriptionList)
	if err != nil {
		WriteError(c, err)
		return
	}
	bad := map[string]string{}
	sq := readmodel.SubscriptionQuery{
		Page:     providerPage(q),
		Account:  providerFilterID(q, "account", bad),
		Tariff:   providerFilterID(q, "tarif", bad),
		Provider: providerFilterID(q, "provider", bad),
	}
	if len(bad) > 0 {
		WriteError(c, ValidationFailed(bad))
		return
	}
	l, err := h.api.SubscriptionReads.List(c.Request.Context(), callerOf(c), sq)
	if err != nil {
		WriteError(c, err)
		return
	}
	WriteList(c, q, l.Total, func(yield func(providerSubscriptionJSON) bool) {
		for s := range l.Items {
			if !yield(providerSubscription(s)) {
				return
			}
		}
	})
}

func (h *providerHandlers) getSubscription(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	s, err := h.api.SubscriptionReads.Get(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	providerJSON(c, providerSubscription(s))
}

// postSubscription creates a subscription, or updates one when the body
// carries its id (ending it with "stop", as the Provider API does).
func (h *providerHandlers) postSubscription(c *gin.Context) {
	h.writeSubscription(c, 0)
}

func (h *providerHandlers) putSubscription(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	h.writeSubscription(c, id)
}

func (h *providerHandlers) writeSubscription(c *gin.Context, pathID int64) {
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	id, update := providerBodyID(obj, pathID)
	in := command.SubscriptionInput{
		Account: obj.Int64("account"),
		Tariff:  obj.Int64("tarif"),
		Start:   obj.DateTime("start"),
		Stop:    obj.NullableDateTime("stop"),
	}
	if !obj.Has("tarif") { // the spelling of the billing interface
		in.Tariff = obj.Int64("tariff")
	}
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	if update {
		s, err := h.api.Subscriptions.Update(c.Request.Context(), callerOf(c), id, in)
		if err != nil {
			WriteError(c, err)
			return
		}
		providerJSON(c, providerSubscription(s))
		return
	}
	createOnce(c, h.idem, "subscription", fingerprintOf("subscription", in),
		func(ctx context.Context, caller app.Caller) (readmodel.Subscription, error) {
			return h.api.Subscriptions.Create(ctx, caller, in)
		}, encodeProviderSubscription)
}

func (h *providerHandlers) deleteSubscription(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	s, err := h.api.Subscriptions.Delete(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	providerJSON(c, providerSubscription(s))
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

func (h *providerHandlers) listDevices(c *gin.Context) {
	q, err := ParseListQuery(c, providerDeviceList)
	if err != nil {
		WriteError(c, err)
		return
	}
	bad := map[string]string{}
	dq := readmodel.DeviceQuery{
		Page:     providerPage(q),
		Account:  providerFilterID(q, "account", bad),
		Provider: providerFilterID(q, "provider", bad),
	}
	dq.UniqueID, _ = q.String("unique_id")
	if len(bad) > 0 {
		WriteError(c, ValidationFailed(bad))
		return
	}
	l, err := h.api.DeviceReads.List(c.Request.Context(), callerOf(c), dq)
	if err != nil {
		WriteError(c, err)
		return
	}
	WriteList(c, q, l.Total, func(yield func(providerDeviceJSON) bool) {
		for d := range l.Items {
			if !yield(providerDevice(d)) {
				return
			}
		}
	})
}

func (h *providerHandlers) getDevice(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	d, err := h.api.DeviceReads.Get(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	providerJSON(c, providerDevice(d))
}

// deleteDevice unbinds the device from its account.
func (h *providerHandlers) deleteDevice(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	d, err := h.api.Devices.Unbind(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	providerJSON(c, providerDevice(d))
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

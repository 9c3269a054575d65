package httpapi

import (
	"encoding/json"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// providerAccountList is what GET /api/provider/accounts accepts.
var providerAccountList = ListSpec{
	Sort: readmodel.AccountSortFields,
	Filters: map[string]FilterType{
		"provider":            FilterInt,
		"enabled":             FilterBool,
		"login":               FilterString,
		"remote_custom_field": FilterString,
		"region_tag":          FilterInt,
	},
	Params: []string{"as_of"},
}

// providerAccounts is /accounts.
func providerAccounts(api ProviderAPI, idem Idempotency) providerResource[query.AccountView, command.AccountInput, readmodel.AccountQuery, providerAccountJSON] {
	return providerResource[query.AccountView, command.AccountInput, readmodel.AccountQuery, providerAccountJSON]{
		path: "/accounts", what: "account", spec: providerAccountList, idem: idem,
		reads: api.AccountReads, writes: api.Accounts, del: api.Accounts.Delete,
		query: func(q ListQuery, bad map[string]string) readmodel.AccountQuery {
			aq := readmodel.AccountQuery{Page: providerPage(q), QuickSearch: q.QuickSearch}
			aq.Provider = providerFilterID(q, "provider", bad)
			if v, ok := q.Bool("enabled"); ok {
				aq.Enabled = &v
			}
			aq.Login, _ = q.String("login")
			if v, ok := q.String("remote_custom_field"); ok {
				aq.RemoteCustomField = &v
			}
			aq.RegionTag = providerFilterID(q, "region_tag", bad)
			return aq
		},
		decode: readProviderAccount, view: providerAccount, render: encodeProviderAccount,
		listAt: api.AccountReads.ListAsOf, getAt: api.AccountReads.AsOf,
	}
}

// providerFilterID returns an id filter's value (0: not given), recording
// a problem in bad when it cannot be an id.
func providerFilterID(q ListQuery, name string, bad map[string]string) int64 {
	v, ok := q.Int64(name)
	if ok && v <= 0 {
		bad[name] = "must be a positive integer"
		return 0
	}
	return v
}

// readProviderAccount reads the account fields of a body (the Provider
// API's account object). TVIP's documentation once calls the switch
// "enable" in its prose, though its payloads say "enabled": "enable" is
// accepted when "enabled" is absent.
func readProviderAccount(obj *wire.Object) command.AccountInput {
	in := command.AccountInput{
		Enabled:                obj.Bool("enabled"),
		Login:                  obj.String("login"),
		PinMD5:                 obj.String("pin_md5"),
		Fullname:               obj.String("fullname"),
		Provider:               obj.Int64("provider"),
		RemoteCustomField:      obj.NullableString("remote_custom_field"),
		ContractInfo:           obj.NullableString("contract_info"),
		MainAddress:            obj.NullableString("main_address"),
		AccountDesc:            obj.NullableString("account_desc"),
		RegionTag:              obj.NullableInt64("region_tag"),
		DevicesPerAccountLimit: obj.NullableInt64("devices_per_account_limit"),
	}
	if !obj.Has("enabled") {
		in.Enabled = obj.Bool("enable")
	}
	return in
}

// accountHistory answers {"data":[...]}: every change of the account,
// oldest first.
func (h *providerHandlers) accountHistory(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	entries, err := h.api.AccountReads.History(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	data := make([]providerHistoryJSON, len(entries))
	for i, e := range entries {
		data[i] = providerHistory(e)
	}
	providerJSON(c, gin.H{"data": data})
}

// eraseAccount answers {"id":N,"erased":true} once the account's personal
// data can no longer be read (AccountEraser).
func (h *providerHandlers) eraseAccount(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	force := false
	if v, ok := c.GetQuery("force"); ok {
		b, err := wire.ParseBool(v)
		if err != nil {
			WriteError(c, ValidationFailed(map[string]string{"force": "must be true or false"}))
			return
		}
		force = b
	}
	if err := h.api.AccountErasure.Erase(c.Request.Context(), callerOf(c), id, force); err != nil {
		WriteError(c, err)
		return
	}
	providerJSON(c, gin.H{"id": id, "erased": true})
}

// providerExportJSON is GET /accounts/{id}/export: everything held about
// the subscriber, in the Provider API's own shapes where it has one.
type providerExportJSON struct {
	Account       *providerAccountJSON       `json:"account"`
	History       []providerHistoryJSON      `json:"history"`
	Events        []providerExportEventJSON  `json:"events"`
	Devices       []providerDeviceJSON       `json:"devices"`
	Subscriptions []providerSubscriptionJSON `json:"subscriptions"`
	Networks      []providerNetworkJSON      `json:"networks"`
	Receipts      []providerReceiptJSON      `json:"receipts"`
}

type providerExportEventJSON struct {
	Stream    string          `json:"stream"`
	Revision  uint64          `json:"revision"`
	Type      string          `json:"type"`
	Time      wire.DateTime   `json:"time"`
	Actor     string          `json:"actor"`
	RequestID string          `json:"request_id"`
	Data      json.RawMessage `json:"data"`
}

type providerReceiptJSON struct {
	SendID    int64          `json:"send_id"`
	Index     int            `json:"index"`
	Command   string         `json:"command"`
	Device    int64          `json:"device"`
	Status    string         `json:"status"`
	Sent      *wire.DateTime `json:"sent"`
	Acked     *wire.DateTime `json:"acked"`
	Confirmed *wire.DateTime `json:"confirmed"`
}

// exportAccount answers everything held about the account (AccountExporter).
func (h *providerHandlers) exportAccount(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	x, err := h.api.AccountExport.Export(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	doc := providerExportJSON{
		History: make([]providerHistoryJSON, len(x.History)), Events: make([]providerExportEventJSON, len(x.Events)),
		Devices: make([]providerDeviceJSON, len(x.Devices)), Subscriptions: make([]providerSubscriptionJSON, len(x.Subscriptions)),
		Networks: make([]providerNetworkJSON, len(x.Networks)), Receipts: make([]providerReceiptJSON, len(x.Receipts)),
	}
	if x.Account != nil {
		a := providerAccount(*x.Account)
		doc.Account = &a
	}
	for i, e := range x.History {
		doc.History[i] = providerHistory(e)
	}
	for i, e := range x.Events {
		doc.Events[i] = providerExportEventJSON{Stream: e.Stream, Revision: e.Revision, Type: e.Type, Time: wire.NewDateTime(e.Time, nil),
			Actor: e.Actor, RequestID: e.RequestID, Data: e.Data}
	}
	for i, d := range x.Devices {
		doc.Devices[i] = providerDevice(d, h.api.DeviceOnline)
	}
	for i, s := range x.Subscriptions {
		doc.Subscriptions[i] = providerSubscription(s)
	}
	for i, n := range x.Networks {
		doc.Networks[i] = providerNetwork(n)
	}
	for i, r := range x.Receipts {
		doc.Receipts[i] = providerReceiptJSON{SendID: r.SendID, Index: r.Index, Command: string(r.Kind), Device: r.Receipt.Device,
			Status: string(r.Receipt.Status), Sent: optionalDateTime(r.Receipt.Sent), Acked: optionalDateTime(r.Receipt.Acked),
			Confirmed: optionalDateTime(r.Receipt.Confirmed)}
	}
	providerJSON(c, doc)
}

// optionalDateTime is t in the API's form; nil when zero.
func optionalDateTime(t time.Time) *wire.DateTime {
	if t.IsZero() {
		return nil
	}
	d := wire.NewDateTime(t, nil)
	return &d
}

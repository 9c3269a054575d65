package httpapi

import (
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

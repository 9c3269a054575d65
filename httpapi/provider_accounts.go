package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
	"tvsm/internal/app"
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
	},
}

func (h *providerHandlers) listAccounts(c *gin.Context) {
	q, err := ParseListQuery(c, providerAccountList)
	if err != nil {
		WriteError(c, err)
		return
	}
	aq := readmodel.AccountQuery{Page: providerPage(q), QuickSearch: q.QuickSearch}
	bad := map[string]string{}
	aq.Provider = providerFilterID(q, "provider", bad)
	if v, ok := q.Bool("enabled"); ok {
		aq.Enabled = &v
	}
	aq.Login, _ = q.String("login")
	if v, ok := q.String("remote_custom_field"); ok {
		aq.RemoteCustomField = &v
	}
	if len(bad) > 0 {
		WriteError(c, ValidationFailed(bad))
		return
	}
	l, err := h.api.AccountReads.List(c.Request.Context(), callerOf(c), aq)
	if err != nil {
		WriteError(c, err)
		return
	}
	WriteList(c, q, l.Total, func(yield func(providerAccountJSON) bool) {
		for a := range l.Items {
			if !yield(providerAccount(a)) {
				return
			}
		}
	})
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

func (h *providerHandlers) getAccount(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	a, err := h.api.AccountReads.Get(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	providerJSON(c, providerAccount(a))
}

// postAccount creates an account, or updates one when the body carries its
// id (the Provider API's update rule: id plus the fields to change).
func (h *providerHandlers) postAccount(c *gin.Context) {
	h.writeAccount(c, 0)
}

// putAccount updates the account of the path with a partial body.
func (h *providerHandlers) putAccount(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	h.writeAccount(c, id)
}

func (h *providerHandlers) writeAccount(c *gin.Context, pathID int64) {
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	id, update := providerBodyID(obj, pathID)
	in := readProviderAccount(obj)
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	if update {
		a, err := h.api.Accounts.Update(c.Request.Context(), callerOf(c), id, in)
		if err != nil {
			WriteError(c, err)
			return
		}
		providerJSON(c, providerAccount(a))
		return
	}
	createOnce(c, h.idem, "account", fingerprintOf("account", in),
		func(ctx context.Context, caller app.Caller) (query.AccountView, error) {
			return h.api.Accounts.Create(ctx, caller, in)
		}, encodeProviderAccount)
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
		RegionTag:              obj.NullableString("region_tag"),
		DevicesPerAccountLimit: obj.NullableInt64("devices_per_account_limit"),
	}
	if !obj.Has("enabled") {
		in.Enabled = obj.Bool("enable")
	}
	return in
}

func (h *providerHandlers) deleteAccount(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	a, err := h.api.Accounts.Delete(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	providerJSON(c, providerAccount(a))
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

package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
	"tvsm/projections/readmodel"
)

// mountProvider adds the Provider API's routes to g (/api/provider, behind
// Basic authentication).
//
//	GET    /accounts                   list (provider, enabled, login, remote_custom_field, region_tag, quick_search, sort, start, limit)
//	POST   /accounts                   create; with "id": partial update
//	GET    /accounts/{id}              one account
//	PUT    /accounts/{id}              partial update (POST /accounts/{id} too)
//	DELETE /accounts/{id}              delete; releases the login
//	GET    /accounts/{id}/history      every change with actor, time and field diff
//	POST   /accounts/{id}/erase        erase its personal data for good (force=true: even if subscribed)
//	GET    /accounts/{id}/export       everything held about it, one JSON document
//	POST   /accounts/bulk              NDJSON records, created or updated by login; NDJSON results
//	GET    /account_subscriptions      list (account, tarif, provider)
//	POST   /account_subscriptions      create; with "id": partial update
//	GET|PUT|POST|DELETE /account_subscriptions/{id}
//	GET    /device_subscriptions       a device's own subscriptions (device, account, tarif, provider)
//	POST|PUT|DELETE /device_subscriptions[/{id}]
//	GET    /devices                    list (account, provider, unique_id, device_type, remote_custom_field, mac)
//	POST   /devices                    register a device for an account (pre-bound)
//	GET|PUT|POST /devices/{id}         one device; update its provider fields or move it
//	DELETE /devices/{id}               unbind
//	GET|POST|PUT|DELETE /account_network[/{id}]   account networks (account, provider)
//	GET    /changes?after=&limit=      change feed
//	GET|POST /tarifs, GET|PUT|POST|DELETE /tarifs/{id}              tariffs (channel, enabled, provider, tarif_tag)
//	GET|POST /tarif_tags, GET|PUT|POST|DELETE /tarif_tags/{id}      tariff tags (enabled, provider)
//	GET    /providers[/{id}]           providers (enabled)
//	GET    /channels[/{id}]            channels (tarif, enabled)
//	GET    /favorite_group[/{id}]      channel categories
//	GET    /regions[/{id}]             regions
//	GET|POST /device_types, GET|PUT|POST|DELETE /device_types/{id}  device types (writes: superadmins)
//
// POST /commands/send/{recipients} and GET /commands/{send_id} are added
// too (mountCommands). The catalog (tarifs to device_types) is
// mountProviderCatalog's.
func mountProvider(g *gin.RouterGroup, api ProviderAPI, idem Idempotency) {
	mountProviderCatalog(g, api, idem)
	if api.AccountReads == nil {
		return
	}
	h := &providerHandlers{api: api}
	providerAccounts(api, idem).mount(g)
	g.GET("/accounts/:id/history", h.accountHistory)
	if api.AccountErasure != nil {
		g.POST("/accounts/:id/erase", h.eraseAccount)
	}
	if api.AccountExport != nil {
		g.GET("/accounts/:id/export", h.exportAccount)
	}
	g.POST("/accounts/bulk", h.accountsBulk)
	providerSubscriptions(api, idem).mount(g)
	providerDeviceSubscriptions(api, idem).mount(g)
	providerDevices(api, idem).mount(g)
	providerNetworks(api, idem).mount(g)
	g.GET("/changes", h.changes)
	mountCommands(g, api.Sends, api.Receipts, idem)
}

// providerHandlers are the Provider API's handlers beyond its collections:
// account history and the change feed.
type providerHandlers struct {
	api ProviderAPI
}

// providerPathID parses the {id} of a route: 400 naming id when it is not
// an integer, 404 when it cannot be an id.
func providerPathID(c *gin.Context) (int64, error) {
	id, err := wire.ParseInt(c.Param("id"))
	if err != nil {
		return 0, ValidationFailed(map[string]string{"id": err.Error()})
	}
	if id <= 0 {
		return 0, NotFound("no object with id " + c.Param("id"))
	}
	return id, nil
}

// providerBodyID reads the "id" of a body: present, the body is an update
// of that object. Null and 0 count as absent, since clients with a
// primitive id field send 0 on create. On PUT (and POST to /{id}) the id
// comes from the path, and one in the body must agree with it.
func providerBodyID(obj *wire.Object, pathID int64) (int64, bool) {
	id, ok := obj.Int64("id").Get()
	ok = ok && id != 0
	if pathID != 0 {
		if ok && id != pathID {
			obj.Fail("id", "does not match the id in the URL")
		}
		return pathID, true
	}
	if ok && id < 0 {
		obj.Fail("id", "must be a positive integer")
	}
	return id, ok
}

// providerPage converts a parsed list query into the read model's page.
func providerPage(q ListQuery) readmodel.Page {
	p := readmodel.Page{Start: q.Start, Limit: q.Limit}
	for _, k := range q.Sort {
		p.Sort = append(p.Sort, readmodel.SortKey{Field: k.Field, Desc: k.Desc})
	}
	return p
}

// providerJSON answers 200 with v.
func providerJSON(c *gin.Context, v any) {
	c.JSON(http.StatusOK, v)
}

// providerRaw answers 200 with a JSON body rendered before.
func providerRaw(c *gin.Context, body []byte) {
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}

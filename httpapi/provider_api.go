package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"tvsm/eventstore"
	"tvsm/httpapi/wire"
	"tvsm/internal/service"
	"tvsm/projections/readmodel"
)

// ProviderService is what the Provider API (/api/provider) needs:
// *service.Service implements it. Every method checks the caller's provider
// scope (service.ErrForbidden) and answers writes only once the read model
// shows them.
type ProviderService interface {
	ListAccounts(ctx context.Context, c service.Caller, q readmodel.AccountQuery) (readmodel.List[service.AccountView], error)
	Account(ctx context.Context, c service.Caller, id int64) (service.AccountView, error)
	// CreateAccount answers with encode's rendering of the new account;
	// under an Idempotency-Key a retry gets the recorded rendering.
	CreateAccount(ctx context.Context, c service.Caller, in service.AccountInput, encode service.BodyEncoder[service.AccountView]) ([]byte, error)
	UpdateAccount(ctx context.Context, c service.Caller, id int64, in service.AccountInput) (service.AccountView, error)
	DeleteAccount(ctx context.Context, c service.Caller, id int64) (service.AccountView, error)
	AccountHistory(ctx context.Context, c service.Caller, id int64) ([]service.HistoryEntry, error)

	ListSubscriptions(ctx context.Context, c service.Caller, q readmodel.SubscriptionQuery) (readmodel.List[readmodel.Subscription], error)
	Subscription(ctx context.Context, c service.Caller, id int64) (readmodel.Subscription, error)
	CreateSubscription(ctx context.Context, c service.Caller, in service.SubscriptionInput, encode service.BodyEncoder[readmodel.Subscription]) ([]byte, error)
	UpdateSubscription(ctx context.Context, c service.Caller, id int64, in service.SubscriptionInput) (readmodel.Subscription, error)
	DeleteSubscription(ctx context.Context, c service.Caller, id int64) (readmodel.Subscription, error)

	ListDevices(ctx context.Context, c service.Caller, q readmodel.DeviceQuery) (readmodel.List[readmodel.Device], error)
	Device(ctx context.Context, c service.Caller, id int64) (readmodel.Device, error)
	UnbindDevice(ctx context.Context, c service.Caller, id int64) (readmodel.Device, error)

	Changes(ctx context.Context, c service.Caller, after eventstore.Position, limit int) (service.ChangePage, error)
}

// mountProvider adds the Provider API's routes to g (/api/provider, behind
// Basic authentication).
//
//	GET    /accounts                   list (provider, enabled, login, remote_custom_field, quick_search, sort, start, limit)
//	POST   /accounts                   create; with "id": partial update
//	GET    /accounts/{id}              one account
//	PUT    /accounts/{id}              partial update (POST /accounts/{id} too)
//	DELETE /accounts/{id}              delete; releases the login
//	GET    /accounts/{id}/history      every change with actor, time and field diff
//	GET    /account_subscriptions      list (account, tarif, provider)
//	POST   /account_subscriptions      create; with "id": partial update
//	GET|PUT|POST|DELETE /account_subscriptions/{id}
//	GET    /devices                    list (account, provider, unique_id)
//	GET    /devices/{id}               one device
//	DELETE /devices/{id}               unbind
//	GET    /changes?after=&limit=      change feed
func mountProvider(g *gin.RouterGroup, svc ProviderService) {
	if svc == nil {
		return
	}
	h := &providerHandlers{svc: svc}
	g.GET("/accounts", h.listAccounts)
	g.POST("/accounts", h.postAccount)
	g.GET("/accounts/:id", h.getAccount)
	g.PUT("/accounts/:id", h.putAccount)
	g.POST("/accounts/:id", h.putAccount)
	g.DELETE("/accounts/:id", h.deleteAccount)
	g.GET("/accounts/:id/history", h.accountHistory)

	g.GET("/account_subscriptions", h.listSubscriptions)
	g.POST("/account_subscriptions", h.postSubscription)
	g.GET("/account_subscriptions/:id", h.getSubscription)
	g.PUT("/account_subscriptions/:id", h.putSubscription)
	g.POST("/account_subscriptions/:id", h.putSubscription)
	g.DELETE("/account_subscriptions/:id", h.deleteSubscription)

	g.GET("/devices", h.listDevices)
	g.GET("/devices/:id", h.getDevice)
	g.DELETE("/devices/:id", h.deleteDevice)

	g.GET("/changes", h.changes)
}

// providerHandlers are the Provider API's handlers.
type providerHandlers struct {
	svc ProviderService
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

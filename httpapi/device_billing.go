package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/internal/adapters/billing"
)

// Error codes of the billing proxy.
const (
	// CodeBadGateway: billing is unreachable or answered unusably (502).
	CodeBadGateway = "bad_gateway"
	// CodeGatewayTimeout: billing did not answer in time (504).
	CodeGatewayTimeout = "gateway_timeout"
)

// BillingIdentity is the device a billing call is made for, as the Device
// API's authentication established it.
type BillingIdentity struct {
	Device, Account, Provider int64
}

// BillingIdentityFunc returns the authenticated device of a request; ok is
// false when there is none (the proxy answers 401).
type BillingIdentityFunc func(c *gin.Context) (id BillingIdentity, ok bool)

// BillingProviderFunc looks a provider up: the read model's Provider.
type BillingProviderFunc func(id int64) (domain.Provider, bool)

// BillingJournal records proxied calls without blocking: billing.Journal.
type BillingJournal interface {
	Record(billing.Call) bool
}

// BillingOptions are what the billing proxy needs.
type BillingOptions struct {
	// Enabled is the billing feature flag (config.FeatureBilling); when
	// false every billing route answers 404.
	Enabled  bool
	Identity BillingIdentityFunc
	Provider BillingProviderFunc
	// Client makes the calls; its options set the header prefix, the
	// timeout and the body limits.
	Client *billing.Client
	// Journal records every call that went to billing; nil records none.
	Journal BillingJournal
	// Clock stamps journal entries (default time.Now).
	Clock func() time.Time
}

// MountBilling adds the billing proxy to r, the Device API group at
// /api/device, whose middleware authenticates the device first:
//
//	GET  /billing/cabinet           → {billing_url}/api/cabinet
//	POST /billing/switch            → {billing_url}/api/switch
//	POST /billing/subscribe         → {billing_url}/api/subscribe
//	POST /billing/unsubscribe       → {billing_url}/api/unsubscribe
//	GET  /billing/tariff/{id}       → {billing_url}/api/tariff/{id}
//	POST /billing/cabinet/password  → {billing_url}/api/cabinet/password
//
// Method, body and query go to billing unchanged, with the identifying
// headers and X-AUTH-TOKEN signature and nothing else of the device's
// request but its Accept-Language. Billing's status, body and Content-Type
// come back as they are. 404 when the feature is off or the device's
// provider does not resolve billing; 413 for a body over the client's
// limit; 502 when billing is unreachable or its answer unusable; 504 when
// it does not answer within the client's timeout. It panics when Identity,
// Provider or Client is missing.
func MountBilling(r gin.IRoutes, opts BillingOptions) {
	if opts.Identity == nil || opts.Provider == nil || opts.Client == nil {
		panic("httpapi: MountBilling needs Identity, Provider and Client")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	p := &billingProxy{opts: opts}
	r.GET("/billing/cabinet", p.handle(billing.RouteCabinet))
	r.POST("/billing/switch", p.handle(billing.RouteSwitch))
	r.POST("/billing/subscribe", p.handle(billing.RouteSubscribe))
	r.POST("/billing/unsubscribe", p.handle(billing.RouteUnsubscribe))
	r.GET("/billing/tariff/:id", p.handle(billing.RouteTariff))
	r.POST("/billing/cabinet/password", p.handle(billing.RoutePassword))
}

type billingProxy struct {
	opts BillingOptions
}

func (p *billingProxy) handle(route billing.Route) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !p.opts.Enabled {
			WriteError(c, NotFound("billing is not enabled"))
			return
		}
		who, ok := p.opts.Identity(c)
		if !ok {
			WriteError(c, Unauthorized("device authentication required"))
			return
		}
		settings, ok := p.settings(who.Provider)
		if !ok {
			WriteError(c, NotFound(fmt.Sprintf("billing is not enabled for provider %d", who.Provider)))
			return
		}
		path := route.Path
		if route == billing.RouteTariff {
			id, ok := billing.ParseTariffID(c.Param("id"))
			if !ok {
				WriteError(c, ValidationFailed(map[string]string{"id": "must be a positive integer"}))
				return
			}
			path = billing.TariffPath(id)
		}
		body, err := p.readBody(c)
		if err != nil {
			WriteError(c, err)
			return
		}
		p.forward(c, route, who, billing.Request{
			BaseURL: settings.URL, Token: settings.Token, Method: route.Method, Path: path,
			RawQuery: c.Request.URL.RawQuery, Body: body, Account: who.Account, Provider: who.Provider,
			AcceptLanguage: strings.Join(c.Request.Header.Values(billing.HeaderAcceptLanguage), ", "),
		})
	}
}

// settings returns the billing settings of provider when it resolves
// billing.
func (p *billingProxy) settings(provider int64) (domain.Billing, bool) {
	prov, ok := p.opts.Provider(provider)
	if !ok || !prov.Exists() || !prov.Billing.Resolve || prov.Billing.URL == "" {
		return domain.Billing{}, false
	}
	return prov.Billing, true
}

// readBody reads the device's body, within the client's request limit; a
// body must be declared as JSON (or not declared at all).
func (p *billingProxy) readBody(c *gin.Context) ([]byte, error) {
	limit := p.opts.Client.Options().MaxRequestBody
	r := c.Request
	if r.ContentLength == 0 {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, BodyTooLarge(limit)
	}
	if err := CheckJSONContentType(r); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(http.MaxBytesReader(c.Writer, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, BodyTooLarge(limit)
		}
		return nil, wrapped(BadRequest("reading the request body failed"), err)
	}
	return data, nil
}

// forward makes the call, answers the device and journals the call.
func (p *billingProxy) forward(c *gin.Context, route billing.Route, who BillingIdentity, req billing.Request) {
	at, started := p.opts.Clock(), time.Now()
	resp, err := p.opts.Client.Do(c.Request.Context(), req)
	call := billing.Call{
		At: at, Device: who.Device, Account: who.Account, Provider: who.Provider,
		Route: route.Name, Method: req.Method, Path: req.Path, Latency: time.Since(started),
		RequestID: RequestID(c.Request.Context()),
	}
	if err != nil {
		e := billingError(err, p.opts.Client.Options())
		call.Status, call.Failure = e.Status, billing.Failure(err)
		p.journal(call)
		WriteError(c, e)
		return
	}
	call.Status = resp.Status
	p.journal(call)
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-store")
	if resp.ContentType != "" {
		h.Set("Content-Type", resp.ContentType)
	} else {
		h["Content-Type"] = nil // pass "none" on: no sniffing
	}
	c.Status(resp.Status)
	_, _ = c.Writer.Write(resp.Body)
}

func (p *billingProxy) journal(call billing.Call) {
	if p.opts.Journal != nil {
		p.opts.Journal.Record(call)
	}
}

// billingError is the answer to a call billing did not answer usably. The
// cause names no billing address: devices must not learn it.
func billingError(err error, opts billing.Options) *Error {
	switch {
	case errors.Is(err, billing.ErrTimeout):
		return &Error{Status: http.StatusGatewayTimeout, Code: CodeGatewayTimeout,
			Cause: fmt.Sprintf("billing did not answer within %v", opts.Timeout), Err: err}
	case errors.Is(err, billing.ErrCanceled):
		return clientClosed(err)
	case errors.Is(err, billing.ErrRequestTooLarge):
		return wrapped(BodyTooLarge(opts.MaxRequestBody), err)
	case errors.Is(err, billing.ErrResponseTooLarge):
		return &Error{Status: http.StatusBadGateway, Code: CodeBadGateway, Cause: "billing answer too large", Err: err}
	case errors.Is(err, billing.ErrRedirect):
		return &Error{Status: http.StatusBadGateway, Code: CodeBadGateway, Cause: "billing answered with a redirect", Err: err}
	case errors.Is(err, billing.ErrBadBillingURL):
		return &Error{Status: http.StatusBadGateway, Code: CodeBadGateway, Cause: "the provider's billing url is not usable", Err: err}
	}
	return &Error{Status: http.StatusBadGateway, Code: CodeBadGateway, Cause: "billing unreachable", Err: err}
}

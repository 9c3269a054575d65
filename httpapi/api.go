package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/internal/platform/throttle"
	"tvsm/internal/service"
)

// IdempotencyKeyHeader names a POST create, so that its retries create once.
const IdempotencyKeyHeader = "Idempotency-Key"

// API is what the Provider, Admin and Device routes need. Each service is a
// small interface declared next to its handlers.
type API struct {
	// Auth checks admins' Basic credentials; wrap it with ThrottleLogins to
	// limit failed logins.
	Auth     Authenticator
	Admin    AdminService
	Provider ProviderService
	// Device serves the Device API (/api/device); nil leaves it out.
	Device DeviceService
	// Sockets upgrades GET /api/device/ws; nil leaves the route out.
	Sockets DeviceSockets
	// DeviceLogins throttles failed device logins per provider/login and per
	// client address; nil throttles nothing.
	DeviceLogins *throttle.Guard
	// Commands serves the command endpoint and its receipts under
	// /api/provider; nil leaves them out.
	Commands CommandService
	// Billing configures the billing proxy under /api/device/billing (its
	// Identity defaults to the device of the token); nil leaves it out.
	Billing *BillingOptions
}

// Mount adds the Provider API (/api/provider) and the Admin API (/api/admin)
// to engine, both behind HTTP Basic authentication, and the Device API
// (/api/device), behind device tokens.
func Mount(engine *gin.Engine, api API) {
	auth := BasicAuth(api.Auth)
	admin := engine.Group("/api/admin", auth)
	mountAdmin(admin, api.Admin)
	mountDebug(admin)
	provider := engine.Group("/api/provider", auth)
	mountProvider(provider, api.Provider)
	if api.Commands != nil {
		MountCommands(provider, api.Commands)
	}
	mountDevice(engine.Group("/api/device"), api.Device, api.Sockets, api.DeviceLogins)
	if api.Billing != nil && api.Device != nil {
		opts := *api.Billing
		if opts.Identity == nil {
			opts.Identity = tokenBillingIdentity
		}
		MountBilling(engine.Group("/api/device", DeviceAuth(api.Device)), opts)
	}
}

// tokenBillingIdentity is the device DeviceAuth authenticated.
func tokenBillingIdentity(c *gin.Context) (BillingIdentity, bool) {
	d, ok := CurrentDevice(c)
	return BillingIdentity{Device: d.Device, Account: d.Account, Provider: d.Provider}, ok
}

// callerOf is who makes the request, as the services see it: the admin that
// BasicAuth authenticated (every API route is behind it), its provider
// scope, the request id and, on POST, the Idempotency-Key.
func callerOf(c *gin.Context) service.Caller {
	p, _ := CurrentPrincipal(c)
	caller := service.Caller{Admin: p.Login, Scope: p.Provider, RequestID: RequestID(c.Request.Context())}
	if c.Request.Method == http.MethodPost {
		caller.IdempotencyKey = strings.TrimSpace(c.GetHeader(IdempotencyKeyHeader))
	}
	return caller
}

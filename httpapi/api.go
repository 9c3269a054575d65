package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/apidoc"
	"tvsm/httpapi/console"
	"tvsm/internal/app"
	"tvsm/internal/platform/throttle"
)

// API is what the Provider, Admin and Device routes need: the application's
// command and query handlers behind small interfaces declared here
// (ports.go), and what the HTTP side itself needs.
type API struct {
	// Auth checks admins' Basic credentials; wrap it with ThrottleLogins to
	// limit failed logins.
	Auth Authenticator
	// Idempotency makes a POST create with an Idempotency-Key happen once.
	Idempotency Idempotency
	Provider    ProviderAPI
	Admin       AdminAPI
	// Device serves the Device API (/api/device); a zero value leaves it out.
	Device DeviceAPI
	// Sockets upgrades GET /api/device/ws; nil leaves the route out.
	Sockets DeviceSockets
	// DeviceLogins throttles failed device logins per provider/login and per
	// client address; nil throttles nothing.
	DeviceLogins *throttle.Guard
	// Billing configures the billing proxy under /api/device/billing (its
	// Identity defaults to the device of the token); nil leaves it out.
	Billing *BillingOptions
	// ProfilerElsewhere leaves the profiler out of /api/admin: NewOps
	// serves it on the operators' listener.
	ProfilerElsewhere bool
	// Rebuilds serves /api/admin/rebuilds (superadmins); nil leaves it out.
	Rebuilds Rebuilds
	// Backups serves /api/admin/backups (superadmins); nil leaves it out.
	Backups Backups
	// Sessions serves the admin console's sign-in and sign-out
	// (/api/admin/session) and makes the Provider and Admin APIs accept
	// its session tokens besides Basic credentials; nil leaves them out.
	Sessions *Sessions
}

// Mount adds the Provider API (/api/provider) and the Admin API (/api/admin)
// to engine, both behind HTTP Basic authentication (or session tokens, with
// api.Sessions) and taking only JSON (requireBodyType) on state-changing
// requests, the Device API
// (/api/device), behind device tokens, and the admin console's page and
// files (/admin/, which call those APIs from the browser); and, without
// authentication, the APIs' OpenAPI documents (MountDocs: Swagger UI for the
// first two).
func Mount(engine *gin.Engine, api API) {
	console.Mount(engine)
	auth := AdminAuth(api.Auth, api.Sessions)
	if api.Sessions != nil {
		mountSessions(engine, api.Sessions, BasicAuth(api.Auth), auth)
	}
	mustMountDocs(engine.Group("/api/admin"), apidoc.Admin, true)
	mustMountDocs(engine.Group("/api/provider"), apidoc.Provider, true)
	mustMountDocs(engine.Group("/api/device"), apidoc.Device, false)
	admin := engine.Group("/api/admin", requireBodyType, auth, importIDFromHeader)
	mountAdmin(admin, api.Admin, api.Idempotency)
	if api.Admin.Imports != nil {
		mountImport(admin, api.Admin.Imports)
	}
	if api.Rebuilds != nil {
		mountRebuilds(admin, api.Rebuilds)
	}
	if api.Backups != nil {
		mountBackups(admin, api.Backups)
	}
	if !api.ProfilerElsewhere {
		mountDebug(admin)
	}
	mountProvider(engine.Group("/api/provider", requireBodyType, auth, importIDFromHeader), api.Provider, api.Idempotency)
	mountDevice(engine.Group("/api/device"), api.Device, api.Sockets, api.DeviceLogins)
	if api.Billing != nil && api.Device.Sessions != nil {
		opts := *api.Billing
		if opts.Identity == nil {
			opts.Identity = tokenBillingIdentity
		}
		MountBilling(engine.Group("/api/device", DeviceAuth(api.Device.Sessions)), opts)
	}
}

// tokenBillingIdentity is the device DeviceAuth authenticated.
func tokenBillingIdentity(c *gin.Context) (BillingIdentity, bool) {
	d, ok := CurrentDevice(c)
	return BillingIdentity{Device: d.Device, Account: d.Account, Provider: d.Provider}, ok
}

// callerOf is who makes the request, as the application sees it: the admin
// that BasicAuth authenticated (every API route is behind it), its provider
// scope, the request id and, on POST, the Idempotency-Key.
func callerOf(c *gin.Context) app.Caller {
	p, _ := CurrentPrincipal(c)
	caller := app.Caller{Admin: p.Login, Scope: p.Provider, RequestID: RequestID(c.Request.Context())}
	if c.Request.Method == http.MethodPost {
		caller.IdempotencyKey = strings.TrimSpace(c.GetHeader(IdempotencyKeyHeader))
	}
	return caller
}

package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/internal/service"
)

// IdempotencyKeyHeader names a POST create, so that its retries create once.
const IdempotencyKeyHeader = "Idempotency-Key"

// API is what the Provider and Admin routes need. Each service is a small
// interface declared next to its handlers.
type API struct {
	Auth     Authenticator
	Admin    AdminService
	Provider ProviderService
}

// Mount adds the Provider API (/api/provider) and the Admin API (/api/admin)
// to engine, both behind HTTP Basic authentication.
func Mount(engine *gin.Engine, api API) {
	auth := BasicAuth(api.Auth)
	mountAdmin(engine.Group("/api/admin", auth), api.Admin)
	mountProvider(engine.Group("/api/provider", auth), api.Provider)
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

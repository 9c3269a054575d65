package httpapi

import "github.com/gin-gonic/gin"

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

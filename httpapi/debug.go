package httpapi

import (
	"net/http/pprof"

	"github.com/gin-gonic/gin"
)

// mountDebug adds Go's profiler under /api/admin/debug/pprof for
// superadmins (a scoped admin gets 403): operators profile a node in place,
// and `GET .../heap?gc=1` collects garbage first, which the broadcast
// benchmark uses to measure live memory per connection.
func mountDebug(g *gin.RouterGroup) {
	mountProfiler(g.Group("/debug/pprof", superadminOnly))
}

// mountProfiler adds Go's profiler's routes to d.
func mountProfiler(d *gin.RouterGroup) {
	d.GET("", gin.WrapF(pprof.Index)) // also .../pprof/: the server strips the slash
	d.GET("/cmdline", gin.WrapF(pprof.Cmdline))
	d.GET("/profile", gin.WrapF(pprof.Profile))
	d.GET("/symbol", gin.WrapF(pprof.Symbol))
	d.GET("/trace", gin.WrapF(pprof.Trace))
	d.GET("/:profile", func(c *gin.Context) { pprof.Handler(c.Param("profile")).ServeHTTP(c.Writer, c.Request) })
}

// superadminOnly refuses admins scoped to a provider.
func superadminOnly(c *gin.Context) {
	if p, ok := CurrentPrincipal(c); !ok || !p.Superadmin() {
		WriteError(c, Forbidden("superadmins only"))
		c.Abort()
		return
	}
	c.Next()
}

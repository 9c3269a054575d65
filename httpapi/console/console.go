// Package console serves the admin web console at /admin/: a single page
// built from web/console (Vite, TypeScript, uPlot) into dist/, embedded in
// the binary, so a node serves it offline and `make run` needs only Go. The
// page talks to the public Admin, Provider and Statistics APIs with a session
// token of the admin (POST /api/admin/session); this package serves files
// and nothing else.
//
// Rebuild dist/ after changing web/console: make console (Node.js and
// npm), then commit both. docs/console.md records the decisions.
package console

import (
	"embed"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/internal/platform/staticfiles"
)

//go:embed all:dist
var dist embed.FS

var files = staticfiles.Files{FS: dist, Dir: "dist"}

// Path is where the console is served.
const Path = "/admin"

// Mount serves the console on engine: /admin (and /admin/, which the
// engine's handler answers as /admin) is the page, /admin/NAME its files.
// They are public: the page holds no data, and asks for the admin's
// credentials before it calls an API.
func Mount(engine *gin.Engine) {
	engine.GET(Path, serve)
	engine.GET(Path+"/*file", serve)
}

func serve(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("file"), "/")
	h := c.Writer.Header()
	// Only the console's own files and the APIs of the same origin, no
	// framing (styles may be inline: the chart library sizes its canvas
	// with style attributes).
	staticfiles.SetPageHeaders(h)
	// Vite names the built scripts and styles after their content
	// (assets/index-3f2a.js): they never change, while the page must be
	// fetched again to pick up a new build.
	cache := "no-cache"
	if strings.HasPrefix(name, "assets/") {
		cache = "public, max-age=31536000, immutable"
	}
	files.Serve(c.Writer, c.Request, name, cache)
}

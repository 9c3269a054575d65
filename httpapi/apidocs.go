package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/apidoc"
	"tvsm/internal/platform/staticfiles"
)

// MountDocs serves the OpenAPI document of the API name (apidoc.Provider,
// ...) under g, the API's group, without authentication:
//
//	GET /openapi.json, /openapi.yaml             the OpenAPI 3.1 document
//	GET /swagger-ui/index.html (and its files)   Swagger UI, when ui is set
//
// Swagger UI's files carry the admin console's Content-Security-Policy and
// X-Frame-Options (staticfiles.SetPageHeaders).
//
// It fails only when the embedded document is broken, which the package's
// tests rule out.
func MountDocs(g gin.IRoutes, name string, ui bool) error {
	doc, err := apidoc.Document(name)
	if err != nil {
		return err
	}
	g.GET("/openapi.json", func(c *gin.Context) { c.Data(http.StatusOK, "application/json; charset=utf-8", doc.JSON) })
	g.GET("/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml; charset=utf-8", doc.YAML) })
	if ui {
		g.GET("/swagger-ui", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, c.Request.URL.Path+"/index.html") })
		g.GET("/swagger-ui/*file", func(c *gin.Context) {
			// The console's policy: Swagger UI's own files and the API of
			// the same origin, no inline script, never in another site's
			// frame (its "Try it out" sends requests with the credentials
			// typed into it).
			staticfiles.SetPageHeaders(c.Writer.Header())
			apidoc.ServeAsset(c.Writer, c.Request, c.Param("file"))
		})
	}
	return nil
}

// mustMountDocs is MountDocs for the documents Mount serves, which has no
// error to return: a broken embedded document is a defect of the build.
func mustMountDocs(g gin.IRoutes, name string, ui bool) {
	if err := MountDocs(g, name, ui); err != nil {
		panic(err)
	}
}

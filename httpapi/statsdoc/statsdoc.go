// Package statsdoc serves the Statistics API's documentation: its OpenAPI 3
// document (openapi.yaml, also served as JSON) and Swagger UI.
//
// Swagger UI is swagger-ui-dist 5.35.0 from npm (Apache-2.0, LICENSE and
// NOTICE in swagger-ui/), vendored with only what the page needs:
// swagger-ui-bundle.js and swagger-ui.css, stored gzip-compressed (about
// 480 KB instead of 1.9 MB) and sent compressed to clients that accept it,
// plus the favicons. index.html and swagger-initializer.js are ours: they
// load ../openapi.json without the standalone preset. To upgrade:
//
//	npm pack swagger-ui-dist@<version> && tar xzf swagger-ui-dist-<version>.tgz
//	gzip -9 -n -c package/swagger-ui-bundle.js > swagger-ui/swagger-ui-bundle.js.gz
//	gzip -9 -n -c package/swagger-ui.css > swagger-ui/swagger-ui.css.gz
package statsdoc

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"

	"go.yaml.in/yaml/v3"

	"tvsm/internal/platform/staticfiles"
)

//go:embed openapi.yaml swagger-ui
var files embed.FS

// OpenAPIYAML returns the OpenAPI document as written.
func OpenAPIYAML() []byte {
	b, _ := files.ReadFile("openapi.yaml")
	return b
}

// OpenAPIJSON returns the OpenAPI document as JSON.
func OpenAPIJSON() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(OpenAPIYAML(), &doc); err != nil {
		return nil, fmt.Errorf("statsdoc: openapi.yaml: %w", err)
	}
	return json.MarshalIndent(doc, "", "  ")
}

// swaggerUI is the vendored Swagger UI.
var swaggerUI = staticfiles.Files{FS: files, Dir: "swagger-ui"}

// Asset returns the Swagger UI file name ("index.html",
// "swagger-ui-bundle.js", ...; "" is index.html): its content, its content
// type and whether the content is gzip-compressed. ok is false for unknown
// names.
func Asset(name string) (content []byte, contentType string, gzipped, ok bool) {
	return swaggerUI.Open(name)
}

// ServeAsset answers r with the Swagger UI file name, or 404. Compressed
// files go out as they are to clients accepting gzip and are expanded for
// the others.
func ServeAsset(w http.ResponseWriter, r *http.Request, name string) {
	swaggerUI.Serve(w, r, name, "public, max-age=3600")
}

// Names lists the Swagger UI files that Asset serves.
func Names() []string { return swaggerUI.Names() }

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
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
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

// Asset returns the Swagger UI file name ("index.html",
// "swagger-ui-bundle.js", ...; "" is index.html): its content, its content
// type and whether the content is gzip-compressed. ok is false for unknown
// names.
func Asset(name string) (content []byte, contentType string, gzipped, ok bool) {
	name = path.Clean("/" + name)[1:]
	if name == "" {
		name = "index.html"
	}
	if strings.HasSuffix(name, ".gz") {
		return nil, "", false, false
	}
	contentType = mime.TypeByExtension(path.Ext(name))
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	if b, err := files.ReadFile("swagger-ui/" + name + ".gz"); err == nil {
		return b, contentType, true, true
	}
	b, err := files.ReadFile("swagger-ui/" + name)
	if err != nil {
		return nil, "", false, false
	}
	return b, contentType, false, true
}

// ServeAsset answers r with the Swagger UI file name, or 404. Compressed
// files go out as they are to clients accepting gzip and are expanded for
// the others.
func ServeAsset(w http.ResponseWriter, r *http.Request, name string) {
	content, contentType, gzipped, ok := Asset(name)
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "public, max-age=3600")
	if gzipped {
		h.Set("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
		} else if content, ok = gunzip(content); !ok {
			http.Error(w, "corrupt asset", http.StatusInternalServerError)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(content)
	}
}

func acceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

func gunzip(b []byte) ([]byte, bool) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, false
	}
	out, err := io.ReadAll(zr)
	return out, err == nil
}

// Names lists the Swagger UI files that Asset serves.
func Names() []string {
	entries, _ := fs.ReadDir(files, "swagger-ui")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".gz"))
	}
	return names
}

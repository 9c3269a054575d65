// Package apidoc holds the OpenAPI 3.1 documents of tvsm's four APIs,
// Provider, Admin, Device (with the billing proxy and the websocket's
// messages) and Statistics, and the Swagger UI that shows them.
//
// Each API's document is a YAML file of its own (provider.yaml, ...); the
// parts they share (the error body and its answers, paging parameters, the
// Basic authentication scheme) are written once, in common.yaml, and
// copied into each document's components where it refers to them, so that
// every served document stands alone.
//
// Swagger UI is swagger-ui-dist 5.35.0 from npm (Apache-2.0, LICENSE and
// NOTICE in swagger-ui/), vendored with only what the page needs:
// swagger-ui-bundle.js and swagger-ui.css, stored gzip-compressed (about
// 480 KB instead of 1.9 MB) and sent compressed to clients that accept it,
// plus the favicons. index.html and swagger-initializer.js are ours: they
// load ../openapi.json (the document of the API the page is served under)
// without the standalone preset. To upgrade:
//
//	npm pack swagger-ui-dist@<version> && tar xzf swagger-ui-dist-<version>.tgz
//	gzip -9 -n -c package/swagger-ui-bundle.js > swagger-ui/swagger-ui-bundle.js.gz
//	gzip -9 -n -c package/swagger-ui.css > swagger-ui/swagger-ui.css.gz
package apidoc

import (
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"tvsm/internal/platform/staticfiles"
)

//go:embed *.yaml swagger-ui
var files embed.FS

// The APIs, by the name their routes start with (/api/{name}/...).
const (
	Provider = "provider"
	Admin    = "admin"
	Device   = "device"
	Stats    = "stats"
)

// Names lists the APIs that have a document.
func Names() []string { return []string{Provider, Admin, Device, Stats} }

// Doc is one API's document, ready to serve.
type Doc struct {
	YAML, JSON []byte
}

var docs = sync.OnceValues(func() (map[string]Doc, error) {
	common, err := readYAML("common.yaml")
	if err != nil {
		return nil, err
	}
	out := make(map[string]Doc, len(Names()))
	for _, name := range Names() {
		doc, err := readYAML(name + ".yaml")
		if err != nil {
			return nil, err
		}
		if err := bundle(doc, common); err != nil {
			return nil, fmt.Errorf("apidoc: %s.yaml: %w", name, err)
		}
		y, err := yaml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("apidoc: %s.yaml: %w", name, err)
		}
		j, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("apidoc: %s.yaml: %w", name, err)
		}
		out[name] = Doc{YAML: y, JSON: j}
	}
	return out, nil
})

// Document returns the document of the API name (one of Names), with the
// shared components it refers to.
func Document(name string) (Doc, error) {
	all, err := docs()
	if err != nil {
		return Doc{}, err
	}
	d, ok := all[name]
	if !ok {
		return Doc{}, fmt.Errorf("apidoc: no document %q", name)
	}
	return d, nil
}

func readYAML(name string) (map[string]any, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("apidoc: %s: %w", name, err)
	}
	return doc, nil
}

// bundle copies into doc's components every component of common that doc
// refers to, directly or through another copied component, and that doc
// does not define itself. A reference to a component neither has is an
// error.
func bundle(doc, common map[string]any) error {
	components := object(doc, "components")
	shared := object(common, "components")
	for pending := refs(doc); len(pending) > 0; {
		ref := pending[0]
		pending = pending[1:]
		kind, name, ok := strings.Cut(strings.TrimPrefix(ref, "#/components/"), "/")
		if !ok || !strings.HasPrefix(ref, "#/components/") {
			return fmt.Errorf("reference %q: only #/components/{kind}/{name} is supported", ref)
		}
		if _, ok := object(components, kind)[name]; ok {
			continue
		}
		c, ok := object(shared, kind)[name]
		if !ok {
			return fmt.Errorf("reference %q: no such component here or in common.yaml", ref)
		}
		object(components, kind)[name] = c
		pending = append(pending, refs(c)...)
	}
	return nil
}

// object returns m[key] as a map, creating it when absent.
func object(m map[string]any, key string) map[string]any {
	if o, ok := m[key].(map[string]any); ok {
		return o
	}
	o := map[string]any{}
	m[key] = o
	return o
}

// refs returns the components v refers to, sorted, once each: the targets
// of its $ref members and the security schemes its security requirements
// name.
func refs(v any) []string {
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				seen[r] = true
			}
			if reqs, ok := v["security"].([]any); ok {
				for _, req := range reqs {
					for scheme := range asMap(req) {
						seen["#/components/securitySchemes/"+scheme] = true
					}
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return slices.Sorted(maps.Keys(seen))
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
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

// AssetNames lists the Swagger UI files that Asset serves.
func AssetNames() []string { return swaggerUI.Names() }

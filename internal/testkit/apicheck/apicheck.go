// Package apicheck holds a node's HTTP answers to the OpenAPI documents of
// its APIs (httpapi/apidoc): Handler wraps a test server's handler so that
// every answer of the Provider, Admin, Device and Statistics APIs is
// validated, status, headers and body, against the document of its API,
// and a mismatch fails the test that made the request. nodetest wraps
// every node it starts, so every black-box test checks the documents
// without saying so.
//
// The validation is github.com/pb33f/libopenapi-validator's (OpenAPI 3.1,
// JSON Schema 2020-12). An answer fails when its status is not documented
// for the operation, its Content-Type is not, its body does not match the
// schema, or a documented required header is missing. A request the
// documents do not describe (a path or method of no operation) must be
// answered 404 with the error body, as the engine answers unknown routes.
//
// Not validated: requests; the routes that are no API (probes, /metrics,
// the profiler, the documents and Swagger UI themselves, anything outside
// /api/{provider,admin,device,stats}); answers over MaxBody, whose status,
// headers and content type are still checked; and connections the handler
// hijacked (the websocket upgrade: its messages have schemas in the Device
// document, which the websocket tests check with Schema).
package apicheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/content"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"tvsm/httpapi/apidoc"
)

// MaxBody is the largest answer body validated against its schema (a bulk
// answer of 100,000 lines is larger; its status and headers are still
// checked).
const MaxBody = 32 << 20

// Checker validates answers against the four documents.
type Checker struct {
	apis map[string]*api // by apidoc name
}

type api struct {
	name string
	// full validates status, headers and body; head only the first two,
	// for bodies over MaxBody.
	full, head validator.Validator
	schemas    map[string]*base.Schema // the document's component schemas
	schemaV    schema_validation.SchemaValidator
}

// Load returns the Checker of the embedded documents, built once per
// process (parsing and compiling them takes a while).
var Load = sync.OnceValues(func() (*Checker, error) {
	c := &Checker{apis: map[string]*api{}}
	for _, name := range apidoc.Names() {
		a, err := newAPI(name)
		if err != nil {
			return nil, err
		}
		c.apis[name] = a
	}
	return c, nil
})

func newAPI(name string) (*api, error) {
	doc, err := apidoc.Document(name)
	if err != nil {
		return nil, err
	}
	build := func(opts ...config.Option) (validator.Validator, *base.Schema, map[string]*base.Schema, error) {
		d, err := libopenapi.NewDocument(doc.JSON)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("apicheck: %s document: %w", name, err)
		}
		v, errs := validator.NewValidator(d, append(opts, config.WithBodyDecoder("application/x-ndjson", ndjsonDecoder()))...)
		if len(errs) > 0 {
			return nil, nil, nil, fmt.Errorf("apicheck: %s document: %w", name, errors.Join(errs...))
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			return nil, nil, nil, fmt.Errorf("apicheck: %s document is not valid OpenAPI: %s", name, describe(verrs))
		}
		model, err := d.BuildV3Model()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("apicheck: %s document: %w", name, err)
		}
		schemas := map[string]*base.Schema{}
		if model.Model.Components != nil && model.Model.Components.Schemas != nil {
			for pair := model.Model.Components.Schemas.First(); pair != nil; pair = pair.Next() {
				schemas[pair.Key()] = pair.Value().Schema()
			}
		}
		return v, nil, schemas, nil
	}
	full, _, schemas, err := build()
	if err != nil {
		return nil, err
	}
	head, _, _, err := build(config.WithoutResponseBodyValidation())
	if err != nil {
		return nil, err
	}
	return &api{name: name, full: full, head: head, schemas: schemas, schemaV: schema_validation.NewSchemaValidator()}, nil
}

// ndjsonDecoder reads an NDJSON body (application/x-ndjson: one JSON value
// a line, blank lines skipped) as the array of its lines, which the
// document's schema of the media type describes.
func ndjsonDecoder() content.Decoder {
	return content.DecoderFunc(func(in *content.DecodeInput) (any, error) {
		data, err := io.ReadAll(in.Body)
		if err != nil {
			return nil, err
		}
		items := []any{}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			items = append(items, v)
		}
		return items, nil
	})
}

// Route returns the API whose document describes a request for path, or
// "" for paths that are no API's (probes, metrics, the profiler, the
// documents and Swagger UI, and anything outside /api/, such as the admin
// console).
func Route(path string) string {
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	rest, ok := strings.CutPrefix(path, "/api/")
	if !ok {
		return ""
	}
	name, sub, _ := strings.Cut(rest, "/")
	switch {
	case name != apidoc.Provider && name != apidoc.Admin && name != apidoc.Device && name != apidoc.Stats:
		return ""
	case sub == "openapi.json", sub == "openapi.yaml", sub == "swagger-ui", strings.HasPrefix(sub, "swagger-ui/"):
		return ""
	case name == apidoc.Admin && (sub == "debug" || strings.HasPrefix(sub, "debug/")):
		return "" // Go's profiler, which the operators' listener serves in production
	}
	return name
}

// Check validates an answer to req and returns what does not match the
// documents (nil when all does). truncated says body is only the start of
// a longer answer: its schema is not checked.
func (c *Checker) Check(req *http.Request, status int, header http.Header, body []byte, truncated bool) error {
	name := Route(req.URL.Path)
	if name == "" {
		return nil
	}
	a := c.apis[name]
	r := req
	if p := req.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") { // served as the path without it
		u := *req.URL
		u.Path, u.RawPath = strings.TrimSuffix(p, "/"), ""
		r = req.Clone(req.Context())
		r.URL = &u
	}
	resp := &http.Response{
		StatusCode: status, Header: header, Request: r,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
	v := a.full
	if truncated {
		v = a.head
	}
	ok, errs := v.ValidateHttpResponse(r, resp)
	if ok {
		return nil
	}
	if len(errs) > 0 && errs[0].ValidationType == helpers.PathValidation {
		// No operation: the engine must answer it as an unknown route.
		if status == http.StatusNotFound && a.matches("Error", body) == nil {
			return nil
		}
		return fmt.Errorf("%s %s is no operation of the %s document but was answered %d: %s",
			req.Method, req.URL.Path, name, status, describe(errs))
	}
	return fmt.Errorf("%s %s answered %d (%s) against the %s document: %s",
		req.Method, req.URL.Path, status, header.Get("Content-Type"), name, describe(errs))
}

// Schema validates the JSON value data against the component schema name
// of the API's document (the websocket's messages, for one).
func (c *Checker) Schema(apiName, name string, data []byte) error {
	a, ok := c.apis[apiName]
	if !ok {
		return fmt.Errorf("apicheck: no document %q", apiName)
	}
	return a.matches(name, data)
}

func (a *api) matches(name string, data []byte) error {
	s, ok := a.schemas[name]
	if !ok {
		return fmt.Errorf("apicheck: the %s document has no schema %s", a.name, name)
	}
	if ok, errs := a.schemaV.ValidateSchemaBytes(s, data); !ok {
		return fmt.Errorf("%s does not match %s of the %s document: %s", data, name, a.name, describe(errs))
	}
	return nil
}

// describe writes validation errors with the failures of their schemas.
func describe[E interface{ Error() string }](errs []E) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		if ve, ok := any(e).(*liberrors.ValidationError); ok {
			b.WriteString(ve.Message)
			if ve.Reason != "" {
				b.WriteString(" (" + ve.Reason + ")")
			}
			for _, f := range ve.SchemaValidationErrors {
				fmt.Fprintf(&b, " [%s: %s]", f.FieldPath, f.Reason)
			}
			continue
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

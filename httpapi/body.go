package httpapi

import (
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
)

// ReadObject reads the request body as one JSON object for the typed getters
// of wire.Object. It answers nothing itself: hand its error to WriteError,
// which maps it to 415 (a body declared as something other than JSON), 413
// (over opts.MaxBytes, 1 MiB by default) or 400 (not a JSON object).
//
//	obj, err := httpapi.ReadObject(c, wire.DecodeOptions{})
//	if err != nil { httpapi.WriteError(c, err); return }
//	login := obj.String("login")
//	...
//	if err := obj.Err(); err != nil { httpapi.WriteError(c, err); return } // 400 naming each field
func ReadObject(c *gin.Context, opts wire.DecodeOptions) (*wire.Object, error) {
	if err := CheckJSONContentType(c.Request); err != nil {
		return nil, err
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = wire.DefaultMaxBytes
	}
	if c.Request.ContentLength > limit {
		return nil, BodyTooLarge(limit)
	}
	if opts.SizeHint == 0 {
		opts.SizeHint = c.Request.ContentLength
	}
	// MaxBytesReader also tells the server to close the connection instead
	// of draining an oversized body.
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	return wire.ReadObject(c.Request.Body, opts)
}

// CheckJSONContentType accepts a request body declared as JSON, leniently:
// no Content-Type at all (clients that never set one), application/json with
// any parameters (charset=utf-8), application/*+json and text/json. Anything
// else is a 415.
func CheckJSONContentType(r *http.Request) error {
	var ct string
	if v := r.Header["Content-Type"]; len(v) > 0 { // Header.Get without canonicalizing a canonical key
		ct = v[0]
	}
	if strings.TrimSpace(ct) == "" || strings.EqualFold(ct, "application/json") {
		return nil // the common case, without parsing
	}
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil && err != mime.ErrInvalidMediaParameter { // bad parameters are not our business
		return UnsupportedMediaType(ct)
	}
	switch {
	case mediaType == "application/json", mediaType == "text/json",
		strings.HasPrefix(mediaType, "application/") && strings.HasSuffix(mediaType, "+json"):
		return nil
	}
	return UnsupportedMediaType(ct)
}

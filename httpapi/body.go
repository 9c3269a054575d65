package httpapi

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
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
	obj, err := wire.ReadObject(c.Request.Body, opts)
	if obj != nil {
		c.Set(requestObjectKey, obj)
	}
	return obj, err
}

// requestObjectKey is where ReadObject leaves the request's object, for
// WriteError to name a key nobody read beside a field it nearly spells.
const requestObjectKey = "httpapi.requestObject"

// withMisspelledKeys adds to a validation failure e, for each key of the
// request's object that no handler read and that is a near miss of a field
// e names ("nmae" beside "name: required"), that it is unknown and what it
// may have meant. Unknown keys are otherwise ignored, as the original API
// does, so a typo would only show as the required field it misses.
func withMisspelledKeys(c *gin.Context, e *Error) *Error {
	v, ok := c.Get(requestObjectKey)
	obj, _ := v.(*wire.Object)
	if !ok || obj == nil {
		return e
	}
	var fields map[string]string
	for _, key := range obj.Unknown() {
		for _, name := range slices.Sorted(maps.Keys(e.Fields)) {
			if key != name && nearMiss(key, name) {
				if fields == nil {
					fields = maps.Clone(e.Fields)
				}
				fields[wire.MemberName(key)] = fmt.Sprintf("unknown field; did you mean %q?", name)
				break
			}
		}
	}
	if fields == nil {
		return e
	}
	out := ValidationFailed(fields)
	out.Err = e.Err
	return out
}

// nearMiss reports whether a is b misspelt: the same but for case, or at
// most one edit (an insertion, a deletion, a substitution or two adjacent
// letters swapped) apart, two for names of six letters or more.
func nearMiss(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	limit := 1
	if min(len(a), len(b)) >= 6 {
		limit = 2
	}
	if d := len(a) - len(b); d > limit || -d > limit {
		return false // and a body of many long keys costs no more
	}
	return editDistance(a, b) <= limit
}

// editDistance is the optimal string alignment distance between a and b
// (Levenshtein's, with a swap of adjacent bytes counting as one edit).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// CheckJSONContentType accepts a request body declared as JSON, leniently:
// no Content-Type at all, application/json with any parameters
// (charset=utf-8), application/*+json and text/json. Anything else is a
// 415. The Device API's clients hold no credentials a browser would attach
// by itself, so a body they leave undeclared is read as JSON; the Admin and
// Provider APIs refuse that earlier (requireBodyType).
func CheckJSONContentType(r *http.Request) error {
	var ct string
	if v := r.Header["Content-Type"]; len(v) > 0 { // Header.Get without canonicalizing a canonical key
		ct = v[0]
	}
	if strings.TrimSpace(ct) == "" {
		return nil
	}
	mediaType, ok := parseMediaType(ct)
	switch {
	case !ok:
	case mediaType == "application/json", mediaType == "text/json",
		strings.HasPrefix(mediaType, "application/") && strings.HasSuffix(mediaType, "+json"):
		return nil
	}
	return UnsupportedMediaType(ct)
}

// refuseUnknown records every field of o no getter read as unknown, for
// the Admin API bodies that refuse what they do not know (the Provider
// API's, like the original product's, ignore unknown fields).
func refuseUnknown(o *wire.Object) {
	for _, name := range o.Unknown() {
		o.Fail(wire.MemberName(name), "unknown field")
	}
}

package httpapi

import (
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
)

// Media types the state-changing requests of the Admin and Provider APIs
// may declare: JSON, and NDJSON on bulk routes (application/jsonl is the
// other name JSON Lines files go by).
var (
	jsonBodyTypes   = []string{"application/json"}
	ndjsonBodyTypes = []string{"application/x-ndjson", "application/jsonl"}
)

// requireBodyType refuses with 415 a state-changing request (POST, PUT,
// PATCH, DELETE) of the group it is used on that does not declare its body
// as application/json (NDJSON on bulk routes), parameters such as charset
// allowed, names in any case.
//
// These APIs take HTTP Basic credentials, which a browser caches and
// attaches by itself, even to a request another site's page makes. Such a
// page can send a POST without asking the server first only with no
// Content-Type or with text/plain, application/x-www-form-urlencoded or
// multipart/form-data (a "simple" request, as an HTML form or a no-cors
// fetch sends); any other Content-Type makes the browser ask first (a
// preflight OPTIONS), which tvsm does not grant. Refusing every other type
// makes such a forged request change nothing, bodiless ones included (POST
// /accounts/{id}/erase has no body).
//
// PUT, PATCH and DELETE cannot be sent that way at all (an HTML form sends
// GET or POST; fetch asks first for other methods), so one without a body
// may leave Content-Type out: `curl -X DELETE` sends none. One with a body,
// or that declares a type, must declare an accepted one.
func requireBodyType(c *gin.Context) {
	r := c.Request
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return
	}
	accepted := jsonBodyTypes
	if isBulkRoute(c) {
		accepted = ndjsonBodyTypes
	}
	var ct string
	if v := r.Header["Content-Type"]; len(v) > 0 { // Header.Get without canonicalizing a canonical key
		ct = v[0]
	}
	if strings.TrimSpace(ct) == "" && r.Method != http.MethodPost && r.ContentLength == 0 {
		return
	}
	if mediaType, ok := parseMediaType(ct); !ok || !slices.Contains(accepted, mediaType) {
		WriteError(c, UnsupportedMediaType(ct, accepted...))
	}
}

// isBulkRoute reports whether c's route takes NDJSON records (POST
// /api/provider/accounts/bulk).
func isBulkRoute(c *gin.Context) bool {
	return strings.HasSuffix(c.FullPath(), "/bulk")
}

// parseMediaType returns the media type of a Content-Type value, in lower
// case and without parameters; ok is false for an empty or malformed one.
// Malformed parameters are tolerated ("application/json; charset"): the
// type is what the check is about.
func parseMediaType(ct string) (mediaType string, ok bool) {
	if strings.EqualFold(ct, "application/json") {
		return "application/json", true // the common case, without parsing
	}
	if strings.TrimSpace(ct) == "" {
		return "", false
	}
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil && err != mime.ErrInvalidMediaParameter {
		return "", false
	}
	return mediaType, true
}

package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
)

// do performs a request with optional headers (pairs) and returns the
// response and its body.
func (s *testServer) do(t *testing.T, method, path string, body io.Reader, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// accountHandler reads an account the way the Provider API handler does and
// echoes what it understood.
func accountHandler(opts wire.DecodeOptions) gin.HandlerFunc {
	return func(c *gin.Context) {
		obj, err := ReadObject(c, opts)
		if err != nil {
			WriteError(c, err)
			return
		}
		login := obj.String("login")
		provider := obj.Int64("provider")
		enabled := obj.Bool("enabled")
		obj.DateTime("start")
		obj.Require("login", "provider")
		if err := obj.Err(); err != nil {
			WriteError(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"login": login.Value, "provider": provider.Value, "enabled": enabled.Or(true), "unknown": obj.Unknown()})
	}
}

func TestReadObject(t *testing.T) {
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.POST("/accounts", accountHandler(wire.DecodeOptions{}))
		e.POST("/small", accountHandler(wire.DecodeOptions{MaxBytes: 64}))
	})
	const good = `{"id":null,"login":"anna","provider":"7","enabled":0,"created":"x","colour":"red"}`

	t.Run("accepted content types", func(t *testing.T) {
		for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8",
			"application/vnd.api+json", "text/json", "application/json; charset"} {
			var headers []string
			if ct != "" {
				headers = []string{"Content-Type", ct}
			}
			resp, body := srv.do(t, http.MethodPost, "/accounts", strings.NewReader(good), headers...)
			assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{
				"login": "anna", "provider": 7, "enabled": false, "unknown": []any{"colour", "id"},
			})
		}
	})

	t.Run("rejected content types", func(t *testing.T) {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "json"} {
			resp, body := srv.do(t, http.MethodPost, "/accounts", strings.NewReader(good), "Content-Type", ct)
			assertJSONResponse(t, resp, body, http.StatusUnsupportedMediaType, map[string]any{
				"statusCode": 415, "error": CodeUnsupportedMedia,
			})
			if !strings.Contains(decodeJSON(t, body)["cause"].(string), "application/json") {
				t.Errorf("415 cause does not say what to send: %s", body)
			}
		}
	})

	t.Run("field errors", func(t *testing.T) {
		resp, body := srv.do(t, http.MethodPost, "/accounts",
			strings.NewReader(`{"provider":"seven","enabled":"maybe","start":"2026-11-22"}`), "Content-Type", "application/json")
		assertJSONResponse(t, resp, body, http.StatusBadRequest, map[string]any{
			"statusCode": 400, "error": CodeValidationFailed,
			"cause": "enabled: must be a boolean (true/false or 1/0); login: required; provider: must be an integer; start: must be a date-time like 2026-11-22T17:59:41+0000",
			"fields": map[string]any{
				"enabled":  "must be a boolean (true/false or 1/0)",
				"login":    "required",
				"provider": "must be an integer",
				"start":    "must be a date-time like 2026-11-22T17:59:41+0000",
			},
		})
	})

	t.Run("bad bodies", func(t *testing.T) {
		for body, cause := range map[string]string{
			"":               "request body: empty; want a JSON object",
			"[1,2]":          "request body: must be a JSON object",
			`{"login":`:      "request body: invalid JSON: unexpected end of input",
			`{"a":1}{"b":2}`: "request body: invalid JSON: data after the object",
		} {
			resp, b := srv.do(t, http.MethodPost, "/accounts", strings.NewReader(body))
			assertJSONResponse(t, resp, b, http.StatusBadRequest, map[string]any{"error": CodeBadRequest, "cause": cause})
		}
	})

	t.Run("too large", func(t *testing.T) {
		big := `{"login":"` + strings.Repeat("a", wire.DefaultMaxBytes) + `"}`
		resp, body := srv.do(t, http.MethodPost, "/accounts", strings.NewReader(big))
		assertJSONResponse(t, resp, body, http.StatusRequestEntityTooLarge, map[string]any{
			"statusCode": 413, "error": CodeBodyTooLarge, "cause": "request body exceeds the limit of 1048576 bytes",
		})
		// Without a Content-Length (a reader of unknown length is sent
		// chunked), the limit is found while reading.
		small := `{"login":"` + strings.Repeat("a", 100) + `","provider":1}`
		resp, body = srv.do(t, http.MethodPost, "/small", io.MultiReader(strings.NewReader(small)))
		assertJSONResponse(t, resp, body, http.StatusRequestEntityTooLarge, map[string]any{
			"error": CodeBodyTooLarge, "cause": "request body exceeds the limit of 64 bytes",
		})
		resp, body = srv.do(t, http.MethodPost, "/small", io.MultiReader(strings.NewReader(`{"login":"a","provider":1}`)))
		assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"login": "a"})
	})
}

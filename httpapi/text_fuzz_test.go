package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// FuzzQueryText: whatever the raw query, the engine answers 400 exactly
// when a decoded parameter name or value is not valid UTF-8, and never 5xx.
func FuzzQueryText(f *testing.F) {
	for _, seed := range []string{"", "login=anna", "login=%FFx", "%FE=1", "a=%zz&b=%C3%A9", "q=%ED%A0%80", "a=1&a=%80", "x;y=%FF"} {
		f.Add(seed)
	}
	engine := New(Options{Logger: discardLogger()})
	engine.GET("/x", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	f.Fuzz(func(t *testing.T, raw string) {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.URL.RawQuery = raw
		w := httptest.NewRecorder()
		engine.ServeHTTP(w, req)
		values, _ := url.ParseQuery(raw)
		invalid := false
		for name, vs := range values {
			invalid = invalid || !utf8.ValidString(name)
			for _, v := range vs {
				invalid = invalid || !utf8.ValidString(v)
			}
		}
		switch {
		case invalid && w.Code != http.StatusBadRequest:
			t.Fatalf("query %q with invalid text: %d", raw, w.Code)
		case !invalid && w.Code != http.StatusNoContent:
			t.Fatalf("query %q: %d %s", raw, w.Code, w.Body)
		}
	})
}

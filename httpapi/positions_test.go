package httpapi

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/projections"
)

func at(n uint64) eventstore.Position { return eventstore.Position{Commit: n, Prepare: n} }

// TestWritesAnswerTheirPosition: a write answers X-TVSM-Position with the
// newest position it noted; one that wrote nothing (or only set a status)
// answers what the node had applied; reads carry no position.
func TestWritesAnswerTheirPosition(t *testing.T) {
	var applied projections.Progress
	applied.Advance(at(9))
	srv := newTestServerWith(t, Options{Applied: &applied}, func(e *gin.Engine) {
		e.POST("/write", func(c *gin.Context) {
			for _, p := range []eventstore.Position{at(7), {Commit: 8, Prepare: 5}, at(3)} {
				if err := app.WaitApplied(c.Request.Context(), &applied, p, time.Second); err != nil {
					WriteError(c, err)
					return
				}
			}
			c.JSON(http.StatusOK, gin.H{"ok": true})
		})
		e.DELETE("/noop", func(c *gin.Context) { c.Status(http.StatusNoContent) })
		e.PUT("/refused", func(c *gin.Context) { WriteError(c, BadRequest("no")) })
		e.GET("/read", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{}) })
	})
	for _, tc := range []struct{ method, path, want string }{
		{http.MethodPost, "/write", "8/5"},
		{http.MethodDelete, "/noop", "9"},
		{http.MethodPut, "/refused", "9"},
		{http.MethodGet, "/read", ""},
	} {
		resp, body := srv.do(t, tc.method, tc.path, nil)
		if got := resp.Header.Get(HeaderPosition); got != tc.want || len(resp.Header.Values(HeaderPosition)) > 1 {
			t.Errorf("%s %s: %s %q (%d, %s), want %q once", tc.method, tc.path, HeaderPosition, resp.Header.Values(HeaderPosition), resp.StatusCode, body, tc.want)
		}
	}
}

// positionsServer serves /read and /write behind BasicAuth, as the APIs
// are, on a node that has applied what applied says.
func positionsServer(t *testing.T, applied AppliedProgress, timeout time.Duration) *testServer {
	auth := NewBcryptAuthenticator(newAdminStore(t).lookup, BcryptOptions{})
	return newTestServerWith(t, Options{Applied: applied, MinPositionTimeout: timeout}, func(e *gin.Engine) {
		g := e.Group("", BasicAuth(auth))
		g.GET("/read", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"applied": FormatPosition(applied.Position())}) })
		g.POST("/write", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{}) })
	})
}

var rootAuth = basic("root", "root-secret")

// TestMinPositionWaitsBounded: an authenticated request sending
// X-TVSM-Min-Position is answered at once when the node has applied it,
// after the wait when the node gets there within the timeout, and 503 with
// Retry-After when it does not. A malformed value is a 400 naming the
// header.
func TestMinPositionWaitsBounded(t *testing.T) {
	var applied projections.Progress
	applied.Advance(at(10))
	const timeout = 300 * time.Millisecond
	srv := positionsServer(t, &applied, timeout)
	for _, v := range []string{"10", "0", "3/1", " 10 "} {
		if resp, body := srv.get(t, "/read", HeaderMinPosition, v, "Authorization", rootAuth); resp.StatusCode != http.StatusOK {
			t.Errorf("min position %q with 10 applied: %d %s", v, resp.StatusCode, body)
		}
	}

	go func() {
		time.Sleep(50 * time.Millisecond)
		applied.Advance(at(12))
	}()
	resp, body := srv.get(t, "/read", HeaderMinPosition, "12", "Authorization", rootAuth)
	assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"applied": "12"})
	// Writes wait too: a decision checked against the read model sees the
	// state the client read elsewhere.
	if resp, body := srv.do(t, http.MethodPost, "/write", nil, HeaderMinPosition, "12", "Authorization", rootAuth); resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderPosition) != "12" {
		t.Errorf("write with a reached min position: %d %q %s", resp.StatusCode, resp.Header.Get(HeaderPosition), body)
	}

	started := time.Now()
	resp, body = srv.get(t, "/read", HeaderMinPosition, "13", "Authorization", rootAuth)
	if took := time.Since(started); took < timeout || took > timeout+5*time.Second {
		t.Errorf("a position never applied was answered after %v, want after the %v timeout", took, timeout)
	}
	assertJSONResponse(t, resp, body, http.StatusServiceUnavailable, map[string]any{"error": CodeUnavailable})
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("503 without Retry-After: %v", resp.Header)
	}
	if applied.Waiters() != 0 {
		t.Errorf("%d waiters left behind", applied.Waiters())
	}

	for _, bad := range []string{"x", "-1", "1/", "/1", "1/2/3", "99999999999999999999", "1.5"} {
		resp, body := srv.get(t, "/read", HeaderMinPosition, bad, "Authorization", rootAuth)
		assertJSONResponse(t, resp, body, http.StatusBadRequest, map[string]any{"error": CodeValidationFailed})
		if fields := decodeJSON(t, body)["fields"].(map[string]any); !slices.Equal(mapKeys(fields), []string{HeaderMinPosition}) {
			t.Errorf("min position %q: fields %v, want only %s", bad, fields, HeaderMinPosition)
		}
	}
}

// countingProgress counts the waits asked of it.
type countingProgress struct {
	*projections.Progress
	waits atomic.Int64
}

func (p *countingProgress) WaitWithin(ctx context.Context, pos eventstore.Position, timeout time.Duration) (bool, error) {
	p.waits.Add(1)
	return p.Progress.WaitWithin(ctx, pos, timeout)
}

// TestMinPositionWaitsOnlyOnceAuthenticated: a request without credentials,
// or with wrong ones, is answered 401 without waiting for its
// X-TVSM-Min-Position, so an anonymous client cannot hold requests open
// for the timeout; an authenticated one waits, once.
func TestMinPositionWaitsOnlyOnceAuthenticated(t *testing.T) {
	applied := &countingProgress{Progress: new(projections.Progress)}
	applied.Advance(at(10))
	srv := positionsServer(t, applied, 200*time.Millisecond)
	for name, headers := range map[string][]string{
		"no credentials":    {HeaderMinPosition, "99"},
		"wrong credentials": {HeaderMinPosition, "99", "Authorization", basic("root", "wrong")},
	} {
		resp, body := srv.get(t, "/read", headers...)
		assertJSONResponse(t, resp, body, http.StatusUnauthorized, map[string]any{"error": CodeUnauthorized})
		if n := applied.waits.Load(); n != 0 {
			t.Fatalf("%s: %d waits for the min position before authentication, want none", name, n)
		}
	}
	resp, body := srv.get(t, "/read", HeaderMinPosition, "99", "Authorization", rootAuth)
	assertJSONResponse(t, resp, body, http.StatusServiceUnavailable, map[string]any{"error": CodeUnavailable})
	if n := applied.waits.Load(); n != 1 {
		t.Fatalf("%d waits for an authenticated request, want 1", n)
	}
}

func mapKeys(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FuzzParsePosition: whatever the text, ParsePosition does not panic, and a
// position it accepts is written back (FormatPosition) to text that reads
// as the same position.
func FuzzParsePosition(f *testing.F) {
	for _, seed := range []string{"", "0", "123", "123/120", " 7 ", "1/", "/1", "1/2/3", "-1", "+5", "18446744073709551615", "18446744073709551616", "１２"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePosition(s)
		if err != nil {
			return
		}
		again, err := ParsePosition(FormatPosition(p))
		if err != nil || again != p {
			t.Fatalf("ParsePosition(%q) = %v, written %q, read back %v, %v", s, p, FormatPosition(p), again, err)
		}
	})
}

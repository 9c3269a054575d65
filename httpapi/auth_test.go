package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
	"tvsm/internal/testkit/testutil"

	"github.com/gin-gonic/gin"
	"golang.org/x/crypto/bcrypt"
)

// adminStore is an in-memory CredentialLookup whose passwords can change.
type adminStore struct {
	mu     sync.Mutex
	admins map[string]storedAdmin
}

type storedAdmin struct {
	hash     string
	provider *int64
}

func newAdminStore(t testing.TB) *adminStore {
	s := &adminStore{admins: map[string]storedAdmin{}}
	seven := int64(7)
	s.set(t, "root", "root-secret", nil)
	s.set(t, "sync7", "sync-secret", &seven)
	return s
}

func (s *adminStore) set(t testing.TB, login, password string, provider *int64) {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admins[login] = storedAdmin{hash: string(hash), provider: provider}
}

func (s *adminStore) setProvider(login string, provider *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.admins[login]
	a.provider = provider
	s.admins[login] = a
}

func (s *adminStore) lookup(login string) (string, *int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.admins[login]
	return a.hash, a.provider, ok
}

func basic(login, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(login+":"+password))
}

// authServer serves /api/whoami and /api/providers/:id behind BasicAuth.
func authServer(t *testing.T, auth Authenticator) *testServer {
	return newTestServer(t, nil, func(e *gin.Engine) {
		api := e.Group("/api", BasicAuth(auth))
		api.GET("/whoami", func(c *gin.Context) {
			p, ok := CurrentPrincipal(c)
			if !ok {
				t.Error("no principal after BasicAuth")
			}
			fromCtx, _ := PrincipalFromContext(c) // the gin context falls back to the request's
			provider := any(nil)
			if scope, scoped := p.Scope(); scoped {
				provider = scope
			}
			c.JSON(http.StatusOK, gin.H{"login": p.Login, "provider": provider, "superadmin": p.Superadmin(), "ctx_login": fromCtx.Login})
		})
		api.GET("/providers/:id", func(c *gin.Context) {
			var id int64
			fmt.Sscan(c.Param("id"), &id)
			if err := RequireProvider(c, id); err != nil {
				WriteError(c, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"id": id})
		})
		api.GET("/admins", func(c *gin.Context) {
			if err := RequireSuperadmin(c); err != nil {
				WriteError(c, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"ok": true})
		})
	})
}

func TestBasicAuth(t *testing.T) {
	store := newAdminStore(t)
	clock := testutil.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	auth := NewBcryptAuthenticator(store.lookup, BcryptOptions{DummyCost: bcrypt.MinCost, Now: clock.Now, CacheTTL: time.Minute})
	srv := authServer(t, auth)

	// expect401 checks a refusal and that it cost exactly comparisons bcrypt checks.
	expect401 := func(t *testing.T, cause string, comparisons uint64, headers ...string) {
		t.Helper()
		before := auth.Comparisons()
		resp, body := srv.get(t, "/api/whoami", headers...)
		assertJSONResponse(t, resp, body, http.StatusUnauthorized, map[string]any{
			"statusCode": 401, "error": CodeUnauthorized, "cause": cause,
		})
		if got := resp.Header.Get("WWW-Authenticate"); got != `Basic realm="tvsm"` {
			t.Errorf("WWW-Authenticate = %q", got)
		}
		if got := auth.Comparisons() - before; got != comparisons {
			t.Errorf("%d bcrypt comparisons, want %d", got, comparisons)
		}
	}

	t.Run("refusals", func(t *testing.T) {
		expect401(t, "authentication required (Authorization: Basic)", 0)
		expect401(t, "Basic authentication required", 0, "Authorization", "Bearer abc")
		expect401(t, "malformed Basic credentials", 0, "Authorization", "Basic !!!not-base64")
		expect401(t, "malformed Basic credentials", 0, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("no-colon")))
		expect401(t, "malformed Basic credentials", 0, "Authorization", basic("", "root-secret"))
		expect401(t, "invalid login or password", 1, "Authorization", basic("root", "wrong"))
		// An unknown login costs a comparison too (against the dummy hash).
		expect401(t, "invalid login or password", 1, "Authorization", basic("nobody", "root-secret"))
		expect401(t, "invalid login or password", 1, "Authorization", basic("root", string(make([]byte, 73))))
	})

	t.Run("good credentials and the cache", func(t *testing.T) {
		before := auth.Comparisons()
		resp, body := srv.get(t, "/api/whoami", "Authorization", basic("root", "root-secret"))
		assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"login": "root", "superadmin": true, "provider": nil, "ctx_login": "root"})
		if got := auth.Comparisons() - before; got != 1 {
			t.Errorf("first request: %d comparisons, want 1", got)
		}
		for range 5 {
			resp, body = srv.get(t, "/api/whoami", "Authorization", basic("root", "root-secret"))
			assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"login": "root"})
		}
		if got := auth.Comparisons() - before; got != 1 {
			t.Errorf("after 5 cached requests: %d comparisons, want 1", got)
		}
		// Lenient forms of the header: scheme case, no padding.
		raw := base64.RawStdEncoding.EncodeToString([]byte("root:root-secret"))
		resp, body = srv.get(t, "/api/whoami", "Authorization", "basic  "+raw)
		assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"login": "root"})
		// A wrong password after a cached success still fails, and is not cached.
		expect401(t, "invalid login or password", 1, "Authorization", basic("root", "root-secret2"))
		expect401(t, "invalid login or password", 1, "Authorization", basic("root", "root-secret2"))
		// A password containing a colon.
		store.set(t, "colon", "a:b:c", nil)
		resp, body = srv.get(t, "/api/whoami", "Authorization", basic("colon", "a:b:c"))
		assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"login": "colon"})
	})

	t.Run("password change invalidates at once", func(t *testing.T) {
		srv.get(t, "/api/whoami", "Authorization", basic("sync7", "sync-secret")) // warm
		store.set(t, "sync7", "new-secret", func() *int64 { v := int64(7); return &v }())
		expect401(t, "invalid login or password", 1, "Authorization", basic("sync7", "sync-secret"))
		resp, body := srv.get(t, "/api/whoami", "Authorization", basic("sync7", "new-secret"))
		assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"login": "sync7", "provider": 7, "superadmin": false})
		// Setting the same password again gives a new salt, hence a new hash: a miss, then a hit.
		store.set(t, "sync7", "new-secret", func() *int64 { v := int64(7); return &v }())
		before := auth.Comparisons()
		srv.get(t, "/api/whoami", "Authorization", basic("sync7", "new-secret"))
		srv.get(t, "/api/whoami", "Authorization", basic("sync7", "new-secret"))
		if got := auth.Comparisons() - before; got != 1 {
			t.Errorf("%d comparisons after a rehash, want 1", got)
		}
	})

	t.Run("scope and deletion take effect at once", func(t *testing.T) {
		srv.get(t, "/api/whoami", "Authorization", basic("root", "root-secret")) // cached
		eight := int64(8)
		store.setProvider("root", &eight)
		resp, body := srv.get(t, "/api/whoami", "Authorization", basic("root", "root-secret"))
		assertJSONResponse(t, resp, body, http.StatusOK, map[string]any{"provider": 8, "superadmin": false})
		store.setProvider("root", nil)
		store.mu.Lock()
		saved := store.admins["colon"]
		delete(store.admins, "colon")
		store.mu.Unlock()
		expect401(t, "invalid login or password", 1, "Authorization", basic("colon", "a:b:c"))
		store.mu.Lock()
		store.admins["colon"] = saved
		store.mu.Unlock()
	})

	t.Run("cache entries expire", func(t *testing.T) {
		srv.get(t, "/api/whoami", "Authorization", basic("root", "root-secret"))
		before := auth.Comparisons()
		clock.Advance(59 * time.Second)
		srv.get(t, "/api/whoami", "Authorization", basic("root", "root-secret"))
		if got := auth.Comparisons() - before; got != 0 {
			t.Errorf("%d comparisons within the TTL, want 0", got)
		}
		clock.Advance(2 * time.Second)
		srv.get(t, "/api/whoami", "Authorization", basic("root", "root-secret"))
		if got := auth.Comparisons() - before; got != 1 {
			t.Errorf("%d comparisons after the TTL, want 1", got)
		}
	})
}

func TestScope(t *testing.T) {
	store := newAdminStore(t)
	srv := authServer(t, NewBcryptAuthenticator(store.lookup, BcryptOptions{DummyCost: bcrypt.MinCost}))
	root, sync7 := basic("root", "root-secret"), basic("sync7", "sync-secret")

	for _, tc := range []struct {
		auth, path string
		status     int
		cause      string
	}{
		{root, "/api/providers/7", http.StatusOK, ""},
		{root, "/api/providers/8", http.StatusOK, ""},
		{root, "/api/admins", http.StatusOK, ""},
		{sync7, "/api/providers/7", http.StatusOK, ""},
		{sync7, "/api/providers/8", http.StatusForbidden, `provider 8 is outside the scope of admin "sync7"`},
		{sync7, "/api/admins", http.StatusForbidden, `admin "sync7" is scoped to a provider; this needs a superadmin`},
	} {
		resp, body := srv.get(t, tc.path, "Authorization", tc.auth)
		want := map[string]any{}
		if tc.status == http.StatusForbidden {
			want = map[string]any{"statusCode": 403, "error": CodeForbidden, "cause": tc.cause}
		}
		assertJSONResponse(t, resp, body, tc.status, want)
	}

	// Outside BasicAuth there is no principal: 401, not a pass.
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
	for _, err := range []error{RequireProvider(c, 7), RequireSuperadmin(c)} {
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
			t.Errorf("without a principal: %v", err)
		}
	}
}

type failingAuth struct{ err error }

func (f failingAuth) Authenticate(context.Context, string, string) (Principal, error) {
	return Principal{}, f.err
}

func TestBasicAuthBackendErrors(t *testing.T) {
	srv := authServer(t, failingAuth{err: errors.New("read model unavailable")})
	resp, body := srv.get(t, "/api/whoami", "Authorization", basic("root", "x"), HeaderRequestID, "r")
	assertJSONResponse(t, resp, body, http.StatusInternalServerError, map[string]any{"error": CodeInternal})
	if resp.Header.Get("WWW-Authenticate") != "" {
		t.Error("a failure of the check asks for credentials")
	}

	wrapped := authServer(t, failingAuth{err: fmt.Errorf("ldap: %w", ErrBadCredentials)})
	resp, body = wrapped.get(t, "/api/whoami", "Authorization", basic("root", "x"))
	assertJSONResponse(t, resp, body, http.StatusUnauthorized, map[string]any{"error": CodeUnauthorized})

	// A corrupt stored hash is a server fault (logged), not a 401.
	auth := NewBcryptAuthenticator(func(string) (string, *int64, bool) { return "not-a-bcrypt-hash", nil, true }, BcryptOptions{DummyCost: bcrypt.MinCost})
	if _, err := auth.Authenticate(context.Background(), "root", "x"); err == nil || errors.Is(err, ErrBadCredentials) {
		t.Errorf("corrupt hash: %v", err)
	}
	// An admin without a password cannot log in.
	auth = NewBcryptAuthenticator(func(string) (string, *int64, bool) { return "", nil, true }, BcryptOptions{DummyCost: bcrypt.MinCost})
	if _, err := auth.Authenticate(context.Background(), "root", ""); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("empty hash: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := auth.Authenticate(ctx, "root", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestBcryptCacheBounds(t *testing.T) {
	store := newAdminStore(t)
	for i := range 5 {
		store.set(t, fmt.Sprintf("a%d", i), "pw", nil)
	}
	auth := NewBcryptAuthenticator(store.lookup, BcryptOptions{DummyCost: bcrypt.MinCost, CacheSize: 3})
	ctx := context.Background()
	for i := range 5 {
		if _, err := auth.Authenticate(ctx, fmt.Sprintf("a%d", i), "pw"); err != nil {
			t.Fatal(err)
		}
		if n := auth.cacheLen(); n > 3 {
			t.Fatalf("cache holds %d entries, bound 3", n)
		}
	}
	// The newest entries stay; the oldest was evicted.
	before := auth.Comparisons()
	auth.Authenticate(ctx, "a4", "pw")
	auth.Authenticate(ctx, "a0", "pw")
	if got := auth.Comparisons() - before; got != 1 {
		t.Errorf("%d comparisons, want 1 (a0 evicted, a4 cached)", got)
	}

	off := NewBcryptAuthenticator(store.lookup, BcryptOptions{DummyCost: bcrypt.MinCost, CacheSize: -1})
	off.Authenticate(ctx, "a1", "pw")
	off.Authenticate(ctx, "a1", "pw")
	if off.Comparisons() != 2 || off.cacheLen() != 0 {
		t.Errorf("disabled cache: %d comparisons, %d entries", off.Comparisons(), off.cacheLen())
	}
}

func TestBasicAuthConcurrent(t *testing.T) {
	store := newAdminStore(t)
	// No bound on checks at once: this is about the cache under
	// concurrency (TestPasswordChecksBounded is about the bound).
	auth := NewBcryptAuthenticator(store.lookup, BcryptOptions{DummyCost: bcrypt.MinCost, CacheSize: 2, MaxChecks: -1})
	srv := authServer(t, auth)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 10 {
				login, pw, status := "root", "root-secret", http.StatusOK
				switch (i + j) % 3 {
				case 1:
					login, pw = "sync7", "sync-secret"
				case 2:
					pw, status = "wrong", http.StatusUnauthorized
				}
				resp, _ := srv.get(t, "/api/whoami", "Authorization", basic(login, pw))
				if resp.StatusCode != status {
					t.Errorf("%s/%s: %d, want %d", login, pw, resp.StatusCode, status)
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkBasicAuthWarm measures the middleware with a warm verification
// cache, at the default bcrypt cost (which the cache makes irrelevant).
func BenchmarkBasicAuthWarm(b *testing.B) {
	store := &adminStore{admins: map[string]storedAdmin{}}
	hash, _ := bcrypt.GenerateFromPassword([]byte("sync-secret"), bcrypt.DefaultCost)
	seven := int64(7)
	store.admins["sync7"] = storedAdmin{hash: string(hash), provider: &seven}
	auth := NewBcryptAuthenticator(store.lookup, BcryptOptions{})

	engine := New(Options{Logger: discardLogger()})
	engine.GET("/api/whoami", BasicAuth(auth), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	req := httptest.NewRequest(http.MethodGet, "/api/whoami", nil)
	req.Header.Set("Authorization", basic("sync7", "sync-secret"))
	engine.ServeHTTP(httptest.NewRecorder(), req) // warm the cache
	before := auth.Comparisons()

	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w := httptest.NewRecorder()
			engine.ServeHTTP(w, req)
			if w.Code != http.StatusNoContent {
				b.Fatalf("status %d", w.Code)
			}
		}
	})
	if auth.Comparisons() != before {
		b.Fatalf("%d bcrypt comparisons with a warm cache", auth.Comparisons()-before)
	}
}

// BenchmarkBcryptCold is the cost the cache saves: one check at the default cost.
func BenchmarkBcryptCold(b *testing.B) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("sync-secret"), bcrypt.DefaultCost)
	auth := NewBcryptAuthenticator(func(string) (string, *int64, bool) { return string(hash), nil, true }, BcryptOptions{CacheSize: -1})
	for b.Loop() {
		if _, err := auth.Authenticate(context.Background(), "sync7", "sync-secret"); err != nil {
			b.Fatal(err)
		}
	}
}

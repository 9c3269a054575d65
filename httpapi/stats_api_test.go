package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/httpapi"
	"tvsm/internal/app/query"
	"tvsm/projections"
	"tvsm/projections/readmodel"
	"tvsm/projections/stats"
	"tvsm/projections/stats/embedded"
	"tvsm/projections/stats/statstest"
)

// Tests of the Statistics API: the real handlers on a real engine behind
// Basic auth, a real stats service over the embedded fact store, fed by the
// projector, and the read model as catalog, all fed the same events.
// Helpers are prefixed st.

type stEnv struct {
	t     testing.TB
	url   string
	reg   *domain.Registry
	facts *embedded.Store
	rec   *statstest.Recorder
	model *readmodel.Model
	proj  *stats.Projector
}

const stPassword = "secret"

func stStart(t testing.TB) *stEnv { return stStartClosed(t, nil) }

// stStartClosed starts the API with closed telling the closed days (nil:
// the projector).
func stStartClosed(t testing.TB, closed query.ClosedDays) *stEnv {
	t.Helper()
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	e := &stEnv{t: t, reg: reg, rec: statstest.NewRecorder(reg), model: readmodel.New(reg)}
	facts, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { facts.Close() })
	e.facts = facts
	e.proj, err = stats.NewProjector(facts, stats.ProjectorOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if closed == nil {
		closed = e.proj
	}
	svc := query.NewStatistics(facts, query.ReadModelCatalog{Model: e.model}, closed)

	hash, err := bcrypt.GenerateFromPassword([]byte(stPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	admins := map[string]*int64{"super": nil, "p1admin": &one}
	auth := httpapi.NewBcryptAuthenticator(func(login string) (string, *int64, bool) {
		p, ok := admins[login]
		return string(hash), p, ok
	}, httpapi.BcryptOptions{DummyCost: bcrypt.MinCost})
	engine := httpapi.New(httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := httpapi.MountStats(engine.Group("/api/stats"), svc, httpapi.BasicAuth(auth)); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// at records events stamped at when and applies them to the read model
// and the projector.
func (e *stEnv) at(when string, events ...domain.Event) {
	e.t.Helper()
	at, err := time.Parse(time.DateTime, when)
	if err != nil {
		e.t.Fatal(err)
	}
	var batch []eventstore.RecordedEvent
	for _, ev := range events {
		batch = append(batch, e.rec.Record(at, ev))
	}
	ctx := context.Background()
	if err := projections.ApplyRecorded(ctx, e.reg, e.model, batch, projections.Live); err != nil {
		e.t.Fatal(err)
	}
	if err := projections.ApplyRecorded(ctx, e.reg, e.proj, batch, projections.Live); err != nil {
		e.t.Fatal(err)
	}
}

// get sends GET /api/stats+path as login (none: no credentials).
func (e *stEnv) get(login, path string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+"/api/stats"+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if login != "" {
		req.SetBasicAuth(login, stPassword)
	}
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, body
}

// discard sends GET /api/stats+path as the superadmin and reads the answer
// without keeping it (as a client streaming it to disk would), returning
// its length.
func (e *stEnv) discard(path string) int64 {
	req, err := http.NewRequest(http.MethodGet, e.url+"/api/stats"+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth("super", stPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
	}
	return n
}

// wantJSON checks an answer's status and its exact body (want compacted).
func (e *stEnv) wantJSON(login, path string, status int, want string) {
	e.t.Helper()
	resp, body := e.get(login, path)
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(want)); err != nil {
		e.t.Fatalf("bad expected JSON: %v", err)
	}
	if resp.StatusCode != status || !bytes.Equal(body, compact.Bytes()) {
		e.t.Errorf("GET %s as %q: %d\n%s\nwant %d\n%s", path, login, resp.StatusCode, body, status, compact.Bytes())
	}
}

// stWorld: three providers (the third without data), two categories,
// three channels, three tariffs, three accounts and some viewing, from 1
// to 3 March 2026; 1 and 2 March are closed.
func stWorld(t *testing.T) *stEnv {
	e := stStart(t)
	contract := "C-100"
	e.at("2026-03-01 09:00:00",
		domain.ProviderCreated{ProviderID: 1, Name: "One", Enabled: true},
		domain.ProviderCreated{ProviderID: 2, Name: "Two", Enabled: true},
		domain.ProviderCreated{ProviderID: 3, Name: "Three", Enabled: true},
		domain.CategoryCreated{CategoryID: 1, Name: "News"},
		domain.CategoryCreated{CategoryID: 2, Name: "Sport"},
		domain.ChannelCreated{ChannelID: 7, Name: "Seven", Number: 7, Categories: []int64{1}},
		domain.ChannelCreated{ChannelID: 8, Name: "Eight", Number: 8, Categories: []int64{1, 2}},
		domain.ChannelCreated{ChannelID: 9, Name: "Nine", Number: 9, Categories: []int64{}},
		domain.TariffCreated{TariffID: 10, Provider: 1, Name: "Basic", Enabled: true, Channels: []int64{7, 8}},
		domain.TariffCreated{TariffID: 11, Provider: 1, Name: "Extra", Enabled: true, Channels: []int64{9}},
		domain.TariffCreated{TariffID: 20, Provider: 2, Name: "Two basic", Enabled: true, Channels: []int64{9}})
	e.at("2026-03-01 10:00:00",
		stAccount(100, 1, true, &contract), stSub(100, 1, 10), domain.DeviceBound{AccountID: 100, DeviceID: 500, UniqueID: "u500", Class: domain.DeviceSTB},
		stAccount(101, 1, false, nil), stSub(101, 2, 11),
		stAccount(200, 2, true, nil), stSub(200, 3, 20), domain.DeviceBound{AccountID: 200, DeviceID: 600, UniqueID: "u600", Class: domain.DeviceWeb})
	e.at("2026-03-01 20:00:00", stViewing(100, 500, 1, domain.DeviceSTB,
		domain.ViewingSession{Channel: 7, Mode: domain.ViewingLive, Start: time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC), Seconds: 3600},
		domain.ViewingSession{Channel: 8, Mode: domain.ViewingDVR, Start: time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC), Seconds: 90}))
	e.at("2026-03-02 12:00:00", stViewing(200, 600, 2, domain.DeviceWeb,
		domain.ViewingSession{Channel: 9, Mode: domain.ViewingLive, Start: time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC), Seconds: 125}))
	e.at("2026-03-03 10:00:00", domain.AccountUpdated{AccountID: 101, Enabled: domain.Some(true)})
	// 3 March is open: its viewing is not shown yet.
	e.at("2026-03-03 11:00:00", stViewing(100, 500, 1, domain.DeviceSTB,
		domain.ViewingSession{Channel: 7, Mode: domain.ViewingLive, Start: time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC), Seconds: 600}))
	return e
}

func stAccount(id, provider int64, enabled bool, contract *string) domain.Event {
	return domain.AccountCreated{AccountID: id, Provider: provider, Login: "user" + strconv.FormatInt(id, 10), PinMD5: strings.Repeat("0", 32),
		Fullname: "User", Enabled: enabled, ContractInfo: contract}
}

func stSub(account, id, tariff int64) domain.Event {
	return domain.SubscriptionAdded{AccountID: account, SubscriptionID: id, Tariff: tariff, Start: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}
}

func stViewing(account, device, provider int64, class domain.DeviceClass, sessions ...domain.ViewingSession) domain.Event {
	return domain.ViewingReported{DeviceID: device, Account: account, Provider: provider, Class: class, Sessions: sessions}
}

func TestStatsSubscription(t *testing.T) {
	e := stWorld(t)
	// to is past the last closed day (2 March): only closed days appear.
	e.wantJSON("super", "/subscription?from=2026-03-01&to=2026-03-05", 200, `{"from":"2026-03-01","to":"2026-03-05","provider_stat":[
		{"provider_id":1,"subscriptions_stat":[
			{"date":"2026-03-01","subscriptions":[
				{"tariff_id":10,"name":"Basic","enabled_count":1,"enabled_device_count":1,"active_count":1,"disabled_count":0,"enabled_account_with_devices":1},
				{"tariff_id":11,"name":"Extra","enabled_count":0,"enabled_device_count":0,"active_count":0,"disabled_count":1,"enabled_account_with_devices":0}]},
			{"date":"2026-03-02","subscriptions":[
				{"tariff_id":10,"name":"Basic","enabled_count":1,"enabled_device_count":1,"active_count":0,"disabled_count":0,"enabled_account_with_devices":1},
				{"tariff_id":11,"name":"Extra","enabled_count":0,"enabled_device_count":0,"active_count":0,"disabled_count":1,"enabled_account_with_devices":0}]}]},
		{"provider_id":2,"subscriptions_stat":[
			{"date":"2026-03-01","subscriptions":[
				{"tariff_id":20,"name":"Two basic","enabled_count":1,"enabled_device_count":1,"active_count":0,"disabled_count":0,"enabled_account_with_devices":1}]},
			{"date":"2026-03-02","subscriptions":[
				{"tariff_id":20,"name":"Two basic","enabled_count":1,"enabled_device_count":1,"active_count":1,"disabled_count":0,"enabled_account_with_devices":1}]}]},
		{"provider_id":3,"subscriptions_stat":[]}]}`)
	e.wantJSON("super", "/subscription?from=2026-03-02&to=2026-03-02&provider_id=2", 200, `{"from":"2026-03-02","to":"2026-03-02","provider_stat":[
		{"provider_id":2,"subscriptions_stat":[
			{"date":"2026-03-02","subscriptions":[
				{"tariff_id":20,"name":"Two basic","enabled_count":1,"enabled_device_count":1,"active_count":1,"disabled_count":0,"enabled_account_with_devices":1}]}]}]}`)
	// Nothing closed in the range: every provider, no days.
	e.wantJSON("super", "/subscription?from=2026-03-03&to=2026-03-09", 200, `{"from":"2026-03-03","to":"2026-03-09","provider_stat":[
		{"provider_id":1,"subscriptions_stat":[]},{"provider_id":2,"subscriptions_stat":[]},{"provider_id":3,"subscriptions_stat":[]}]}`)
}

// Every statistics answer names the last closed day, errors included,
// so a client asking for today (not closed yet) can tell why it is not
// there.
func TestStatsClosedThroughHeader(t *testing.T) {
	e := stWorld(t)
	for _, path := range []string{"/subscription?from=2026-03-01&to=2026-03-05", "/device?from=2026-03-03&to=2026-03-03",
		"/account?from=2026-03-01&to=2026-03-01", "/subscription?from=2026-03-05&to=2026-03-01"} {
		resp, body := e.get("super", path)
		if got := resp.Header.Get(httpapi.HeaderClosedThrough); got != "2026-03-02" {
			t.Errorf("%s: %d, %s %q, want 2026-03-02 (%s)", path, resp.StatusCode, httpapi.HeaderClosedThrough, got, body)
		}
	}
	none := stStart(t) // nothing projected: no day closed
	if resp, _ := none.get("super", "/device?from=2026-03-03&to=2026-03-03"); resp.Header.Get(httpapi.HeaderClosedThrough) != "none" {
		t.Errorf("before any day closed: %q, want none", resp.Header.Get(httpapi.HeaderClosedThrough))
	}
}

func TestStatsDevice(t *testing.T) {
	e := stWorld(t)
	// 90 s of DVR: 2 minutes (1.5 rounded half up) and 0.03 hours; 125 s
	// live: 2 minutes and 0.03 hours. 3 March is not closed.
	e.wantJSON("super", "/device?from=2026-03-01&to=2026-03-31", 200, `{"from":"2026-03-01","to":"2026-03-31","provider_stat":[
		{"provider_id":1,"device_stat":[{"class":"stb","live_hours":1,"dvr_hours":0.03,"live_minutes":60,"dvr_minutes":2,"unique_devices":1}]},
		{"provider_id":2,"device_stat":[{"class":"web","live_hours":0.03,"dvr_hours":0,"live_minutes":2,"dvr_minutes":0,"unique_devices":1}]},
		{"provider_id":3,"device_stat":[]}]}`)
	e.wantJSON("super", "/device?from=2026-03-02&to=2026-03-02&provider_id=1", 200, `{"from":"2026-03-02","to":"2026-03-02","provider_stat":[
		{"provider_id":1,"device_stat":[{"class":"stb","live_hours":0,"dvr_hours":0,"live_minutes":0,"dvr_minutes":0,"unique_devices":0}]}]}`)
}

func TestStatsAccount(t *testing.T) {
	e := stWorld(t)
	e.wantJSON("super", "/account?from=2026-03-01&to=2026-03-02&provider_id=1", 200, `{"from":"2026-03-01","to":"2026-03-02","provider_stat":[
		{"providerId":1,"account_stat":[
			{"account_id":100,"account_contract":"C-100","channels":[
				{"channel_id":7,"live_hours":1,"dvr_hours":0,"live_minutes":60,"dvr_minutes":0},
				{"channel_id":8,"live_hours":0,"dvr_hours":0.03,"live_minutes":0,"dvr_minutes":2}]}],
		"channels":[{"id":7,"name":"Seven","favorites":[1]},{"id":8,"name":"Eight","favorites":[1,2]},{"id":9,"name":"Nine","favorites":[]}],
		"favorites":[{"id":1,"name":"News"},{"id":2,"name":"Sport"}]}]}`)
	e.wantJSON("super", "/account?from=2026-03-01&to=2026-03-09", 200, `{"from":"2026-03-01","to":"2026-03-09","provider_stat":[
		{"providerId":1,"account_stat":[
			{"account_id":100,"account_contract":"C-100","channels":[
				{"channel_id":7,"live_hours":1,"dvr_hours":0,"live_minutes":60,"dvr_minutes":0},
				{"channel_id":8,"live_hours":0,"dvr_hours":0.03,"live_minutes":0,"dvr_minutes":2}]}],
		"channels":[{"id":7,"name":"Seven","favorites":[1]},{"id":8,"name":"Eight","favorites":[1,2]},{"id":9,"name":"Nine","favorites":[]}],
		"favorites":[{"id":1,"name":"News"},{"id":2,"name":"Sport"}]},
		{"providerId":2,"account_stat":[
			{"account_id":200,"account_contract":"","channels":[
				{"channel_id":9,"live_hours":0.03,"dvr_hours":0,"live_minutes":2,"dvr_minutes":0}]}],
		"channels":[{"id":9,"name":"Nine","favorites":[]}],"favorites":[]},
		{"providerId":3,"account_stat":[],"channels":[],"favorites":[]}]}`)
}

// TestStatsAccountStreamsManyAccounts checks a long answer (several
// flushes) is complete, valid and ordered.
func TestStatsAccountStreamsManyAccounts(t *testing.T) {
	e := stStart(t)
	const n = 2000
	events := []domain.Event{domain.ProviderCreated{ProviderID: 1, Name: "One", Enabled: true}}
	for id := int64(1); id <= n; id++ {
		events = append(events, stAccount(id, 1, true, nil), stViewing(id, id, 1, domain.DeviceTV,
			domain.ViewingSession{Channel: id%5 + 1, Mode: domain.ViewingLive, Start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Seconds: 60}))
	}
	e.at("2026-03-01 13:00:00", events...)
	e.at("2026-03-02 13:00:00", domain.ProviderCreated{ProviderID: 2, Name: "Two", Enabled: true})
	resp, body := e.get("super", "/account?from=2026-03-01&to=2026-03-01&provider_id=1")
	var got struct {
		ProviderStat []struct {
			ProviderID  int64 `json:"providerId"`
			AccountStat []struct {
				AccountID int64 `json:"account_id"`
				Channels  []struct {
					LiveMinutes int64 `json:"live_minutes"`
				} `json:"channels"`
			} `json:"account_stat"`
		} `json:"provider_stat"`
	}
	if resp.StatusCode != 200 || len(body) < 64<<10 {
		t.Fatalf("status %d, %d bytes; want 200 and a long body", resp.StatusCode, len(body))
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	if len(got.ProviderStat) != 1 || len(got.ProviderStat[0].AccountStat) != n {
		t.Fatalf("got %d providers, want 1 with %d accounts", len(got.ProviderStat), n)
	}
	for i, a := range got.ProviderStat[0].AccountStat {
		if a.AccountID != int64(i+1) || len(a.Channels) != 1 || a.Channels[0].LiveMinutes != 1 {
			t.Fatalf("account %d: %+v; want account %d with one channel of one minute", i, a, i+1)
		}
	}
}

func TestStatsBadRequests(t *testing.T) {
	e := stWorld(t)
	for _, c := range []struct {
		query, field, problem string
	}{
		{"", "from", "required"},
		{"?from=2026-03-01", "to", "required"},
		{"?from=2026-02-30&to=2026-03-01", "from", "must be a date YYYY-MM-DD"},
		{"?from=2026-03-01&to=tomorrow", "to", "must be a date YYYY-MM-DD"},
		{"?from=2026-3-1&to=2026-03-01", "from", "must be a date YYYY-MM-DD"},
		{"?from=2026-03-02&to=2026-03-01", "to", "must not be before from"},
		{"?from=2023-01-01&to=2026-01-03", "to", "the range may span at most 1097 days"},
		{"?from=2026-03-01&to=2026-03-02&provider_id=abc", "provider_id", "must be a positive integer"},
		{"?from=2026-03-01&to=2026-03-02&provider_id=0", "provider_id", "must be a positive integer"},
		{"?from=2026-03-01&from=2026-03-02&to=2026-03-02", "from", "given more than once with different values"},
	} {
		for _, endpoint := range []string{"/subscription", "/device", "/account"} {
			resp, body := e.get("super", endpoint+c.query)
			var got struct {
				Code   string            `json:"error"`
				Fields map[string]string `json:"fields"`
			}
			_ = json.Unmarshal(body, &got)
			if resp.StatusCode != 400 || got.Code != "validation_failed" || got.Fields[c.field] != c.problem {
				t.Errorf("GET %s%s: %d %s; want 400 naming %s: %s", endpoint, c.query, resp.StatusCode, body, c.field, c.problem)
			}
		}
	}
	// The longest range is accepted.
	if resp, body := e.get("super", "/subscription?from=2023-01-01&to=2026-01-01"); resp.StatusCode != 200 {
		t.Errorf("a range of 1097 days: %d %s", resp.StatusCode, body)
	}
}

func TestStatsProvidersAndScope(t *testing.T) {
	e := stWorld(t)
	e.wantJSON("super", "/device?from=2026-03-01&to=2026-03-02&provider_id=99", 404,
		`{"statusCode":404,"cause":"stats: provider 99: not found","error":"not_found"}`)
	// A provider-scoped admin sees its own provider only.
	e.wantJSON("p1admin", "/device?from=2026-03-02&to=2026-03-02", 200, `{"from":"2026-03-02","to":"2026-03-02","provider_stat":[
		{"provider_id":1,"device_stat":[{"class":"stb","live_hours":0,"dvr_hours":0,"live_minutes":0,"dvr_minutes":0,"unique_devices":0}]}]}`)
	for _, endpoint := range []string{"/subscription", "/device", "/account"} {
		if resp, body := e.get("p1admin", endpoint+"?from=2026-03-01&to=2026-03-02&provider_id=2"); resp.StatusCode != 403 {
			t.Errorf("%s of another provider as a scoped admin: %d %s, want 403", endpoint, resp.StatusCode, body)
		}
		if resp, body := e.get("p1admin", endpoint+"?from=2026-03-01&to=2026-03-02&provider_id=1"); resp.StatusCode != 200 {
			t.Errorf("%s of its provider as a scoped admin: %d %s, want 200", endpoint, resp.StatusCode, body)
		}
		if resp, _ := e.get("", endpoint+"?from=2026-03-01&to=2026-03-02"); resp.StatusCode != 401 {
			t.Errorf("%s without credentials: %d, want 401", endpoint, resp.StatusCode)
		}
	}
}

func TestStatsStoreUnavailable(t *testing.T) {
	e := stWorld(t)
	e.facts.Close()
	for _, endpoint := range []string{"/subscription", "/device", "/account"} {
		resp, body := e.get("super", endpoint+"?from=2026-03-01&to=2026-03-02")
		if resp.StatusCode != 503 || !strings.Contains(string(body), `"error":"unavailable"`) {
			t.Errorf("%s with the store closed: %d %s, want 503", endpoint, resp.StatusCode, body)
		}
	}
}

func TestStatsSwaggerUI(t *testing.T) {
	e := stStart(t)
	resp, body := e.get("", "/swagger-ui/index.html")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !bytes.Contains(body, []byte("swagger-ui-bundle.js")) {
		t.Fatalf("index.html: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, zipped := e.get("", "/swagger-ui/swagger-ui-bundle.js", "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || !bytes.HasPrefix(zipped, []byte{0x1f, 0x8b}) {
		t.Fatalf("bundle, gzip accepted: %d %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	resp, plain := e.get("", "/swagger-ui/swagger-ui-bundle.js", "Accept-Encoding", "identity")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || len(plain) < 1<<20 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("bundle, gzip not accepted: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Encoding"), len(plain))
	}
	for _, path := range []string{"/swagger-ui", "/swagger-ui/"} { // to index.html
		if resp, body := e.get("", path); resp.StatusCode != 200 || !bytes.Contains(body, []byte("swagger-ui-bundle.js")) {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	for _, name := range []string{"swagger-ui.css", "swagger-initializer.js", "favicon-32x32.png"} {
		if resp, _ := e.get("", "/swagger-ui/"+name); resp.StatusCode != 200 {
			t.Errorf("%s: %d", name, resp.StatusCode)
		}
	}
	for _, name := range []string{"nothing.js", "swagger-ui.css.gz", "../openapi.yaml"} {
		if resp, _ := e.get("", "/swagger-ui/"+name); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", name, resp.StatusCode)
		}
	}
	// The document the page loads: every endpoint and the Basic scheme.
	resp, body = e.get("", "/openapi.json")
	var doc struct {
		OpenAPI    string                     `json:"openapi"`
		Paths      map[string]json.RawMessage `json:"paths"`
		Components struct {
			SecuritySchemes map[string]struct {
				Scheme string `json:"scheme"`
			} `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); resp.StatusCode != 200 || err != nil {
		t.Fatalf("openapi.json: %d %v", resp.StatusCode, err)
	}
	for _, p := range []string{"/api/stats/subscription", "/api/stats/device", "/api/stats/account"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("openapi.json lacks %s", p)
		}
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") || doc.Components.SecuritySchemes["basicAuth"].Scheme != "basic" {
		t.Errorf("openapi %q, security schemes %+v", doc.OpenAPI, doc.Components.SecuritySchemes)
	}
}

func FuzzParseStatsQuery(f *testing.F) {
	for _, s := range []string{
		"from=2026-03-01&to=2026-03-02", "from=2026-03-01&to=2026-03-02&provider_id=7", "", "from=&to=",
		"from=2026-02-30&to=x", "from=0001-01-01&to=9999-12-31", "provider_id=-1&from=2026-01-01&to=2026-01-01",
		"from=2026-03-01&from=2026-03-01&to=2026-03-01", "from=%zz", "provider_id=99999999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, _ := url.ParseQuery(raw)
		q, err := httpapi.ParseStatsQuery(values)
		if err != nil {
			if e := httpapi.AsError(err); e.Status != http.StatusBadRequest || len(e.Fields) == 0 {
				t.Fatalf("%q: %v answered %d without fields, want 400 naming a field", raw, err, e.Status)
			}
			return
		}
		if q.From > q.To || int(q.To-q.From) >= query.MaxRangeDays || q.Provider < 0 {
			t.Fatalf("%q: accepted %+v", raw, q)
		}
	})
}

// BenchmarkStatsSubscription3Years times /api/stats/subscription over three
// years of one provider with 100 tariffs beside the bare fact store query
// that reads the same rows (the ratio is what the API adds).
func BenchmarkStatsSubscription3Years(b *testing.B) {
	to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	e := stStartClosed(b, query.Yesterday{Clock: func() time.Time { return to.AddDate(0, 0, 1) }})
	events := []domain.Event{domain.ProviderCreated{ProviderID: 1, Name: "One", Enabled: true}}
	for t := int64(1); t <= 100; t++ {
		events = append(events, domain.TariffCreated{TariffID: t, Provider: 1, Name: "Tariff " + strconv.FormatInt(t, 10), Enabled: true, Channels: []int64{}})
	}
	e.at("2023-02-01 00:00:00", events...)
	r := stats.Range{From: stats.DayOf(to.AddDate(-3, 0, 0), time.UTC), To: stats.DayOf(to, time.UTC), Provider: 1}
	var rows []stats.SubscriptionDay
	for d := r.From; d <= r.To; d++ {
		for t := int64(1); t <= 100; t++ {
			rows = append(rows, stats.SubscriptionDay{Day: d, Provider: 1, Tariff: t, Enabled: 1000 + t, EnabledDevices: 1500 + t, Active: 700, Disabled: 20, EnabledWithDevices: 900, Version: 1})
		}
	}
	ctx := context.Background()
	if err := e.facts.WriteSubscriptionDays(ctx, rows); err != nil {
		b.Fatal(err)
	}
	path := "/subscription?from=" + r.From.String() + "&to=" + r.To.String() + "&provider_id=1"
	b.Run("bare", func(b *testing.B) {
		for range b.N {
			if got, err := stats.AllSubscriptionDays(ctx, e.facts, r); err != nil || len(got) != len(rows) {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("api", func(b *testing.B) {
		for range b.N {
			if n := e.discard(path); n < int64(len(rows))*100 {
				b.Fatal(n)
			}
		}
	})
}

// BenchmarkStatsAccount30Days times /api/stats/account over 30 days of
// 5,000 accounts watching 200 channels beside the bare fact store query.
func BenchmarkStatsAccount30Days(b *testing.B) {
	to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	e := stStartClosed(b, query.Yesterday{Clock: func() time.Time { return to.AddDate(0, 0, 1) }})
	e.at("2026-01-01 00:00:00", domain.ProviderCreated{ProviderID: 1, Name: "One", Enabled: true})
	r := stats.Range{From: stats.DayOf(to, time.UTC) - 29, To: stats.DayOf(to, time.UTC), Provider: 1}
	ctx := context.Background()
	var facts []stats.ViewingFact
	pos := uint64(0)
	for a := int64(1); a <= 5000; a++ {
		for d := r.From; d <= r.To; d++ {
			pos++
			for i := range int64(2) {
				facts = append(facts, stats.ViewingFact{Day: d, Provider: 1, Account: a, Device: a, Class: "stb",
					Channel: 1 + (a*7+int64(d)+i*13)%200, Live: i == 0, Seconds: 600 + i, Position: pos, Index: int32(i)})
			}
		}
		if len(facts) >= 50_000 {
			if err := e.facts.WriteViewing(ctx, facts); err != nil {
				b.Fatal(err)
			}
			facts = facts[:0]
		}
	}
	if err := e.facts.WriteViewing(ctx, facts); err != nil {
		b.Fatal(err)
	}
	path := "/account?from=" + r.From.String() + "&to=" + r.To.String() + "&provider_id=1"
	b.Run("bare", func(b *testing.B) {
		for range b.N {
			n := 0
			if err := e.facts.AccountChannelTotals(ctx, r, func(stats.AccountChannelTotal) error { n++; return nil }); err != nil || n == 0 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("api", func(b *testing.B) {
		for range b.N {
			e.discard(path)
		}
	})
}

// TestStatsAccountDictionaryOfUnknownIDs: a channel watched but not (or no
// longer) in the catalog, and a category unknown to it, are listed with
// empty names so that every id of the answer resolves.
func TestStatsAccountDictionaryOfUnknownIDs(t *testing.T) {
	e := stStart(t)
	e.at("2026-03-01 09:00:00", domain.ProviderCreated{ProviderID: 1, Name: "One", Enabled: true},
		domain.ChannelCreated{ChannelID: 7, Name: "Seven", Categories: []int64{5}},
		stAccount(100, 1, true, nil))
	e.at("2026-03-01 12:00:00", stViewing(100, 500, 1, domain.DevicePhone,
		domain.ViewingSession{Channel: 42, Mode: domain.ViewingDVR, Start: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), Seconds: 29},
		domain.ViewingSession{Channel: 7, Mode: domain.ViewingLive, Start: time.Date(2026, 3, 1, 11, 30, 0, 0, time.UTC), Seconds: 30}))
	e.at("2026-03-02 00:00:00", domain.AccountUpdated{AccountID: 100, Enabled: domain.Some(false)})
	// 29 s: 0 minutes, 0.01 hours; 30 s: 1 minute (half up), 0.01 hours.
	e.wantJSON("super", "/account?from=2026-03-01&to=2026-03-01", 200, `{"from":"2026-03-01","to":"2026-03-01","provider_stat":[
		{"providerId":1,"account_stat":[{"account_id":100,"account_contract":"","channels":[
			{"channel_id":7,"live_hours":0.01,"dvr_hours":0,"live_minutes":1,"dvr_minutes":0},
			{"channel_id":42,"live_hours":0,"dvr_hours":0.01,"live_minutes":0,"dvr_minutes":0}]}],
		"channels":[{"id":7,"name":"Seven","favorites":[5]},{"id":42,"name":"","favorites":[]}],
		"favorites":[{"id":5,"name":""}]}]}`)
}

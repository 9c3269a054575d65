package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/wiring/node"
)

// The security walk: every route of the node's engine, enumerated from the
// engine itself, so that a route added later is walked without anyone
// remembering to: without credentials, with wrong ones and with the other
// kind of credentials, each answers 401 or 403; and a provider-scoped
// admin of another provider, sending the ids of a provider's resources in
// the path, the body or the query, gets 403 or 404 (a list: only its own
// items) and changes nothing. A route whose parameters or body the walk
// cannot fill fails it, until a value is added here.

// publicRoutes answer without credentials, by design: the probes (not
// /metrics, which the API's listener serves to superadmins), the device
// login, the API documents and their viewers (documentRoutes) and the
// admin console's files. A route missing here must refuse requests without
// credentials.
var publicRoutes = withRoutes(documentRoutes(), map[string]string{
	"GET /healthz":           "liveness probe",
	"GET /readyz":            "readiness probe",
	"POST /api/device/login": "the device login itself (throttled; wrong credentials are checked below)",
	"GET /admin":             "the admin console's page: it holds no data and calls the APIs with the admin's credentials",
	"GET /admin/*file":       "the admin console's scripts and styles",
})

// ownSessionRoutes act on the caller's own admin console session, which
// names no provider's resources: as another provider's admin they must
// answer without a server error, leak nothing of the victim's and append
// nothing (a sign-in writes nothing; a sign-out with Basic credentials,
// which have no session, is refused).
var ownSessionRoutes = map[string]string{
	"POST /api/admin/session":   "signs the caller itself in",
	"DELETE /api/admin/session": "signs the session of the caller's own token out",
}

// deviceRoutes are authenticated with device tokens; every other private
// route with admin Basic credentials.
func deviceRoute(path string) bool { return strings.HasPrefix(path, "/api/device/") }

// sharedCatalogReads are the reads a scoped admin may make of ids that are
// not any provider's: channels, categories, regions and device types are
// one catalog for all.
var sharedCatalogReads = map[string]string{
	"GET /api/admin/channels":              "channels belong to no provider",
	"GET /api/admin/channels/:id":          "channels belong to no provider",
	"GET /api/admin/categories":            "categories belong to no provider",
	"GET /api/admin/categories/:id":        "categories belong to no provider",
	"GET /api/admin/regions":               "regions belong to no provider",
	"GET /api/admin/regions/:id":           "regions belong to no provider",
	"GET /api/provider/channels":           "channels belong to no provider",
	"GET /api/provider/channels/:id":       "channels belong to no provider",
	"GET /api/provider/favorite_group":     "categories belong to no provider",
	"GET /api/provider/favorite_group/:id": "categories belong to no provider",
	"GET /api/provider/regions":            "regions belong to no provider",
	"GET /api/provider/regions/:id":        "regions belong to no provider",
	"GET /api/provider/device_types":       "device types belong to no provider",
	"GET /api/provider/device_types/:id":   "device types belong to no provider",
}

// victim is a provider with one of each resource, whose ids the walk
// sends as another provider's admin.
type victim struct {
	provider, tariff, channel, category, account, subscription, device, send int64
	tag, region, deviceType, deviceSub, network                              int64
	admin                                                                    string
	deviceToken                                                              string
}

func newVictim(t *testing.T, env *nodetest.Env) victim {
	t.Helper()
	var v victim
	create := func(path string, body map[string]any) int64 {
		t.Helper()
		status, resp := env.Super(t, http.MethodPost, path, body)
		if status != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, status, resp)
		}
		return decodeObj(t, resp).id(t)
	}
	v.provider = create("/api/admin/providers", map[string]any{"name": "Victim"})
	v.channel = create("/api/admin/channels", map[string]any{"name": "Victim TV"})
	v.category = create("/api/admin/categories", map[string]any{"name": "Victim news"})
	v.tariff = create("/api/admin/tariffs", map[string]any{"provider": v.provider, "name": "Victim basic", "channels": []int64{v.channel}})
	v.account = create("/api/provider/accounts", map[string]any{
		"provider": v.provider, "login": "victim", "pin_md5": md5hex("victim-pin"), "fullname": "Victim", "enabled": true,
	})
	v.subscription = create("/api/provider/account_subscriptions", map[string]any{"account": v.account, "tarif": v.tariff, "start": "2020-01-01T00:00:00Z"})
	v.admin = "victim-ops"
	if status, resp := env.Super(t, http.MethodPost, "/api/admin/admins", map[string]any{"login": v.admin, "password": "victim-ops-pw", "provider": v.provider}); status != http.StatusOK {
		t.Fatalf("create admin: %d %s", status, resp)
	}
	status, resp := env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": v.provider, "login": "victim", "password_md5": md5hex("victim-pin"),
		"device": map[string]any{"unique_id": "victim-box", "class": "stb"},
	})
	if status != http.StatusOK {
		t.Fatalf("device login: %d %s", status, resp)
	}
	var l devLogin
	if err := json.Unmarshal(resp, &l); err != nil {
		t.Fatal(err)
	}
	v.device, v.deviceToken = l.DeviceID, l.Token
	status, resp = env.Super(t, http.MethodPost, "/api/provider/commands/send/accounts", map[string]any{
		"ids": []int64{v.account}, "commands": []map[string]any{{"command": "restart"}},
	})
	if status != http.StatusOK {
		t.Fatalf("send: %d %s", status, resp)
	}
	var sent struct {
		SendID int64 `json:"send_id"`
	}
	if err := json.Unmarshal(resp, &sent); err != nil || sent.SendID <= 0 {
		t.Fatalf("send answer %s", resp)
	}
	v.send = sent.SendID
	v.region = create("/api/admin/regions", map[string]any{"name": "Victim region"})
	v.tag = create("/api/provider/tarif_tags", map[string]any{"provider": v.provider, "name": "Victim tag"})
	v.deviceType = create("/api/provider/device_types", map[string]any{"device_type": "victim-box-type"})
	v.deviceSub = create("/api/provider/device_subscriptions", map[string]any{"device": v.device, "tarif": v.tariff, "start": "2020-01-01T00:00:00Z"})
	v.network = create("/api/provider/account_network", map[string]any{"network": "198.51.100.0/24", "account": v.account, "description": "victim office"})
	return v
}

// pathFor fills the parameters of a route's path with the victim's ids:
// ":id" by the collection before it, ":login" with its admin. ok is false
// for a parameter the walk does not know: give it one here.
func (v victim) pathFor(route string) (path string, ok bool) {
	segs := strings.Split(route, "/")
	for i, s := range segs {
		switch {
		case s == ":id" && i > 0 && segs[i-1] == "rebuilds":
			segs[i] = "0123456789ab" // jobs have their own ids, of no provider
		case s == ":id" && i > 0 && segs[i-1] == "backups":
			segs[i] = "20260101T000000Z-0123456789ab" // staged backups too
		case s == ":id" && i > 0:
			id, known := map[string]int64{
				"providers": v.provider, "tariffs": v.tariff, "channels": v.channel, "categories": v.category,
				"accounts": v.account, "account_subscriptions": v.subscription, "devices": v.device, "commands": v.send,
				"tariff": v.tariff, "tarifs": v.tariff, "tarif_tags": v.tag, "regions": v.region, "device_types": v.deviceType,
				"device_subscriptions": v.deviceSub, "account_network": v.network, "favorite_group": v.category,
			}[segs[i-1]]
			if !known {
				return "", false
			}
			segs[i] = strconv.FormatInt(id, 10)
		case s == ":login":
			segs[i] = v.admin
		case s == ":recipients":
			segs[i] = "accounts"
		case s == ":profile":
			segs[i] = "heap"
		case s == "*file":
			segs[i] = "index.html"
		case strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*"):
			return "", false
		}
	}
	return strings.Join(segs, "/"), true
}

func routeKey(r gin.RouteInfo) string { return r.Method + " " + r.Path }

func TestSecurityWalkRefusesWithoutCredentials(t *testing.T) {
	env := nodetest.StartWith(t, nodetest.Options{Billing: node.BillingOptions{Enabled: true}})
	v := newVictim(t, env)
	routes := env.Node.Engine.Routes()
	if len(routes) < 60 {
		t.Fatalf("the engine lists %d routes; the walk would prove little", len(routes))
	}
	before := head(t, env)
	walked := 0
	for _, r := range routes {
		key := routeKey(r)
		path, ok := v.pathFor(r.Path)
		if !ok {
			t.Errorf("%s: the walk knows no value for a parameter of this route; add one to pathFor", key)
			continue
		}
		if _, public := publicRoutes[key]; public {
			continue
		}
		walked++
		basicWrong := http.Header{"Authorization": {basicHeader(env.SuperLogin, "wrong-password")}}
		basicUnknown := http.Header{"Authorization": {basicHeader("nobody", "nothing")}}
		bearerWrong := http.Header{"Authorization": {"Bearer not-a-token"}}
		device := http.Header{"Authorization": {"Bearer " + v.deviceToken}}
		admin := http.Header{"Authorization": {basicHeader(env.SuperLogin, env.SuperPassword)}}
		cases := map[string]http.Header{
			"no credentials":          nil,
			"wrong password":          basicWrong,
			"unknown login":           basicUnknown,
			"invalid bearer token":    bearerWrong,
			"malformed authorization": {"Authorization": {"Basic !!!"}},
			"token in the query, bad": nil,
		}
		if deviceRoute(r.Path) {
			cases["admin credentials"] = admin
		} else {
			cases["device token"] = device
		}
		for name, h := range cases {
			target := path
			if name == "token in the query, bad" {
				target += "?token=not-a-token"
			}
			status, body := env.DoHeader(t, r.Method, target, "", "", walkBody(r), withBodyType(r.Path, h))
			if status != http.StatusUnauthorized && status != http.StatusForbidden {
				t.Errorf("%s (%s) %s: %d %.200s; want 401 or 403", key, target, name, status, body)
			}
		}
	}
	// The device login with wrong credentials is refused too.
	status, body := env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": v.provider, "login": "victim", "password_md5": md5hex("wrong"),
		"device": map[string]any{"unique_id": "intruder-box", "class": "stb"},
	})
	if status != http.StatusUnauthorized {
		t.Errorf("device login with a wrong password: %d %s", status, body)
	}
	if after := head(t, env); after != before {
		t.Errorf("requests without valid credentials appended events: head %v → %v", before, after)
	}
	t.Logf("walked %d private routes of %d", walked, len(routes))
}

// withBodyType returns h with the Content-Type the route takes when it is
// not the JSON nodetest sends: NDJSON on bulk routes.
func withBodyType(route string, h http.Header) http.Header {
	if !strings.HasSuffix(route, "/bulk") {
		return h
	}
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	out.Set("Content-Type", "application/x-ndjson")
	return out
}

// walkBody is a harmless body for the walk's requests that carry one.
func walkBody(r gin.RouteInfo) any {
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		return map[string]any{"name": "walk"}
	}
	return nil
}

func basicHeader(login, password string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(login, password)
	return req.Header.Get("Authorization")
}

// scopedBodies are the bodies a scoped admin of another provider sends to
// each route that takes one: valid requests but for whose resources they
// name. Each route with a body must have one (the walk fails otherwise),
// and POST routes of a collection are also sent the update-by-body form,
// with the id in the body.
func (v victim) scopedBodies(method, route string) (bodies []any, ok bool) {
	collection := route
	if i := strings.Index(route, "/:"); i >= 0 {
		collection = route[:i]
	}
	withID := !strings.Contains(route, "/:")
	var create, update map[string]any
	var id any
	switch collection {
	case "/api/admin/providers":
		create, update, id = map[string]any{"name": "intruded"}, map[string]any{"name": "intruded"}, v.provider
	case "/api/admin/tariffs":
		create, update, id = map[string]any{"provider": v.provider, "name": "intruded"}, map[string]any{"name": "intruded"}, v.tariff
	case "/api/admin/channels":
		create, update, id = map[string]any{"name": "intruded"}, map[string]any{"name": "intruded"}, v.channel
	case "/api/admin/categories":
		create, update, id = map[string]any{"name": "intruded"}, map[string]any{"name": "intruded"}, v.category
	case "/api/admin/admins":
		create, update, id = map[string]any{"login": "intruder-2", "password": "intruded-pw", "provider": v.provider},
			map[string]any{"password": "intruded-pw"}, nil
	case "/api/provider/accounts":
		create = map[string]any{"provider": v.provider, "login": "intruded", "pin_md5": md5hex("x"), "fullname": "Intruded"}
		update, id = map[string]any{"fullname": "Intruded"}, v.account
	case "/api/provider/account_subscriptions":
		create = map[string]any{"account": v.account, "tarif": v.tariff, "start": "2021-01-01T00:00:00Z"}
		update, id = map[string]any{"stop": "2030-01-01T00:00:00Z"}, v.subscription
	case "/api/provider/tarifs":
		create, update, id = map[string]any{"provider": v.provider, "tarif_name": "intruded"}, map[string]any{"tarif_name": "intruded"}, v.tariff
	case "/api/provider/tarif_tags":
		create, update, id = map[string]any{"provider": v.provider, "name": "intruded"}, map[string]any{"name": "intruded"}, v.tag
	case "/api/admin/regions":
		create, update, id = map[string]any{"name": "intruded"}, map[string]any{"name": "intruded"}, v.region
	case "/api/provider/device_types":
		create, update, id = map[string]any{"device_type": "intruded"}, map[string]any{"device_type": "intruded"}, v.deviceType
	case "/api/provider/devices":
		create, update, id = map[string]any{"account": v.account, "unique_id": "intruded"}, map[string]any{"comment": "intruded"}, v.device
	case "/api/provider/device_subscriptions":
		create = map[string]any{"device": v.device, "tarif": v.tariff, "start": "2021-01-01T00:00:00Z"}
		update, id = map[string]any{"stop": "2030-01-01T00:00:00Z"}, v.deviceSub
	case "/api/provider/account_network":
		create = map[string]any{"network": "203.0.113.0/24", "account": v.account}
		update, id = map[string]any{"description": "intruded"}, v.network
	case "/api/provider/accounts/bulk":
		// One NDJSON record (a JSON object is one line): the victim's
		// login, updated through its provider.
		return []any{map[string]any{"provider": v.provider, "login": "victim", "fullname": "Intruded"}}, true
	case "/api/provider/commands/send":
		return []any{map[string]any{"ids": []int64{v.account}, "commands": []map[string]any{{"command": "restart"}}}}, true
	case "/api/admin/rebuilds":
		// Names no provider: superadmins only.
		return []any{map[string]any{"target": "readmodel"}}, true
	case "/api/admin/backups":
		// Names no provider: the node's whole store, superadmins only.
		return []any{map[string]any{}}, true
	case "/api/admin/import/ids":
		// Names no provider: the node's ids, superadmins only.
		return []any{map[string]any{"kind": "account", "through": 100000}}, true
	default:
		return nil, false
	}
	if method == http.MethodPut || !withID {
		return []any{update}, true
	}
	bodies = []any{create}
	if id != nil {
		byBody := map[string]any{"id": id}
		for k, val := range update {
			byBody[k] = val
		}
		bodies = append(bodies, byBody)
	}
	return bodies, true
}

// scopedQueries are the queries naming the victim's provider that a
// scoped admin of another provider sends to the routes listing things.
func (v victim) scopedQueries(route string) []string {
	p := strconv.FormatInt(v.provider, 10)
	switch {
	case strings.HasPrefix(route, "/api/stats/"):
		return []string{"?from=2020-01-01&to=2020-01-02&provider_id=" + p}
	case strings.Contains(route, "/:"):
		return nil
	}
	return []string{"?provider=" + p}
}

// leaks reports whether an answer shows any of the victim's data: every
// name the victim's resources have holds "ictim".
func leaks(body []byte) bool { return strings.Contains(string(body), "ictim") }

func TestSecurityWalkScopesProviders(t *testing.T) {
	env := nodetest.StartWith(t, nodetest.Options{Billing: node.BillingOptions{Enabled: true}})
	v := newVictim(t, env)
	intruderProvider := mustProvider(t, env, "Intruder")
	intruder := scopedClient(t, env, "intruder", intruderProvider)
	before := head(t, env)
	made := 0
	for _, r := range env.Node.Engine.Routes() {
		key := routeKey(r)
		if _, public := publicRoutes[key]; public || deviceRoute(r.Path) {
			continue
		}
		path, ok := v.pathFor(r.Path)
		if !ok {
			t.Errorf("%s: no value for a parameter; add one to pathFor", key)
			continue
		}
		if _, own := ownSessionRoutes[key]; own {
			made++
			status, body := env.Do(t, r.Method, path, intruder.login, intruder.pass, nil)
			if status >= http.StatusInternalServerError || leaks(body) {
				t.Errorf("%s as another provider's admin: %d %.300s", key, status, body)
			}
			continue
		}
		type call struct {
			target string
			body   any
		}
		var calls []call
		hasID := strings.Contains(r.Path, "/:")
		switch r.Method {
		case http.MethodPost, http.MethodPut:
			bodies, known := v.scopedBodies(r.Method, r.Path)
			if !known {
				t.Errorf("%s: no body naming another provider's resources; add one to scopedBodies", key)
				continue
			}
			for _, b := range bodies {
				calls = append(calls, call{path, b})
			}
		case http.MethodGet:
			if hasID {
				calls = append(calls, call{target: path})
			}
			for _, q := range v.scopedQueries(r.Path) {
				calls = append(calls, call{target: path + q})
			}
		default:
			calls = append(calls, call{target: path})
		}
		for _, c := range calls {
			made++
			var status int
			var body []byte
			switch {
			case strings.HasSuffix(r.Path, "/bulk"):
				status, body = env.DoHeader(t, r.Method, c.target, intruder.login, intruder.pass, c.body, withBodyType(r.Path, nil))
			case strings.HasPrefix(c.target, "/api/provider"):
				status, body = intruder.do(t, r.Method, strings.TrimPrefix(c.target, "/api/provider"), c.body)
			default:
				status, body = env.Do(t, r.Method, c.target, intruder.login, intruder.pass, c.body)
			}
			if _, shared := sharedCatalogReads[key]; shared && status == http.StatusOK {
				continue
			}
			// Bulk answers 200 once it reads the body, with a result line
			// per record: the record must be refused there.
			if key == "POST /api/provider/accounts/bulk" && status == http.StatusOK && strings.Contains(string(body), `"status":403`) {
				continue
			}
			// A list answers the admin's own provider's items whatever
			// its filter names (another provider: an empty list), so it
			// may answer 200, with none of the victim's data; a list with
			// no provider filter refuses it (400, naming it).
			if r.Method == http.MethodGet && !hasID && (status == http.StatusOK || status == http.StatusBadRequest) && !leaks(body) {
				continue
			}
			if status != http.StatusForbidden && status != http.StatusNotFound {
				t.Errorf("%s as another provider's admin, %s %v: %d %.300s; want 403 or 404", key, c.target, c.body, status, body)
			}
		}
	}
	if after := head(t, env); after != before {
		t.Errorf("another provider's admin appended events: head %v → %v", before, after)
	}
	if made < 60 {
		t.Errorf("%d requests made; the walk would prove little", made)
	}
	t.Logf("%d requests as another provider's admin", made)
}

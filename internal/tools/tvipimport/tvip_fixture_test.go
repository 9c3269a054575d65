// A fixture TVIP TMS: an httptest.Server answering the Provider API's reads
// in TVIP's own shapes, for the importer's tests against a source that is
// not a tvsm node.
//
// The shapes are those of TVIP's official Python SDK, tmsproviderapisdk
// (https://github.com/tvip/tmsproviderapisdk, commit
// a4a7ee8cb67b119cab838f42bb10b74a9ac051b2):
//
//   - tmsproviderapisdk/tms_config.py: the base path /api/provider and
//     HTTP Basic authentication;
//   - tmsproviderapisdk/tms_base_model.py: a list is GET <path>?start=S&limit=L
//     answering {"data":[...],"total":N} (we add start and limit, as tvsm
//     does), one object GET <path><id>; the SDK puts a slash after each
//     collection's name, so both spellings are answered;
//   - tmsproviderapisdk/tms_exceptions.py: an error answer is JSON with
//     statusCode and cause;
//   - each model's _dict_to_object, which reads every key below with
//     dict["key"] (a missing key is a KeyError in the SDK):
//     tms_region.py, tms_provider.py, tms_favorite_group.py, tms_channel.py,
//     tms_tarif_tag.py, tms_tarif.py, tms_devices_types.py, tms_account.py,
//     tms_account_network.py, tms_account_subscription.py, tms_device.py,
//     tms_device_subscription.py;
//   - examples/simple_example.py: subscription start and stop written with
//     strftime("%Y-%m-%dT%H:%M:%S%z") in Europe/Moscow, e.g.
//     "2024-01-15T10:00:00+0300".
//
// Where the SDK does not show a value's form, the fixture says what it
// assumes next to it.
package tvipimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/tools/tvipimport"
)

// The fixture's provider admin (HTTP Basic).
const (
	tvipLogin    = "provider_admin"
	tvipPassword = "provider_password"
)

// tvipKeys are the keys each model's _dict_to_object reads, by resource.
var tvipKeys = map[string][]string{
	"regions":        {"id", "name"},
	"providers":      {"id", "region_tag", "provider_name", "provider_comment", "enabled", "logo_url", "devices_per_account_limit"},
	"favorite_group": {"id", "name"},
	"channels":       {"id", "name", "text_name", "display_number", "logo_url", "enabled", "time_shift_depth", "favorites"},
	"tarif_tags":     {"id", "name", "enabled", "provider", "position"},
	"tarifs":         {"id", "tarif_name", "provider", "tarif_tag", "enabled"},
	"device_types":   {"device_type", "id"},
	"accounts": {"login", "account_desc", "contract_info", "devices_per_account_limit", "enabled", "fullname",
		"main_address", "pin_md5", "remote_custom_field", "provider", "id", "region_tag", "last_online", "created", "updated"},
	"account_network":       {"network", "account", "id", "description"},
	"account_subscriptions": {"account", "id", "start", "stop", "tarif", "time_shift_depth"},
	"devices": {"unique_id", "id", "ipaddr", "mac", "remote_custom_field", "comment", "last_online", "last_fw_ver",
		"first_online", "use_nat", "operation_system", "udpxy_addr", "device_type", "provider", "account"},
	"device_subscriptions": {"device", "id", "start", "stop", "tarif", "time_shift_depth"},
}

// tvipAccount is an account as TVIP answers it: pin_md5 always null (TVIP
// never shows a password), provider_dto and region_dto null next to
// provider and region_tag (keys the SDK does not read: the importer must
// ignore them), and created, updated and last_online in Unix seconds (the
// SDK's TmsAccount types them int).
func tvipAccount(id int64, login, fullname string, region, limit, lastOnline any, extra map[string]any) map[string]any {
	a := map[string]any{
		"id": id, "login": login, "pin_md5": nil, "fullname": fullname, "enabled": true,
		"provider": int64(3), "provider_dto": nil, "region_tag": region, "region_dto": nil,
		"remote_custom_field": nil, "contract_info": nil, "main_address": nil, "account_desc": nil,
		"devices_per_account_limit": limit,
		"created":                   int64(1705302000) + id, "updated": int64(1717200000) + id, "last_online": lastOnline,
	}
	maps.Copy(a, extra)
	return a
}

// tvipDevice is a device as TVIP answers it. last_online and first_online
// are strings in the SDK (TmsDevice); their form is not shown there, so the
// fixture assumes the subscriptions' "2024-01-15T10:00:00+0300".
func tvipDevice(id, account int64, uniqueID string, mac, deviceType any, extra map[string]any) map[string]any {
	d := map[string]any{
		"id": id, "unique_id": uniqueID, "account": account, "provider": int64(3),
		"ipaddr": "10.20.1." + strconv.FormatInt(id%250, 10), "mac": mac,
		"remote_custom_field": nil, "comment": nil,
		"last_online": "2024-06-01T21:14:05+0300", "first_online": "2024-01-15T12:30:00+0300",
		"last_fw_ver": "5.4.10", "operation_system": "Linux", "use_nat": false, "udpxy_addr": nil,
		"device_type": deviceType,
	}
	maps.Copy(d, extra)
	return d
}

func tvipSubscription(id, owner int64, ownerKey string, tarif int64, start, stop, depth any) map[string]any {
	return map[string]any{"id": id, ownerKey: owner, "tarif": tarif, "start": start, "stop": stop, "time_shift_depth": depth}
}

// tvipData is a TVIP TMS's objects: one provider (3) in region 5, ids with
// gaps as a TMS that has lived leaves them, every reference to an object
// listed. Devices 2003 and 2009 have no subscription of their own; account
// 1009 has nothing that refers to it.
func tvipData() map[string][]map[string]any {
	return map[string][]map[string]any{
		"regions": {
			{"id": int64(2), "name": "Moscow"},
			{"id": int64(5), "name": "Saint Petersburg"},
		},
		"providers": {
			{"id": int64(3), "region_tag": int64(5), "provider_name": "Neva Telecom", "provider_comment": "main provider",
				"enabled": true, "logo_url": "https://cdn.neva.example/logo.png", "devices_per_account_limit": int64(5)},
		},
		"favorite_group": {
			{"id": int64(4), "name": "News"},
			{"id": int64(6), "name": "Sport"},
			{"id": int64(10), "name": "Kids"},
		},
		"channels": {
			{"id": int64(11), "name": "Pervyj", "text_name": "Первый канал", "display_number": "1", "logo_url": "https://cdn.neva.example/ch/11.png",
				"enabled": true, "time_shift_depth": int64(72), "favorites": []int64{4}},
			{"id": int64(12), "name": "Rossija 1", "text_name": "Россия 1", "display_number": "2", "logo_url": nil,
				"enabled": true, "time_shift_depth": nil, "favorites": []int64{4, 6}},
			{"id": int64(15), "name": "Match TV", "text_name": "Матч ТВ", "display_number": "5", "logo_url": "https://cdn.neva.example/ch/15.png",
				"enabled": true, "time_shift_depth": int64(24), "favorites": []int64{6}},
			// No text name: "", the SDK's TmsChannel default.
			{"id": int64(20), "name": "Karusel", "text_name": "", "display_number": "20", "logo_url": nil,
				"enabled": false, "time_shift_depth": nil, "favorites": []int64{}},
		},
		"tarif_tags": {
			{"id": int64(8), "name": "Basic packages", "enabled": true, "provider": int64(3), "position": int64(1)},
		},
		// channels and description are not read by the SDK's TmsTarif, so
		// it does not show that TVIP answers them; the fixture assumes it
		// does (the importer copies them).
		"tarifs": {
			{"id": int64(7), "tarif_name": "Basic", "provider": int64(3), "tarif_tag": int64(8), "enabled": true,
				"channels": []int64{11, 12}, "description": "Federal channels"},
			{"id": int64(9), "tarif_name": "Sport+", "provider": int64(3), "tarif_tag": nil, "enabled": true,
				"channels": []int64{15, 11}, "description": nil},
		},
		"device_types": {
			{"id": int64(2), "device_type": "S-Box"},
			{"id": int64(5), "device_type": "SmartTV"},
		},
		"accounts": {
			tvipAccount(1001, "alice", "Alice Ivanova", int64(5), nil, int64(1717265645),
				map[string]any{"contract_info": "C-1001", "main_address": "Nevsky pr. 1, apt 5", "remote_custom_field": "billing-1001"}),
			tvipAccount(1002, "bob", "Bob Petrov", nil, int64(3), int64(1717179245),
				map[string]any{"account_desc": "VIP"}),
			tvipAccount(1005, "carol", "Carol Sidorova", int64(5), nil, nil, nil),
			tvipAccount(1006, "dave", "Dave Smirnov", nil, nil, int64(1716000000),
				map[string]any{"enabled": false, "account_desc": "suspended for debt"}),
			tvipAccount(1008, "erin", "Erin Kuznetsova", int64(5), nil, nil,
				map[string]any{"contract_info": "C-1008"}),
			tvipAccount(1009, "frank", "Frank Popov", nil, nil, nil, nil),
			tvipAccount(1011, "grace", "Grace Volkova", int64(5), int64(2), int64(1717000000), nil),
		},
		"account_network": {
			{"id": int64(31), "network": "10.20.0.0/16", "account": int64(1002), "description": "office"},
			{"id": int64(34), "network": "192.168.7.0/24", "account": int64(1008), "description": nil},
		},
		"account_subscriptions": {
			tvipSubscription(501, 1001, "account", 7, "2024-01-15T10:00:00+0300", nil, nil),
			tvipSubscription(502, 1001, "account", 9, "2024-01-15T10:00:00+0300", "2024-12-31T23:59:59+0300", int64(72)),
			tvipSubscription(507, 1002, "account", 7, "2023-11-01T00:00:00+0300", nil, nil),
			tvipSubscription(510, 1005, "account", 9, "2024-03-01T00:00:00+0300", "2025-03-01T00:00:00+0300", nil),
			tvipSubscription(511, 1006, "account", 7, "2023-06-01T00:00:00+0300", "2024-02-01T00:00:00+0300", nil),
			tvipSubscription(515, 1008, "account", 7, "2024-05-20T18:45:00+0300", nil, int64(24)),
			tvipSubscription(516, 1011, "account", 7, "2024-02-10T09:00:00+0300", nil, nil),
		},
		"devices": {
			tvipDevice(2001, 1001, "1027be0a1b01", "10:27:be:0a:1b:01", int64(2), map[string]any{"comment": "living room"}),
			tvipDevice(2003, 1001, "android-7f3c9e", nil, int64(5), map[string]any{"operation_system": "Android", "use_nat": true}),
			tvipDevice(2004, 1002, "1027be0a1b04", "10:27:be:0a:1b:04", int64(2), map[string]any{"remote_custom_field": "stb-42", "udpxy_addr": "10.20.0.1:4022"}),
			tvipDevice(2009, 1008, "1027be0a1b09", "10:27:be:0a:1b:09", nil, map[string]any{"last_online": nil, "last_fw_ver": nil}),
			tvipDevice(2010, 1011, "1027be0a1b10", "10:27:be:0a:1b:10", int64(2), nil),
		},
		"device_subscriptions": {
			tvipSubscription(801, 2001, "device", 9, "2024-02-01T00:00:00+0300", nil, nil),
			tvipSubscription(803, 2004, "device", 9, "2024-04-01T12:00:00+0300", "2024-10-01T12:00:00+0300", int64(48)),
			tvipSubscription(806, 2010, "device", 7, "2024-05-01T00:00:00+0300", nil, nil),
		},
	}
}

// tvipServer is the fixture TMS. Its objects may be changed between runs
// (set, add, remove), and a page of a list made to answer 500 (failPage).
type tvipServer struct {
	*httptest.Server
	mu   sync.Mutex
	data map[string][]map[string]any // by resource, in id order
	// faults are the 500s left for a page ("accounts?start=3"); negative:
	// for ever. served counts those answered.
	faults, served map[string]int
}

func startTVIP(t *testing.T) *tvipServer {
	t.Helper()
	s := &tvipServer{data: tvipData(), faults: map[string]int{}, served: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func pageKey(resource string, start int) string { return resource + "?start=" + strconv.Itoa(start) }

// failPage makes the list page of resource at start answer 500 the next n
// times (n < 0: until told otherwise, n == 0: no more).
func (s *tvipServer) failPage(resource string, start, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[pageKey(resource, start)] = n
}

// failures counts the 500s the page answered.
func (s *tvipServer) failures(resource string, start int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[pageKey(resource, start)]
}

func objectID(o map[string]any) int64 {
	id, _ := o["id"].(int64)
	return id
}

// set changes a key of an object.
func (s *tvipServer) set(t *testing.T, resource string, id int64, key string, v any) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.data[resource] {
		if objectID(o) == id {
			o[key] = v
			return
		}
	}
	t.Fatalf("fixture: no %s %d", resource, id)
}

// add adds objects, keeping the list in id order.
func (s *tvipServer) add(resource string, objects ...map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[resource] = append(s.data[resource], objects...)
	slices.SortStableFunc(s.data[resource], func(a, b map[string]any) int { return int(objectID(a) - objectID(b)) })
}

// remove deletes an object, as the TMS would.
func (s *tvipServer) remove(t *testing.T, resource string, id int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.data[resource])
	s.data[resource] = slices.DeleteFunc(s.data[resource], func(o map[string]any) bool { return objectID(o) == id })
	if len(s.data[resource]) == n {
		t.Fatalf("fixture: no %s %d", resource, id)
	}
}

// ids lists a resource's ids.
func (s *tvipServer) ids(resource string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for _, o := range s.data[resource] {
		ids = append(ids, objectID(o))
	}
	return ids
}

func tvipError(w http.ResponseWriter, status int, cause string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"statusCode": status, "cause": cause})
	w.Write(b)
}

func (s *tvipServer) serve(w http.ResponseWriter, r *http.Request) {
	if login, password, ok := r.BasicAuth(); !ok || login != tvipLogin || password != tvipPassword {
		w.Header().Set("WWW-Authenticate", `Basic realm="TMS"`)
		tvipError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/provider/")
	if !ok {
		tvipError(w, http.StatusNotFound, "Not found")
		return
	}
	resource, id, one := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	objects, known := s.data[resource]
	if !known {
		tvipError(w, http.StatusNotFound, "Not found")
		return
	}
	if r.Method != http.MethodGet {
		tvipError(w, http.StatusMethodNotAllowed, "the fixture answers reads only")
		return
	}
	if one {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			tvipError(w, http.StatusBadRequest, "bad id "+strconv.Quote(id))
			return
		}
		for _, o := range objects {
			if objectID(o) == n {
				writeJSON(w, o)
				return
			}
		}
		tvipError(w, http.StatusNotFound, fmt.Sprintf("%s %d not found", resource, n))
		return
	}
	start, limit := 0, 50 // the SDK's defaults
	q := r.URL.Query()
	var err error
	if v := q.Get("start"); v != "" {
		if start, err = strconv.Atoi(v); err != nil || start < 0 {
			tvipError(w, http.StatusBadRequest, "bad start "+strconv.Quote(v))
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit <= 0 {
			tvipError(w, http.StatusBadRequest, "bad limit "+strconv.Quote(v))
			return
		}
	}
	key := pageKey(resource, start)
	if n := s.faults[key]; n != 0 {
		if n > 0 {
			s.faults[key] = n - 1
		}
		s.served[key]++
		tvipError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	page := objects[min(start, len(objects)):min(start+limit, len(objects))]
	writeJSON(w, map[string]any{"data": append([]map[string]any{}, page...), "total": len(objects), "start": start, "limit": limit})
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		tvipError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// tvipOptions imports from the fixture into dst, as options does from a
// node: small pages, so that every list has several.
func tvipOptions(src *tvipServer, dst *nodetest.Env) tvipimport.Options {
	return tvipimport.Options{
		Source:   tvipimport.Endpoint{URL: src.URL, Login: tvipLogin, Password: tvipPassword},
		Target:   tvipimport.Endpoint{URL: dst.URL, Login: dst.SuperLogin, Password: dst.SuperPassword},
		Retry:    fastRetry,
		PageSize: 3,
		Workers:  4,
	}
}

// getID gets /api/provider/<resource>/<id> at the target: its status and,
// when 200, the object.
func getID(t *testing.T, env *nodetest.Env, resource string, id int64) (int, map[string]any) {
	t.Helper()
	status, body := env.Super(t, "GET", fmt.Sprintf("/api/provider/%s/%d", resource, id), nil)
	if status != http.StatusOK {
		return status, nil
	}
	var o map[string]any
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatalf("GET %s %d: %v in %s", resource, id, err, body)
	}
	return status, o
}

// The fixture answers what TVIP's SDK reads: every key of each model's
// _dict_to_object, in lists paged by start and limit and one by one, 401
// without the admin's credentials, 404 for an unknown id; and its
// references are to objects it lists.
func TestTVIPFixtureAnswersInTVIPsShapes(t *testing.T) {
	t.Parallel()
	src := startTVIP(t)
	get := func(path, login, password string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest("GET", src.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if login != "" {
			req.SetBasicAuth(login, password)
		}
		resp, err := src.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, v
	}
	if status, _ := get("/api/provider/accounts/?start=0&limit=50", "", ""); status != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", status)
	}
	if status, _ := get("/api/provider/accounts/?start=0&limit=50", tvipLogin, "wrong"); status != http.StatusUnauthorized {
		t.Errorf("with a wrong password: %d, want 401", status)
	}
	if status, v := get("/api/provider/accounts/1003", tvipLogin, tvipPassword); status != http.StatusNotFound || v["statusCode"] != float64(404) {
		t.Errorf("an unknown id: %d %v, want 404 with statusCode", status, v)
	}

	has := map[string]map[float64]bool{}
	for _, resource := range tvipimport.Resources() {
		keys, ok := tvipKeys[resource]
		if !ok {
			t.Fatalf("the importer reads %s, which the fixture does not know", resource)
		}
		has[resource] = map[float64]bool{}
		var all []map[string]any
		for start := 0; ; start += 2 {
			status, page := get(fmt.Sprintf("/api/provider/%s/?start=%d&limit=2", resource, start), tvipLogin, tvipPassword)
			if status != http.StatusOK {
				t.Fatalf("%s at %d: %d %v", resource, start, status, page)
			}
			data, _ := page["data"].([]any)
			if page["start"] != float64(start) || page["limit"] != float64(2) || len(data) > 2 {
				t.Errorf("%s at %d: start %v, limit %v, %d objects", resource, start, page["start"], page["limit"], len(data))
			}
			for _, o := range data {
				all = append(all, o.(map[string]any))
			}
			if total := int(page["total"].(float64)); start+2 >= total {
				if len(all) != total || total == 0 {
					t.Errorf("%s: %d objects paged, total %d", resource, len(all), total)
				}
				break
			}
		}
		for _, o := range all {
			for _, k := range keys {
				if _, ok := o[k]; !ok {
					t.Errorf("%s %v has no %q, which the SDK reads", resource, o["id"], k)
				}
			}
			id := o["id"].(float64)
			has[resource][id] = true
			if status, one := get(fmt.Sprintf("/api/provider/%s/%v", resource, id), tvipLogin, tvipPassword); status != http.StatusOK || one["id"] != id {
				t.Errorf("%s %v one by one: %d %v", resource, id, status, one)
			}
		}
	}
	if src.ids("accounts")[0] != 1001 {
		t.Errorf("accounts in id order from 1001: %v", src.ids("accounts"))
	}

	// Every reference is to an object listed.
	refs := map[string]map[string]string{
		"providers":             {"region_tag": "regions"},
		"channels":              {"favorites": "favorite_group"},
		"tarif_tags":            {"provider": "providers"},
		"tarifs":                {"provider": "providers", "tarif_tag": "tarif_tags", "channels": "channels"},
		"accounts":              {"provider": "providers", "region_tag": "regions"},
		"account_network":       {"account": "accounts"},
		"account_subscriptions": {"account": "accounts", "tarif": "tarifs"},
		"devices":               {"account": "accounts", "provider": "providers", "device_type": "device_types"},
		"device_subscriptions":  {"device": "devices", "tarif": "tarifs"},
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	for resource, fields := range refs {
		for _, o := range src.data[resource] {
			for field, to := range fields {
				var targets []int64
				switch v := o[field].(type) {
				case nil:
				case int64:
					targets = []int64{v}
				case []int64:
					targets = v
				default:
					t.Errorf("%s %d %s: %T", resource, objectID(o), field, v)
				}
				for _, id := range targets {
					if !has[to][float64(id)] {
						t.Errorf("%s %d %s names %s %d, which is not listed", resource, objectID(o), field, to, id)
					}
				}
			}
		}
	}
}

// Given a TMS answering in TVIP's shapes, when it is imported into a new
// node, then every object is created under its id, --verify finds no
// difference, every account comes without a password (TVIP shows none),
// and a second run appends no event.
func TestTVIPImportCopiesEverythingWithItsIDs(t *testing.T) {
	t.Parallel()
	src := startTVIP(t)
	dst := nodetest.Start(t)
	o := tvipOptions(src, dst)

	first := mustImport(t, o)
	c := counts(first)
	for _, resource := range tvipimport.Resources() {
		want := len(src.ids(resource))
		if got := c[resource]; got[0] != want || got[1] != want {
			t.Errorf("%s: %v (read, created, changed, unchanged, deleted, refused); want %d read and created", resource, got, want)
		}
	}
	if want := len(src.ids("accounts")); first.WithoutPassword != want || first.PinsSent != 0 {
		t.Errorf("accounts without a password %d, with a pin %d; want %d and 0", first.WithoutPassword, first.PinsSent, want)
	}
	mustVerify(t, o)

	// Ids kept: spot checks through the target's Provider API.
	if status, a := getID(t, dst, "accounts", 1005); status != http.StatusOK || a["id"] != float64(1005) || a["login"] != "carol" ||
		a["provider"] != float64(3) || a["region_tag"] != float64(5) {
		t.Errorf("account 1005 at the target: %d %v", status, a)
	}
	if status, a := getID(t, dst, "accounts", 1006); status != http.StatusOK || a["enabled"] != false || a["account_desc"] != "suspended for debt" {
		t.Errorf("account 1006 at the target: %d %v", status, a)
	}
	if status, d := getID(t, dst, "devices", 2004); status != http.StatusOK || d["account"] != float64(1002) || d["mac"] != "10:27:be:0a:1b:04" ||
		d["udpxy_addr"] != "10.20.0.1:4022" || d["device_type"] != float64(2) {
		t.Errorf("device 2004 at the target: %d %v", status, d)
	}
	if status, tr := getID(t, dst, "tarifs", 9); status != http.StatusOK || tr["tarif_name"] != "Sport+" || fmt.Sprint(tr["channels"]) != "[15 11]" {
		t.Errorf("tarif 9 at the target: %d %v", status, tr)
	}
	if status, s := getID(t, dst, "account_subscriptions", 502); status != http.StatusOK || s["account"] != float64(1001) || s["tarif"] != float64(9) ||
		s["time_shift_depth"] != float64(72) {
		t.Errorf("account subscription 502 at the target: %d %v", status, s)
	}
	if status, s := getID(t, dst, "device_subscriptions", 803); status != http.StatusOK || s["device"] != float64(2004) {
		t.Errorf("device subscription 803 at the target: %d %v", status, s)
	}
	if status, ch := getID(t, dst, "channels", 12); status != http.StatusOK || ch["display_number"] != "2" || fmt.Sprint(ch["favorites"]) != "[4 6]" {
		t.Errorf("channel 12 at the target: %d %v", status, ch)
	}
	if status, p := getID(t, dst, "providers", 3); status != http.StatusOK || p["provider_name"] != "Neva Telecom" || p["region_tag"] != float64(5) {
		t.Errorf("provider 3 at the target: %d %v", status, p)
	}
	for _, gap := range []int64{1003, 1004, 1007, 1010} {
		if status, _ := getID(t, dst, "accounts", gap); status != http.StatusNotFound {
			t.Errorf("account %d, a gap at the source: %d at the target, want 404", gap, status)
		}
	}

	head := headOf(t, dst)
	second := mustImport(t, o)
	if after := headOf(t, dst); after != head {
		t.Errorf("a second run appended events: head %v → %v", head, after)
	}
	for name, c := range counts(second) {
		if c[1]+c[2]+c[4]+c[5] != 0 || c[3] != c[0] {
			t.Errorf("second run, %s: %v (read, created, changed, unchanged, deleted, refused); want only unchanged", name, c)
		}
	}
	if second.Writes() != 0 {
		t.Errorf("second run: %d writes", second.Writes())
	}
}

// Given a TMS imported once, when at the TMS an account is renamed, one is
// added and a device removed, then a run makes exactly those three writes,
// and --verify finds no difference after.
func TestTVIPImportAppliesTheSourcesChanges(t *testing.T) {
	t.Parallel()
	src := startTVIP(t)
	dst := nodetest.Start(t)
	o := tvipOptions(src, dst)
	mustImport(t, o)

	src.set(t, "accounts", 1005, "fullname", "Carol Sidorova-Orlova")
	src.set(t, "accounts", 1005, "updated", int64(1720000000))
	src.add("accounts", tvipAccount(1014, "heidi", "Heidi Morozova", int64(2), nil, nil, map[string]any{"contract_info": "C-1014"}))
	src.remove(t, "devices", 2003)

	head := headOf(t, dst)
	r := mustImport(t, o)
	c := counts(r)
	if c["accounts"] != [6]int{8, 1, 1, 6, 0, 0} || c["devices"] != [6]int{4, 0, 0, 4, 1, 0} || r.Writes() != 3 {
		t.Errorf("after the changes: accounts %v, devices %v, writes %d; want 1 created and 1 changed of 8, 1 of 5 devices deleted, 3 writes",
			c["accounts"], c["devices"], r.Writes())
	}
	for name, n := range c {
		if name != "accounts" && name != "devices" && n[1]+n[2]+n[4]+n[5] != 0 {
			t.Errorf("%s: %v; want nothing written", name, n)
		}
	}
	if after := headOf(t, dst); after == head {
		t.Error("the changes appended no event")
	}
	if status, a := getID(t, dst, "accounts", 1005); status != http.StatusOK || a["fullname"] != "Carol Sidorova-Orlova" {
		t.Errorf("the renamed account: %d %v", status, a)
	}
	if status, a := getID(t, dst, "accounts", 1014); status != http.StatusOK || a["login"] != "heidi" || a["region_tag"] != float64(2) {
		t.Errorf("the added account: %d %v", status, a)
	}
	if status, _ := getID(t, dst, "devices", 2003); status != http.StatusNotFound {
		t.Errorf("the removed device: %d at the target, want 404", status)
	}
	mustVerify(t, o)

	head = headOf(t, dst)
	if r := mustImport(t, o); r.Writes() != 0 || headOf(t, dst) != head {
		t.Errorf("a run after catching up: %d writes, head %v → %v", r.Writes(), head, headOf(t, dst))
	}
}

// Given a TMS that answers 500 to a page of accounts after the first, when
// the 500s pass within the retries, then the import completes as if nothing
// happened; when they do not, then the accounts are reported failed at that
// page, none is created, and once the fault is gone a run completes and
// --verify finds no difference.
func TestTVIPImportRidesOutAndResumesAfter500s(t *testing.T) {
	t.Parallel()
	t.Run("transient", func(t *testing.T) {
		t.Parallel()
		src := startTVIP(t)
		dst := nodetest.Start(t)
		o := tvipOptions(src, dst)
		src.failPage("accounts", 3, o.Retry.Attempts-1)
		r := mustImport(t, o)
		if got := src.failures("accounts", 3); got != o.Retry.Attempts-1 {
			t.Fatalf("the page answered 500 %d times, want %d", got, o.Retry.Attempts-1)
		}
		if c := counts(r)["accounts"]; c[0] != 7 || c[1] != 7 {
			t.Errorf("accounts: %v; want 7 read and created", c)
		}
		mustVerify(t, o)
	})
	t.Run("persistent", func(t *testing.T) {
		t.Parallel()
		src := startTVIP(t)
		dst := nodetest.Start(t)
		o := tvipOptions(src, dst)
		src.failPage("accounts", 3, -1)
		r, err := tvipimport.Import(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if got := src.failures("accounts", 3); got != o.Retry.Attempts {
			t.Errorf("the page was asked %d times, want %d (every attempt)", got, o.Retry.Attempts)
		}
		var accounts tvipimport.ResourceReport
		for _, res := range r.Resources {
			if res.Name == "accounts" {
				accounts = res
			}
		}
		if r.OK() || !strings.Contains(accounts.Failed, "start=3") || !strings.Contains(accounts.Failed, "500") {
			t.Fatalf("with the page failing for ever: accounts %+v; want it failed, naming the page and the status", accounts)
		}
		if accounts.Created != 0 {
			t.Errorf("a failed read created %d accounts; want none until the whole list is read", accounts.Created)
		}
		for _, id := range src.ids("accounts") {
			if status, _ := getID(t, dst, "accounts", id); status != http.StatusNotFound {
				t.Errorf("account %d at the target after the failed read: %d, want 404", id, status)
			}
		}
		// What comes before the accounts is copied whole.
		c := counts(r)
		for _, name := range []string{"regions", "providers", "favorite_group", "channels", "tarif_tags", "tarifs", "device_types"} {
			if c[name][1] != len(src.ids(name)) || c[name][5] != 0 {
				t.Errorf("%s: %v; want every one created", name, c[name])
			}
		}

		src.failPage("accounts", 3, 0)
		r = mustImport(t, o)
		if c := counts(r)["accounts"]; c[1] != 7 {
			t.Errorf("the run after the fault: accounts %v; want 7 created", c)
		}
		mustVerify(t, o)
	})
}

// Given a TMS with bad objects (a subscription naming a tariff it does not
// list, two accounts of the provider with one login, a subscription whose
// start is not a date-time), when it is imported, then each bad object is
// refused with a line naming the field, none is created in part, every
// other object is created, and the report is not OK.
func TestTVIPImportRefusesBadSourceData(t *testing.T) {
	t.Parallel()
	src := startTVIP(t)
	src.add("account_subscriptions",
		tvipSubscription(520, 1005, "account", 99, "2024-01-15T10:00:00+0300", nil, nil),
		tvipSubscription(521, 1011, "account", 7, "15/01/2024", nil, nil))
	src.add("accounts", tvipAccount(1015, "frank", "Frank Popov (again)", nil, nil, nil, nil))
	// TVIP numbers device subscriptions apart from account subscriptions;
	// tvsm in one series: a device subscription under account
	// subscription 502's id.
	src.add("device_subscriptions", tvipSubscription(502, 2004, "device", 9, "2024-05-01T12:00:00+0300", nil, nil))
	dst := nodetest.Start(t)
	o := tvipOptions(src, dst)

	r, err := tvipimport.Import(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() {
		t.Error("an import with refusals reports OK")
	}
	reports := map[string]tvipimport.ResourceReport{}
	for _, res := range r.Resources {
		reports[res.Name] = res
		if res.Failed != "" || res.Skipped != "" {
			t.Errorf("%s: failed %q, skipped %q", res.Name, res.Failed, res.Skipped)
		}
		refused := map[string]int{"accounts": 1, "account_subscriptions": 2, "device_subscriptions": 1}[res.Name]
		if res.Refused != refused || res.Created != res.Read-refused {
			t.Errorf("%s: read %d, created %d, refused %d %+v; want %d refused, every other created",
				res.Name, res.Read, res.Created, res.Refused, res.Refusals, refused)
		}
	}

	// One of the two accounts named frank is refused, naming the login;
	// the other is there.
	accounts := reports["accounts"]
	if len(accounts.Refusals) == 1 {
		refused := accounts.Refusals[0]
		kept := map[int64]int64{1009: 1015, 1015: 1009}[refused.ID]
		if kept == 0 || strings.Count(refused.Reason, "login:") != 1 {
			t.Errorf("the duplicate login: %+v; want 1009 or 1015 refused, naming login once", refused)
		}
		if status, _ := getID(t, dst, "accounts", refused.ID); status != http.StatusNotFound {
			t.Errorf("the refused account %d at the target: %d, want 404", refused.ID, status)
		}
		if status, a := getID(t, dst, "accounts", kept); status != http.StatusOK || a["login"] != "frank" {
			t.Errorf("the account %d kept at the target: %d %v", kept, status, a)
		}
	}

	// The subscriptions: 520 names tarif 99, 521 has start "15/01/2024".
	want := map[int64]string{520: "tarif", 521: "start"}
	subs := reports["account_subscriptions"]
	for _, ref := range subs.Refusals {
		field, ok := want[ref.ID]
		if !ok {
			t.Errorf("account subscription %d refused: %s", ref.ID, ref.Reason)
			continue
		}
		delete(want, ref.ID)
		if strings.Count(ref.Reason, field+":") != 1 {
			t.Errorf("account subscription %d refused with %q; want the reason to name %s once", ref.ID, ref.Reason, field)
		}
		if status, s := getID(t, dst, "account_subscriptions", ref.ID); status != http.StatusNotFound {
			t.Errorf("the refused account subscription %d at the target: %d %v, want 404", ref.ID, status, s)
		}
	}
	if len(want) != 0 {
		t.Errorf("account subscriptions not refused: %v; refusals %+v", want, subs.Refusals)
	}

	if ds := reports["device_subscriptions"].Refusals; len(ds) != 1 || ds[0].ID != 502 || !strings.Contains(ds[0].Reason, "one series") {
		t.Errorf("the device subscription under an account subscription's id: %+v", ds)
	}

	// --verify lists exactly the refused objects as missing.
	diffs, err := tvipimport.Verify(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range diffs {
		got = append(got, d.String())
	}
	slices.Sort(got)
	wantDiffs := []string{"account_subscriptions 520: missing at the target", "account_subscriptions 521: missing at the target",
		"device_subscriptions 502: missing at the target"}
	if len(accounts.Refusals) == 1 {
		wantDiffs = append(wantDiffs, fmt.Sprintf("accounts %d: missing at the target", accounts.Refusals[0].ID))
	}
	slices.Sort(wantDiffs)
	if !slices.Equal(got, wantDiffs) {
		t.Errorf("verify after the refusals: %q, want %q", got, wantDiffs)
	}
}

package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tvsm/internal/testkit/nodetest"
)

// Contract tests with TVIP's Provider API SDK for accounts, account and
// device subscriptions, devices and account networks: every key the SDK's
// model classes read, with the SDK's types; the trailing slash the SDK puts
// on every path, answered without a redirect; every filter its get_list
// sends, each narrowing the list; an unknown filter refused.

// The shapes the SDK's _dict_to_object reads (tmsproviderapisdk, commit
// a4a7ee8).
var (
	sdkAccount = sdkShape{
		"login": jsonString, "account_desc": "string|null", "contract_info": "string|null",
		"devices_per_account_limit": "int|null", "enabled": jsonBool, "fullname": jsonString, "main_address": "string|null",
		"pin_md5": jsonNull, "remote_custom_field": "string|null", "provider": jsonInt, "id": jsonInt,
		"region_tag": "int|null", "last_online": "int|null", "created": jsonInt, "updated": jsonInt,
	}
	sdkAccountSubscription = sdkShape{
		"account": jsonInt, "id": jsonInt, "start": jsonString, "stop": "string|null", "tarif": jsonInt, "time_shift_depth": "int|null",
	}
	sdkDeviceSubscription = sdkShape{
		"device": jsonInt, "id": jsonInt, "start": jsonString, "stop": "string|null", "tarif": jsonInt, "time_shift_depth": "int|null",
	}
	sdkDevice = sdkShape{
		"unique_id": jsonString, "id": jsonInt, "ipaddr": "string|null", "mac": "string|null", "remote_custom_field": "string|null",
		"comment": "string|null", "last_online": "string|null", "last_fw_ver": "string|null", "first_online": "string|null",
		"use_nat": jsonBool, "operation_system": "string|null", "udpxy_addr": "string|null", "device_type": "int|null",
		"provider": jsonInt, "account": jsonInt,
	}
	sdkAccountNetwork = sdkShape{"network": jsonString, "account": jsonInt, "id": jsonInt, "description": "string|null"}
)

// wantOnly checks that a list page holds exactly want, and that its
// total counts them.
func wantOnly(t *testing.T, c sdkClient, path string, shape sdkShape, want ...int64) {
	t.Helper()
	total, got := listTotal(t, c, path, shape)
	if total != int64(len(want)) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GET %s: total %d, ids %v; want %v", path, total, got, want)
	}
}

// listTotal gets a list page and returns its total and ids.
func listTotal(t *testing.T, c sdkClient, path string, shape sdkShape) (int64, []int64) {
	t.Helper()
	data := c.ok(t, http.MethodGet, path, nil)
	items := assertListShape(t, "GET "+path, data, shape)
	var got []int64
	for _, it := range items {
		got = append(got, num(it["id"]))
	}
	return num(decodeNumbers(t, data)["total"]), got
}

func num(v any) int64 {
	n, _ := v.(json.Number).Int64()
	return n
}

// sdkRig is a node with two providers, a scoped admin of the first (as
// the SDK's example uses), a tariff and a region.
type sdkRig struct {
	env                *nodetest.Env
	sdk, super         sdkClient
	prov, other        int64
	tariff, tariff2    int64
	region, deviceType int64
}

func newSDKRig(t *testing.T) *sdkRig {
	t.Helper()
	env := nodetest.Start(t)
	r := &sdkRig{env: env}
	r.prov = mustProvider(t, env, "TVIP ISP")
	r.other = mustProvider(t, env, "Other ISP")
	r.tariff = mustTariff(t, env, r.prov, "Basic")
	r.tariff2 = mustTariff(t, env, r.prov, "Sport")
	r.region = mustAdmin(t, env, http.MethodPost, "/regions", map[string]any{"name": "Moscow"})
	scoped := scopedClient(t, env, "provider_admin", r.prov)
	r.sdk = sdkAs(scoped)
	r.super = sdkAs(superClient(env))
	r.deviceType = num(r.super.object(t, http.MethodPost, "/device_types/", map[string]any{"device_type": "tvip-s605", "id": nil},
		sdkShape{"id": jsonInt, "device_type": jsonString})["id"])
	return r
}

// newAccount creates an account as TmsAccount(...).create() does: every
// key of the object, nulls and empty strings included, no provider (the
// scoped admin's).
func (r *sdkRig) newAccount(t *testing.T, login string, enabled bool) map[string]any {
	t.Helper()
	return r.sdk.object(t, http.MethodPost, "/accounts/", map[string]any{
		"login": login, "fullname": "Marshall Mathers", "account_desc": "", "contract_info": "", "devices_per_account_limit": nil,
		"enabled": enabled, "main_address": "", "pin_md5": pin("test_password"), "remote_custom_field": "", "provider": nil, "id": nil,
		"region_tag": nil, "last_online": nil, "created": nil, "updated": nil,
	}, sdkAccount)
}

func TestSDKAccounts(t *testing.T) {
	r := newSDKRig(t)
	a := r.newAccount(t, "test_account", false)
	id := num(a["id"])
	if a["provider"].(json.Number).String() != fmt.Sprint(r.prov) || a["enabled"] != false || a["account_desc"] != "" {
		t.Fatalf("created %v", a)
	}
	// The SDK's update: PUT /accounts/{id} with the whole object as read.
	a["enabled"] = true
	u := r.sdk.object(t, http.MethodPut, fmt.Sprintf("/accounts/%d", id), a, sdkAccount)
	if u["enabled"] != true || num(u["updated"]) < num(u["created"]) {
		t.Fatalf("updated %v", u)
	}
	r.sdk.object(t, http.MethodGet, fmt.Sprintf("/accounts/%d", id), nil, sdkAccount)

	// Filters of TmsAccount.get_list, each narrowing the list.
	b := num(r.sdk.object(t, http.MethodPost, "/accounts/", map[string]any{
		"login": "second", "fullname": "Second Person", "pin_md5": pin("x"), "remote_custom_field": "crm-7", "region_tag": r.region, "enabled": false,
	}, sdkAccount)["id"])
	r.super.object(t, http.MethodPost, "/accounts/", map[string]any{"login": "elsewhere", "fullname": "Other", "pin_md5": pin("x"), "provider": r.other}, sdkAccount)
	wantOnly(t, r.sdk, "/accounts/?start=0&limit=50", sdkAccount, id, b)
	if total, page := listTotal(t, r.sdk, "/accounts/?start=1&limit=1&sort=id", sdkAccount); total != 2 || len(page) != 1 || page[0] != b {
		t.Errorf("second page of one: total %d, %v; want 2, [%d]", total, page, b)
	}
	wantOnly(t, r.sdk, fmt.Sprintf("/accounts/?start=0&limit=50&provider=%d", r.prov), sdkAccount, id, b)
	wantOnly(t, r.sdk, fmt.Sprintf("/accounts/?start=0&limit=50&region_tag=%d", r.region), sdkAccount, b)
	wantOnly(t, r.sdk, "/accounts/?start=0&limit=50&enabled=True", sdkAccount, id)
	wantOnly(t, r.sdk, "/accounts/?start=0&limit=50&enabled=False", sdkAccount, b)
	wantOnly(t, r.sdk, "/accounts/?start=0&limit=50&login=second", sdkAccount, b)
	wantOnly(t, r.sdk, "/accounts/?start=0&limit=50&remote_custom_field=crm-7", sdkAccount, b)
	wantOnly(t, r.sdk, "/accounts/?start=0&limit=50&quick_search=Marshall", sdkAccount, id)
	wantOnly(t, r.sdk, "/accounts/?start=0&limit=50&sort=-id", sdkAccount, b, id)
	r.sdk.unknownFilter(t, "/accounts/")

	// The SDK's delete: DELETE /accounts/{id}, 200.
	if status, data := r.sdk.do(t, http.MethodDelete, fmt.Sprintf("/accounts/%d", b), nil); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, data)
	}
	if status, _ := r.sdk.do(t, http.MethodGet, fmt.Sprintf("/accounts/%d/", b), nil); status != http.StatusNotFound {
		t.Fatalf("GET deleted account: %d", status)
	}
}

func TestSDKAccountSubscriptions(t *testing.T) {
	r := newSDKRig(t)
	a := num(r.newAccount(t, "subscriber", true)["id"])
	b := num(r.newAccount(t, "other", true)["id"])
	now := time.Now().In(time.FixedZone("MSK", 3*3600)).Format("2006-01-02T15:04:05-0700")
	s := r.sdk.object(t, http.MethodPost, "/account_subscriptions/", map[string]any{
		"account": a, "start": now, "tarif": r.tariff, "id": nil, "stop": nil, "time_shift_depth": 72,
	}, sdkAccountSubscription)
	sid := num(s["id"])
	if num(s["time_shift_depth"]) != 72 || s["stop"] != nil {
		t.Fatalf("created %v", s)
	}
	// Ending it: the SDK's update with stop set, the rest sent back.
	s["stop"] = time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05+0000")
	u := r.sdk.object(t, http.MethodPut, fmt.Sprintf("/account_subscriptions/%d", sid), s, sdkAccountSubscription)
	if u["stop"] == nil || num(u["time_shift_depth"]) != 72 {
		t.Fatalf("updated %v", u)
	}
	s2 := num(r.sdk.object(t, http.MethodPost, "/account_subscriptions/", map[string]any{"account": b, "start": now, "tarif": r.tariff2}, sdkAccountSubscription)["id"])
	wantOnly(t, r.sdk, "/account_subscriptions/?start=0&limit=50", sdkAccountSubscription, sid, s2)
	wantOnly(t, r.sdk, fmt.Sprintf("/account_subscriptions/?start=0&limit=50&account=%d", a), sdkAccountSubscription, sid)
	wantOnly(t, r.sdk, fmt.Sprintf("/account_subscriptions/?start=0&limit=50&tarif=%d", r.tariff2), sdkAccountSubscription, s2)
	wantOnly(t, r.sdk, "/account_subscriptions/?start=0&limit=50&quick_search=other", sdkAccountSubscription, s2)
	wantOnly(t, r.sdk, fmt.Sprintf("/account_subscriptions/?start=0&limit=50&quick_search=%d", sid), sdkAccountSubscription, sid)
	wantOnly(t, r.sdk, "/account_subscriptions/?start=0&limit=50&sort=-id", sdkAccountSubscription, s2, sid)
	r.sdk.unknownFilter(t, "/account_subscriptions/")
	if status, data := r.sdk.do(t, http.MethodDelete, fmt.Sprintf("/account_subscriptions/%d", s2), nil); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, data)
	}
	wantOnly(t, r.sdk, "/account_subscriptions/?start=0&limit=50", sdkAccountSubscription, sid)
}

func TestSDKDevices(t *testing.T) {
	r := newSDKRig(t)
	a := num(r.newAccount(t, "box-owner", true)["id"])
	b := num(r.newAccount(t, "second-owner", true)["id"])
	// TmsDevice(unique_id=..., account=...).create(): every key, nulls
	// included; the device is bound before it ever logs in.
	d := r.sdk.object(t, http.MethodPost, "/devices/", map[string]any{
		"unique_id": "00:1A:79:0A:BB:CC", "account": a, "id": nil, "ipaddr": nil, "mac": "00-1A-79-0A-BB-CC", "remote_custom_field": nil,
		"comment": "hall", "last_online": nil, "last_fw_ver": nil, "first_online": nil, "use_nat": false, "operation_system": nil,
		"udpxy_addr": "10.0.0.1:4022", "device_type": nil, "provider": nil,
	}, sdkDevice)
	dev := num(d["id"])
	if d["mac"] != "00:1a:79:0a:bb:cc" || d["comment"] != "hall" || d["last_online"] != nil || num(d["provider"]) != r.prov {
		t.Fatalf("created %v", d)
	}
	// A device registered by MAC alone gets the MAC as its unique id.
	d2 := r.sdk.object(t, http.MethodPost, "/devices/", map[string]any{"mac": "001A790000FF", "account": b, "remote_custom_field": "crm-2"}, sdkDevice)
	dev2 := num(d2["id"])
	if d2["unique_id"] != "00:1a:79:00:00:ff" {
		t.Fatalf("registered by MAC: %v", d2)
	}
	// The same unique id again within the provider is refused.
	if status, data := r.sdk.do(t, http.MethodPost, "/devices/", map[string]any{"unique_id": "00:1A:79:0A:BB:CC", "account": b}); status != http.StatusBadRequest ||
		!strings.Contains(string(data), "unique_id") {
		t.Fatalf("duplicate unique id: %d %s", status, data)
	}

	// The device logs in with the account's credentials as the device it
	// is: its activity fills ipaddr, first/last online, firmware, OS.
	status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": r.prov, "login": "box-owner", "password_md5": pin("test_password"),
		"device": map[string]any{"unique_id": "00:1A:79:0A:BB:CC", "class": "stb", "firmware": "4.2.1", "os": "Android 11"},
	})
	if status != http.StatusOK {
		t.Fatalf("login: %d %s", status, body)
	}
	if got := num(decodeNumbers(t, body)["device_id"]); got != dev {
		t.Fatalf("the registered device logged in as device %d, want %d", got, dev)
	}
	d = r.sdk.object(t, http.MethodGet, fmt.Sprintf("/devices/%d", dev), nil, sdkDevice)
	if d["ipaddr"] != "127.0.0.1" || d["last_fw_ver"] != "4.2.1" || d["operation_system"] != "Android 11" ||
		d["first_online"] == nil || d["last_online"] == nil {
		t.Fatalf("after login: %v", d)
	}
	if _, err := parseDateTime(d["last_online"].(string)); err != nil {
		t.Fatalf("last_online: %v", err)
	}
	acc := r.sdk.object(t, http.MethodGet, fmt.Sprintf("/accounts/%d", a), nil, sdkAccount)
	if acc["last_online"] == nil {
		t.Fatalf("account last_online after its device logged in: %v", acc)
	}

	// The SDK's update: the whole object back with a change; read-only keys
	// are ignored.
	d["comment"] = "bedroom"
	d["use_nat"] = true
	u := r.sdk.object(t, http.MethodPut, fmt.Sprintf("/devices/%d", dev), d, sdkDevice)
	if u["comment"] != "bedroom" || u["use_nat"] != true || u["last_fw_ver"] != "4.2.1" {
		t.Fatalf("updated %v", u)
	}
	// Moving it to another account of the provider keeps its id.
	u["account"] = b
	m := r.sdk.object(t, http.MethodPut, fmt.Sprintf("/devices/%d", dev), u, sdkDevice)
	if num(m["account"]) != b || num(m["id"]) != dev || m["last_fw_ver"] != "4.2.1" {
		t.Fatalf("moved %v", m)
	}

	// Filters of TmsDevice.get_list (and mac), each narrowing the list.
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50", sdkDevice, dev, dev2)
	wantOnly(t, r.sdk, fmt.Sprintf("/devices/?start=0&limit=50&account=%d", b), sdkDevice, dev, dev2)
	wantOnly(t, r.sdk, fmt.Sprintf("/devices/?start=0&limit=50&provider=%d", r.prov), sdkDevice, dev, dev2)
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50&unique_id=00:1a:79:00:00:ff", sdkDevice, dev2)
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50&remote_custom_field=crm-2", sdkDevice, dev2)
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50&mac=00-1A-79-0A-BB-CC", sdkDevice, dev)
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50&quick_search=001a.790a.bbcc", sdkDevice, dev)
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50&quick_search=bedroom", sdkDevice, dev)
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50&sort=-id", sdkDevice, dev2, dev)
	r.sdk.object(t, http.MethodPut, fmt.Sprintf("/devices/%d", dev2), map[string]any{"device_type": r.deviceType}, sdkDevice)
	wantOnly(t, r.sdk, fmt.Sprintf("/devices/?start=0&limit=50&device_type=%d", r.deviceType), sdkDevice, dev2)
	if status, data := r.sdk.do(t, http.MethodPut, fmt.Sprintf("/devices/%d", dev2), map[string]any{"device_type": r.deviceType + 100}); status != http.StatusBadRequest ||
		!strings.Contains(string(data), "device_type") {
		t.Fatalf("an unknown device type: %d %s", status, data)
	}
	// A device type devices have cannot be deleted.
	if status, data := r.super.do(t, http.MethodDelete, fmt.Sprintf("/device_types/%d", r.deviceType), nil); status != http.StatusConflict ||
		!strings.Contains(string(data), "device") {
		t.Fatalf("deleting a device type in use: %d %s", status, data)
	}
	r.sdk.unknownFilter(t, "/devices/")

	// Delete unbinds.
	if status, data := r.sdk.do(t, http.MethodDelete, fmt.Sprintf("/devices/%d", dev2), nil); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, data)
	}
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50", sdkDevice, dev)
}

func TestSDKDeviceLimitCountsRegisteredDevices(t *testing.T) {
	r := newSDKRig(t)
	a := r.sdk.object(t, http.MethodPost, "/accounts/", map[string]any{"login": "one-box", "fullname": "One Box", "pin_md5": pin("p"),
		"devices_per_account_limit": 1}, sdkAccount)
	r.sdk.object(t, http.MethodPost, "/devices/", map[string]any{"unique_id": "stb-1", "account": a["id"]}, sdkDevice)
	before := head(t, r.env)
	status, data := r.sdk.do(t, http.MethodPost, "/devices/", map[string]any{"unique_id": "stb-2", "account": a["id"]})
	if status != http.StatusBadRequest || !strings.Contains(string(data), `"account"`) {
		t.Fatalf("a second device over the limit: %d %s", status, data)
	}
	if head(t, r.env) != before {
		t.Fatal("a refused registration appended events")
	}
	// The device limit refuses a device login too: the registered one
	// holds the only place.
	status, data = r.env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": r.prov, "login": "one-box", "password_md5": pin("p"), "device": map[string]any{"unique_id": "phone-9", "class": "phone"},
	})
	if status != http.StatusForbidden || !strings.Contains(string(data), "device_limit") {
		t.Fatalf("login over the limit: %d %s", status, data)
	}
}

func TestSDKDeviceSubscriptions(t *testing.T) {
	r := newSDKRig(t)
	// The device logs in to an account without a subscription: no
	// services, until a device subscription gives it the tariff.
	a := num(r.newAccount(t, "device-subscriber", true)["id"])
	login := func() map[string]any {
		status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
			"provider": r.prov, "login": "device-subscriber", "password_md5": pin("test_password"),
			"device": map[string]any{"unique_id": "tv-1", "class": "tv"},
		})
		if status != http.StatusOK {
			t.Fatalf("login: %d %s", status, body)
		}
		return decodeNumbers(t, body)
	}
	if l := login(); l["services_available"] != false {
		t.Fatalf("before any subscription: %v", l)
	}
	dev := num(login()["device_id"])
	other := bindDevice(t, r.env, a, "phone-2")
	start := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05+0000")
	s := r.sdk.object(t, http.MethodPost, "/device_subscriptions/", map[string]any{
		"device": dev, "start": start, "tarif": r.tariff, "id": nil, "stop": nil, "time_shift_depth": nil,
	}, sdkDeviceSubscription)
	sid := num(s["id"])
	if l := login(); l["services_available"] != true {
		t.Fatalf("with a device subscription: %v", l)
	}
	// It is not an account subscription, and gives the other device nothing.
	wantOnly(t, r.sdk, "/account_subscriptions/?start=0&limit=50", sdkAccountSubscription)
	if status, _ := r.sdk.do(t, http.MethodGet, fmt.Sprintf("/account_subscriptions/%d", sid), nil); status != http.StatusNotFound {
		t.Fatalf("a device subscription read as an account subscription: %d", status)
	}
	acc := r.sdk.object(t, http.MethodGet, fmt.Sprintf("/accounts/%d", a), nil, sdkAccount)
	if acc["services_available"] != false {
		t.Fatalf("the account has services through one device's subscription: %v", acc)
	}
	s["time_shift_depth"] = 48
	if u := r.sdk.object(t, http.MethodPut, fmt.Sprintf("/device_subscriptions/%d", sid), s, sdkDeviceSubscription); num(u["time_shift_depth"]) != 48 {
		t.Fatalf("updated %v", u)
	}
	s2 := num(r.sdk.object(t, http.MethodPost, "/device_subscriptions/", map[string]any{"device": other, "start": start, "tarif": r.tariff2}, sdkDeviceSubscription)["id"])
	wantOnly(t, r.sdk, "/device_subscriptions/?start=0&limit=50", sdkDeviceSubscription, sid, s2)
	wantOnly(t, r.sdk, fmt.Sprintf("/device_subscriptions/?start=0&limit=50&device=%d", dev), sdkDeviceSubscription, sid)
	wantOnly(t, r.sdk, fmt.Sprintf("/device_subscriptions/?start=0&limit=50&tarif=%d", r.tariff2), sdkDeviceSubscription, s2)
	wantOnly(t, r.sdk, fmt.Sprintf("/device_subscriptions/?start=0&limit=50&quick_search=%d", other), sdkDeviceSubscription, s2)
	r.sdk.unknownFilter(t, "/device_subscriptions/")
	if status, data := r.sdk.do(t, http.MethodDelete, fmt.Sprintf("/device_subscriptions/%d", sid), nil); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, data)
	}
	if l := login(); l["services_available"] != false {
		t.Fatalf("after the device subscription was deleted: %v", l)
	}
}

func TestSDKAccountNetworks(t *testing.T) {
	r := newSDKRig(t)
	a := num(r.newAccount(t, "office", true)["id"])
	b := num(r.newAccount(t, "branch", true)["id"])
	n := r.sdk.object(t, http.MethodPost, "/account_network/", map[string]any{"network": "127.0.0.0/8", "account": a, "id": nil, "description": nil}, sdkAccountNetwork)
	nid := num(n["id"])
	// Not a network, host bits set, an overlap: 400 naming network, nothing appended.
	before := head(t, r.env)
	for _, bad := range []string{"10.0.0.0/33", "10.1.2.3/16", "127.1.0.0/16", "not a network"} {
		status, data := r.sdk.do(t, http.MethodPost, "/account_network/", map[string]any{"network": bad, "account": b})
		if status != http.StatusBadRequest || !strings.Contains(string(data), `"network"`) {
			t.Errorf("network %q: %d %s", bad, status, data)
		}
	}
	if head(t, r.env) != before {
		t.Fatal("refused networks appended events")
	}
	n2 := num(r.sdk.object(t, http.MethodPost, "/account_network/", map[string]any{"network": "2001:db8::/48", "account": b, "description": "v6"}, sdkAccountNetwork)["id"])

	// A device logging in from inside a network, without credentials,
	// is authorised as that network's account.
	status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": r.prov, "device": map[string]any{"unique_id": "lobby-tv", "class": "tv"},
	})
	if status != http.StatusOK || num(decodeNumbers(t, body)["account_id"]) != a {
		t.Fatalf("login by network: %d %s", status, body)
	}
	// Another provider's devices are not.
	status, body = r.env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": r.other, "device": map[string]any{"unique_id": "lobby-tv", "class": "tv"},
	})
	if status != http.StatusUnauthorized {
		t.Fatalf("login by network of another provider: %d %s", status, body)
	}

	n["description"] = "head office"
	if u := r.sdk.object(t, http.MethodPut, fmt.Sprintf("/account_network/%d", nid), n, sdkAccountNetwork); u["description"] != "head office" {
		t.Fatalf("updated %v", u)
	}
	wantOnly(t, r.sdk, "/account_network/?start=0&limit=50", sdkAccountNetwork, nid, n2)
	wantOnly(t, r.sdk, fmt.Sprintf("/account_network/?start=0&limit=50&account=%d", b), sdkAccountNetwork, n2)
	wantOnly(t, r.sdk, "/account_network/?start=0&limit=50&quick_search=2001:db8::7", sdkAccountNetwork, n2)
	wantOnly(t, r.sdk, "/account_network/?start=0&limit=50&quick_search=head", sdkAccountNetwork, nid)
	r.sdk.unknownFilter(t, "/account_network/")
	if status, data := r.sdk.do(t, http.MethodDelete, fmt.Sprintf("/account_network/%d", nid), nil); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, data)
	}
	status, body = r.env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": r.prov, "device": map[string]any{"unique_id": "lobby-tv-2", "class": "tv"},
	})
	if status != http.StatusUnauthorized {
		t.Fatalf("login by a deleted network: %d %s", status, body)
	}
	// Deleting an account removes its networks.
	r.sdk.do(t, http.MethodDelete, fmt.Sprintf("/accounts/%d", b), nil)
	wantOnly(t, r.sdk, "/account_network/?start=0&limit=50", sdkAccountNetwork)
}

// TestSDKScope: a provider's admin sees nothing of another provider's
// devices, subscriptions and networks, and cannot write them.
func TestSDKScope(t *testing.T) {
	r := newSDKRig(t)
	theirs := num(r.super.object(t, http.MethodPost, "/accounts/", map[string]any{"login": "theirs", "fullname": "T", "pin_md5": pin("x"), "provider": r.other}, sdkAccount)["id"])
	dev := num(r.super.object(t, http.MethodPost, "/devices/", map[string]any{"unique_id": "their-box", "account": theirs}, sdkDevice)["id"])
	net := num(r.super.object(t, http.MethodPost, "/account_network/", map[string]any{"network": "10.9.0.0/16", "account": theirs}, sdkAccountNetwork)["id"])
	before := head(t, r.env)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, fmt.Sprintf("/devices/%d", dev)},
		{http.MethodPut, fmt.Sprintf("/devices/%d", dev)},
		{http.MethodDelete, fmt.Sprintf("/devices/%d", dev)},
		{http.MethodGet, fmt.Sprintf("/account_network/%d", net)},
		{http.MethodPut, fmt.Sprintf("/account_network/%d", net)},
		{http.MethodDelete, fmt.Sprintf("/account_network/%d", net)},
	} {
		if status, data := r.sdk.do(t, c.method, c.path, map[string]any{"comment": "x", "description": "x"}); status != http.StatusForbidden {
			t.Errorf("%s %s: %d %s, want 403", c.method, c.path, status, data)
		}
	}
	for _, body := range []map[string]any{{"unique_id": "x", "account": theirs}} {
		if status, _ := r.sdk.do(t, http.MethodPost, "/devices/", body); status != http.StatusForbidden {
			t.Errorf("register a device for another provider's account: %d", status)
		}
	}
	if status, _ := r.sdk.do(t, http.MethodPost, "/account_network/", map[string]any{"network": "10.8.0.0/16", "account": theirs}); status != http.StatusForbidden {
		t.Errorf("a network for another provider's account: %d", status)
	}
	if head(t, r.env) != before {
		t.Fatal("refused writes appended events")
	}
	wantOnly(t, r.sdk, "/devices/?start=0&limit=50", sdkDevice)
	wantOnly(t, r.sdk, "/account_network/?start=0&limit=50", sdkAccountNetwork)
}

// TestLenientClients: what other real clients send works as the SDK's
// requests do: Accept: */* (curl, PHP), credentials in the URL (turned
// into Basic authentication by the client), numeric strings and 0/1 for
// booleans, read-only keys on create.
func TestLenientClients(t *testing.T) {
	r := newSDKRig(t)
	u, err := url.Parse(r.env.URL + "/api/provider/accounts/")
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(r.sdk.login, r.sdk.pass)
	body := `{"login":"curl-user","fullname":"Curl User","pin_md5":"` + pin("p") + `","enabled":"1","devices_per_account_limit":"2",` +
		`"region_tag":"` + fmt.Sprint(r.region) + `","id":null,"created":"yesterday","updated":0,"last_online":null}`
	req, err := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "*/*")
	req.Header.Set("Content-Type", "application/json; charset=UTF-8")
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create with URL credentials and Accept */*: %d %s", resp.StatusCode, data)
	}
	a := decodeNumbers(t, data)
	assertShape(t, "lenient create", a, sdkAccount)
	if a["enabled"] != true || num(a["devices_per_account_limit"]) != 2 || num(a["region_tag"]) != r.region || num(a["provider"]) != r.prov {
		t.Fatalf("created %v", a)
	}
}

package httpapi_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app/query"
	"tvsm/internal/platform/throttle"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// Black-box tests of the Device API over real HTTP: a node with the
// embedded store, set up through the Admin and Provider APIs.

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// devRig is a node with a provider, a tariff with channels and an enabled
// account subscribed to it.
type devRig struct {
	env      *nodetest.Env
	provider int64
	tariff   int64
	account  int64
	login    string
	channels []int64 // by creation: numbers 30, 10, 20
	category int64
}

const devPassword = "open sesame"

func newDevRig(t *testing.T, o nodetest.Options) *devRig {
	t.Helper()
	r := &devRig{env: nodetest.StartWith(t, o), login: "box-owner"}
	r.provider = r.create(t, "/api/admin/providers", map[string]any{"name": "Devices Inc"})
	r.category = r.create(t, "/api/admin/categories", map[string]any{"name": "News"})
	for _, n := range []int{30, 10, 20} {
		r.channels = append(r.channels, r.create(t, "/api/admin/channels", map[string]any{
			"name": fmt.Sprintf("Channel %d", n), "number": n, "logo_url": fmt.Sprintf("https://logo/%d.png", n), "categories": []int64{r.category},
		}))
	}
	r.tariff = r.create(t, "/api/admin/tariffs", map[string]any{"provider": r.provider, "name": "Basic", "channels": r.channels[:2]})
	r.account = r.newAccount(t, r.login, nil)
	r.subscribe(t, r.account, r.tariff, "2020-01-01T00:00:00Z")
	return r
}

// create posts body as the superadmin and returns the new id.
func (r *devRig) create(t *testing.T, path string, body map[string]any) int64 {
	t.Helper()
	status, resp := r.env.Super(t, http.MethodPost, path, body)
	if status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, status, resp)
	}
	return decodeObj(t, resp).id(t)
}

func (r *devRig) newAccount(t *testing.T, login string, limit any) int64 {
	t.Helper()
	return r.create(t, "/api/provider/accounts", map[string]any{
		"login": login, "pin_md5": md5hex(devPassword), "fullname": "Owner of " + login, "provider": r.provider,
		"enabled": true, "devices_per_account_limit": limit,
	})
}

func (r *devRig) subscribe(t *testing.T, account, tariff int64, start string) {
	t.Helper()
	r.create(t, "/api/provider/account_subscriptions", map[string]any{"account": account, "tarif": tariff, "start": start})
}

func (r *devRig) super(t *testing.T, method, path string, body any) {
	t.Helper()
	if status, resp := r.env.Super(t, method, path, body); status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, status, resp)
	}
}

// loginBody is a login of device uid of the rig's account with password.
func (r *devRig) loginBody(login, uid, password string) map[string]any {
	return map[string]any{
		"provider": r.provider, "login": login, "password_md5": md5hex(password),
		"device": map[string]any{"unique_id": uid, "class": "stb", "model": "MAG-524"},
	}
}

// devLogin is a successful login's answer.
type devLogin struct {
	Token             string `json:"token"`
	AccountID         int64  `json:"account_id"`
	DeviceID          int64  `json:"device_id"`
	ServicesAvailable bool   `json:"services_available"`
	Message           string `json:"message"`
	Expires           string `json:"expires"`
}

func (r *devRig) loginOK(t *testing.T, login, uid string) devLogin {
	t.Helper()
	status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", r.loginBody(login, uid, devPassword))
	if status != http.StatusOK {
		t.Fatalf("login of %s/%s: %d %s", login, uid, status, body)
	}
	var l devLogin
	if err := json.Unmarshal(body, &l); err != nil || l.Token == "" || l.DeviceID <= 0 {
		t.Fatalf("login answer %s (%v)", body, err)
	}
	return l
}

// deviceDo sends a request with a device token in the Authorization header.
func (r *devRig) deviceDo(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	return r.env.DoHeader(t, method, path, "", "", body, http.Header{"Authorization": {"Bearer " + token}})
}

// devFails checks that a response is the error body with status and code.
func devFails(t *testing.T, status int, body []byte, wantStatus int, wantCode string) apiError {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d: %s", status, wantStatus, body)
	}
	var e apiError
	if err := json.Unmarshal(body, &e); err != nil || e.Status != wantStatus || e.Code != wantCode {
		t.Fatalf("error body %s (%v), want statusCode %d error %q", body, err, wantStatus, wantCode)
	}
	return e
}

// unchanged runs f and checks that it appended nothing.
func unchanged(t *testing.T, env *nodetest.Env, what string, f func()) {
	t.Helper()
	before := head(t, env)
	f()
	if after := head(t, env); after != before {
		t.Fatalf("%s appended events (head %v → %v)", what, before, after)
	}
}

func TestDeviceLogin(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	first := r.loginOK(t, r.login, "00:1A:79:00:00:01")
	if first.AccountID != r.account || !first.ServicesAvailable || first.Message != "" {
		t.Fatalf("login: %+v", first)
	}
	if exp, err := parseDateTime(first.Expires); err != nil || exp.Before(time.Now().Add(29*24*time.Hour)) {
		t.Fatalf("expires %q (%v), want about 30 days ahead", first.Expires, err)
	}
	// The device is bound, as the Provider API shows.
	status, body := r.env.Super(t, http.MethodGet, fmt.Sprintf("/api/provider/devices/%d", first.DeviceID), nil)
	if status != http.StatusOK || !strings.Contains(string(body), "00:1A:79:00:00:01") {
		t.Fatalf("bound device: %d %s", status, body)
	}

	// A re-login of the bound device appends nothing and gets its id.
	unchanged(t, r.env, "re-login", func() {
		again := r.loginOK(t, r.login, "00:1A:79:00:00:01")
		if again.DeviceID != first.DeviceID || again.Token == "" {
			t.Fatalf("re-login: %+v, first %+v", again, first)
		}
	})

	// Wrong password, unknown login, unknown provider: one answer for all.
	var causes []string
	unchanged(t, r.env, "failed logins", func() {
		for _, body := range []map[string]any{
			r.loginBody(r.login, "new-box", "wrong password"),
			r.loginBody("nobody", "new-box", devPassword),
			func() map[string]any {
				b := r.loginBody(r.login, "new-box", devPassword)
				b["provider"] = 999
				return b
			}(),
		} {
			status, resp := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", body)
			causes = append(causes, devFails(t, status, resp, http.StatusUnauthorized, "unauthorized").Cause)
		}
	})
	if causes[0] != causes[1] || causes[1] != causes[2] {
		t.Fatalf("401 causes differ, logins can be probed: %q", causes)
	}

	// Bad input: 400 naming each field, nothing appended.
	unchanged(t, r.env, "bad logins", func() {
		for _, c := range []struct {
			body   any
			fields []string
		}{
			// Neither login nor password_md5 asks for a login by network;
			// one without the other names the missing one.
			{map[string]any{}, []string{"provider", "device"}},
			{map[string]any{"provider": r.provider, "login": r.login, "device": map[string]any{"unique_id": "u", "class": "tv"}}, []string{"password_md5"}},
			{map[string]any{"provider": r.provider, "password_md5": md5hex(devPassword), "device": map[string]any{"unique_id": "u", "class": "tv"}}, []string{"login"}},
			{map[string]any{"provider": r.provider, "login": r.login, "password_md5": md5hex(devPassword),
				"device": map[string]any{"unique_id": "u", "class": "tv", "firmware": "fw\x00", "os": strings.Repeat("o", 129)}}, []string{"device.firmware", "device.os"}},
			{map[string]any{"provider": "x", "login": r.login, "password_md5": "abc", "device": map[string]any{"unique_id": "u", "class": "fridge"}},
				[]string{"provider", "password_md5", "device.class"}},
			{map[string]any{"provider": r.provider, "login": r.login, "password_md5": md5hex(devPassword), "device": map[string]any{"class": "tv", "model": strings.Repeat("m", 200)}},
				[]string{"device.unique_id"}},
			{map[string]any{"provider": r.provider, "login": r.login, "password_md5": md5hex(devPassword), "device": map[string]any{"unique_id": " padded ", "class": "tv", "model": strings.Repeat("m", 200)}},
				[]string{"device.unique_id", "device.model"}},
			{map[string]any{"provider": r.provider, "login": r.login, "password_md5": md5hex(devPassword), "device": "box"}, []string{"device"}},
		} {
			status, resp := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", c.body)
			e := devFails(t, status, resp, http.StatusBadRequest, "validation_failed")
			for _, f := range c.fields {
				e.field(t, f)
			}
		}
		status, resp := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", "[1,2]")
		devFails(t, status, resp, http.StatusBadRequest, "bad_request")
	})

	// Upper-case hex digests match too.
	b := r.loginBody(r.login, "00:1A:79:00:00:01", devPassword)
	b["password_md5"] = strings.ToUpper(md5hex(devPassword))
	if status, resp := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", b); status != http.StatusOK {
		t.Fatalf("upper-case digest: %d %s", status, resp)
	}
}

func TestDeviceLimit(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/providers/%d", r.provider), map[string]any{"devices_per_account_limit": 2})

	// The provider's limit: two devices, the third refused with the list.
	a := r.loginOK(t, r.login, "box-a")
	b := r.loginOK(t, r.login, "box-b")
	unchanged(t, r.env, "refused bind", func() {
		status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", r.loginBody(r.login, "box-c", devPassword))
		devFails(t, status, body, http.StatusForbidden, "device_limit")
		var got struct {
			Devices []struct {
				ID       int64  `json:"id"`
				UniqueID string `json:"unique_id"`
				Class    string `json:"class"`
				Model    string `json:"model"`
			} `json:"devices"`
		}
		if err := json.Unmarshal(body, &got); err != nil || len(got.Devices) != 2 {
			t.Fatalf("device list of the 403: %s (%v)", body, err)
		}
		d := got.Devices[0]
		if d.ID != a.DeviceID || d.UniqueID != "box-a" || d.Class != "stb" || d.Model != "MAG-524" || got.Devices[1].ID != b.DeviceID {
			t.Fatalf("devices %+v, want box-a then box-b", got.Devices)
		}
	})
	// Nothing was evicted: both bound devices log in again.
	if again := r.loginOK(t, r.login, "box-a"); again.DeviceID != a.DeviceID {
		t.Fatalf("box-a re-login got device %d, want %d", again.DeviceID, a.DeviceID)
	}
	r.loginOK(t, r.login, "box-b")

	// The account's own limit wins over the provider's, both ways.
	r.newAccount(t, "roomy", 3)
	r.newAccount(t, "tight", 1)
	for _, uid := range []string{"r1", "r2", "r3"} {
		r.loginOK(t, "roomy", uid)
	}
	r.loginOK(t, "tight", "t1")
	status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", r.loginBody("tight", "t2", devPassword))
	devFails(t, status, body, http.StatusForbidden, "device_limit")

	// No limit on either: the node's default (100 unless configured).
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/providers/%d", r.provider), map[string]any{"devices_per_account_limit": nil})
	for i := range 6 {
		r.loginOK(t, r.login, fmt.Sprint("many-", i))
	}
}

// When neither the account nor its provider sets a limit, the node's
// default holds, for device logins and the Provider API's binds alike; a
// limit of the provider or the account lifts it.
func TestDefaultDeviceLimit(t *testing.T) {
	r := newDevRig(t, nodetest.Options{DefaultDeviceLimit: 2})
	r.loginOK(t, r.login, "d1")
	r.loginOK(t, r.login, "d2")
	unchanged(t, r.env, "bind over the default limit", func() {
		status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", r.loginBody(r.login, "d3", devPassword))
		devFails(t, status, body, http.StatusForbidden, "device_limit")
		status, body = r.env.Super(t, http.MethodPost, "/api/provider/devices", map[string]any{"account": r.account, "unique_id": "d3"})
		if e := devFails(t, status, body, http.StatusBadRequest, "validation_failed"); !strings.Contains(e.Fields["account"], "maximum of 2") {
			t.Fatalf("provider bind over the default: %s", body)
		}
	})
	// The account's own limit lifts the default.
	r.super(t, http.MethodPost, "/api/provider/accounts", map[string]any{"id": r.account, "devices_per_account_limit": 3})
	r.loginOK(t, r.login, "d3")
	// So does the provider's, for accounts without their own.
	r.newAccount(t, "second-owner", nil)
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/providers/%d", r.provider), map[string]any{"devices_per_account_limit": 4})
	for _, uid := range []string{"s1", "s2", "s3", "s4"} {
		r.loginOK(t, "second-owner", uid)
	}
	status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", r.loginBody("second-owner", "s5", devPassword))
	devFails(t, status, body, http.StatusForbidden, "device_limit")
}

// A unique id bound to another account moves: bound to the new account,
// unbound from the old one, whose token for it stops working.
func TestDeviceMovesBetweenAccounts(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	other := r.newAccount(t, "new-owner", nil)
	r.subscribe(t, other, r.tariff, "2021-01-01T00:00:00Z")
	old := r.loginOK(t, r.login, "handed-over")
	moved := r.loginOK(t, "new-owner", "handed-over")
	if moved.AccountID != other || moved.DeviceID == old.DeviceID {
		t.Fatalf("moved device: %+v (old %+v)", moved, old)
	}
	status, body := r.env.Super(t, http.MethodGet, "/api/provider/devices?unique_id=handed-over", nil)
	if status != http.StatusOK {
		t.Fatalf("device list: %d %s", status, body)
	}
	if list := decodeObj(t, body).list(t); len(list) != 1 || list[0].int(t, "account") != other {
		t.Fatalf("devices with the unique id: %s", body)
	}
	status, body = r.deviceDo(t, http.MethodGet, "/api/device/channels", old.Token, nil)
	devFails(t, status, body, http.StatusUnauthorized, "unauthorized")
	if status, body = r.deviceDo(t, http.MethodGet, "/api/device/channels", moved.Token, nil); status != http.StatusOK {
		t.Fatalf("token of the moved device: %d %s", status, body)
	}
}

// A unique id is scoped to its provider: a login to provider A with the
// unique id of a device bound under provider B binds a device of A and
// leaves B's device, its token and its admin's view, as they were.
func TestDeviceOfAnotherProviderIsNotTakenOver(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	theirs := r.loginOK(t, r.login, "shared-serial")
	intruderProvider := r.create(t, "/api/admin/providers", map[string]any{"name": "Intruder ISP"})
	r.create(t, "/api/provider/accounts", map[string]any{
		"login": "intruder", "pin_md5": md5hex(devPassword), "fullname": "Intruder", "provider": intruderProvider,
	})
	status, body := r.env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
		"provider": intruderProvider, "login": "intruder", "password_md5": md5hex(devPassword),
		"device": map[string]any{"unique_id": "shared-serial", "class": "stb"},
	})
	if status != http.StatusOK {
		t.Fatalf("login to the other provider: %d %s", status, body)
	}
	var ours devLogin
	if err := json.Unmarshal(body, &ours); err != nil || ours.DeviceID == theirs.DeviceID {
		t.Fatalf("the other provider's login got device %d, the first provider's is %d (%v)", ours.DeviceID, theirs.DeviceID, err)
	}
	if status, body := r.deviceDo(t, http.MethodGet, "/api/device/channels", theirs.Token, nil); status != http.StatusOK {
		t.Fatalf("the first provider's device token after the other login: %d %s", status, body)
	}
	status, body = r.env.Super(t, http.MethodGet, fmt.Sprintf("/api/provider/devices?provider=%d&unique_id=shared-serial", r.provider), nil)
	if list := decodeObj(t, body).list(t); status != http.StatusOK || len(list) != 1 || list[0].id(t) != theirs.DeviceID || list[0].int(t, "account") != r.account {
		t.Fatalf("the first provider's devices with the unique id: %d %s", status, body)
	}
}

func TestDeviceLoginThrottled(t *testing.T) {
	clock := testutil.NewClock(time.Now().UTC())
	r := newDevRig(t, nodetest.Options{Clock: clock.Now,
		DeviceLogins: throttle.GuardOptions{LoginLimit: 3, AddressLimit: 5},
		AdminLogins:  throttle.GuardOptions{LoginLimit: 2, AddressLimit: 100}})
	login := func(login, password string) (int, []byte, http.Header) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, r.env.URL+"/api/device/login",
			strings.NewReader(mustJSON(t, r.loginBody(login, "box", password))))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := r.env.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, []byte(readAll(t, resp)), resp.Header
	}
	for range 3 {
		if status, body, _ := login(r.login, "guess"); status != http.StatusUnauthorized {
			t.Fatalf("wrong password: %d %s", status, body)
		}
	}
	// The login is locked, even with the right password, for a minute.
	status, body, h := login(r.login, devPassword)
	devFails(t, status, body, http.StatusTooManyRequests, "too_many_requests")
	if !strings.Contains(string(body), "too many failed logins") {
		t.Errorf("the refusal for failures says %s", body)
	}
	if h.Get("Retry-After") != "60" {
		t.Fatalf("Retry-After %q, want 60", h.Get("Retry-After"))
	}
	// Other logins from the address still work until the address has 5.
	for range 2 {
		if status, body, _ := login("someone-else", "guess"); status != http.StatusUnauthorized {
			t.Fatalf("other login: %d %s", status, body)
		}
	}
	status, body, _ = login("third-login", devPassword)
	devFails(t, status, body, http.StatusTooManyRequests, "too_many_requests")

	clock.Advance(61 * time.Second)
	if status, body, _ := login(r.login, devPassword); status != http.StatusOK {
		t.Fatalf("after the window: %d %s", status, body)
	}

	// Basic auth of the Provider and Admin APIs: the same, per admin login.
	for range 2 {
		if status, _ := r.env.Do(t, http.MethodGet, "/api/provider/accounts", r.env.SuperLogin, "wrong", nil); status != http.StatusUnauthorized {
			t.Fatalf("wrong admin password: %d", status)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, r.env.URL+"/api/admin/providers", nil)
	req.SetBasicAuth(r.env.SuperLogin, r.env.SuperPassword)
	resp, err := r.env.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	basicBody := readAll(t, resp)
	resp.Body.Close()
	devFails(t, resp.StatusCode, []byte(basicBody), http.StatusTooManyRequests, "too_many_requests")
	if resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("Basic auth Retry-After %q", resp.Header.Get("Retry-After"))
	}
	clock.Advance(time.Minute)
	if status, body := r.env.Super(t, http.MethodGet, "/api/admin/providers", nil); status != http.StatusOK {
		t.Fatalf("admin after the window: %d %s", status, body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// channelsOf returns the ids of GET /api/device/channels.
func (r *devRig) channelsOf(t *testing.T, token string) ([]int64, map[string]any) {
	t.Helper()
	status, body := r.deviceDo(t, http.MethodGet, "/api/device/channels", token, nil)
	if status != http.StatusOK {
		t.Fatalf("channels: %d %s", status, body)
	}
	var got struct {
		Channels []struct {
			ID         int64   `json:"id"`
			Name       string  `json:"name"`
			Number     int     `json:"number"`
			LogoURL    string  `json:"logo_url"`
			Categories []int64 `json:"categories"`
		} `json:"channels"`
		Categories map[string]any `json:"categories"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, c := range got.Channels {
		if c.Name == "" || c.LogoURL == "" || len(c.Categories) != 1 {
			t.Fatalf("channel %+v lacks fields", c)
		}
		ids = append(ids, c.ID)
	}
	return ids, got.Categories
}

func TestDeviceChannelsAndServices(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	l := r.loginOK(t, r.login, "tv-1")
	ids, cats := r.channelsOf(t, l.Token)
	// Tariff Basic has channels numbered 30 and 10: sorted by number.
	if want := []int64{r.channels[1], r.channels[0]}; !slices.Equal(ids, want) {
		t.Fatalf("channels %v, want %v", ids, want)
	}
	if cats[fmt.Sprint(r.category)] != "News" {
		t.Fatalf("categories %v", cats)
	}
	// A second active tariff adds its channels once (union).
	extra := r.create(t, "/api/admin/tariffs", map[string]any{"provider": r.provider, "name": "Extra", "channels": []int64{r.channels[2], r.channels[0]}})
	r.subscribe(t, r.account, extra, "2020-06-01T00:00:00Z")
	ids, _ = r.channelsOf(t, l.Token)
	if want := []int64{r.channels[1], r.channels[2], r.channels[0]}; !slices.Equal(ids, want) {
		t.Fatalf("channels of two tariffs %v, want %v", ids, want)
	}
	// A disabled channel is not offered; enabled again, it is.
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/channels/%d", r.channels[1]), map[string]any{"enabled": false})
	ids, _ = r.channelsOf(t, l.Token)
	if want := []int64{r.channels[2], r.channels[0]}; !slices.Equal(ids, want) {
		t.Fatalf("channels with one disabled %v, want %v", ids, want)
	}
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/channels/%d", r.channels[1]), map[string]any{"enabled": true})
	// A deleted channel is left out; a disabled tariff gives no channels.
	r.super(t, http.MethodDelete, fmt.Sprintf("/api/admin/channels/%d", r.channels[2]), nil)
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/tariffs/%d", r.tariff), map[string]any{"enabled": false})
	ids, _ = r.channelsOf(t, l.Token)
	if want := []int64{r.channels[0]}; !slices.Equal(ids, want) {
		t.Fatalf("channels after a delete and a disabled tariff %v, want %v", ids, want)
	}
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/tariffs/%d", extra), map[string]any{"enabled": false})
	status, body := r.deviceDo(t, http.MethodGet, "/api/device/channels", l.Token, nil)
	if e := devFails(t, status, body, http.StatusForbidden, "no_services"); e.Cause != query.MsgNoSubscription {
		t.Fatalf("only disabled tariffs: cause %q", e.Cause)
	}
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/tariffs/%d", extra), map[string]any{"enabled": true})

	// Disabled provider: logs in, without services.
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/providers/%d", r.provider), map[string]any{"enabled": false})
	if off := r.loginOK(t, r.login, "tv-1"); off.ServicesAvailable || off.Message != query.MsgProviderDisabled {
		t.Fatalf("disabled provider login: %+v", off)
	}
	r.super(t, http.MethodPut, fmt.Sprintf("/api/admin/providers/%d", r.provider), map[string]any{"enabled": true})

	// Disabled account: logs in, without services; channels 403.
	r.super(t, http.MethodPut, fmt.Sprintf("/api/provider/accounts/%d", r.account), map[string]any{"enabled": false})
	off := r.loginOK(t, r.login, "tv-1")
	if off.ServicesAvailable || off.Message != query.MsgAccountDisabled {
		t.Fatalf("disabled account login: %+v", off)
	}
	status, body = r.deviceDo(t, http.MethodGet, "/api/device/channels", off.Token, nil)
	if e := devFails(t, status, body, http.StatusForbidden, "no_services"); e.Cause != query.MsgAccountDisabled {
		t.Fatalf("no_services cause %q", e.Cause)
	}

	// No subscription (one only in the future): the same.
	later := r.newAccount(t, "later", nil)
	r.subscribe(t, later, r.tariff, "2099-01-01T00:00:00Z")
	none := r.loginOK(t, "later", "tv-2")
	if none.ServicesAvailable || none.Message != query.MsgNoSubscription {
		t.Fatalf("no subscription login: %+v", none)
	}
	status, body = r.deviceDo(t, http.MethodGet, "/api/device/channels", none.Token, nil)
	devFails(t, status, body, http.StatusForbidden, "no_services")
}

func TestDeviceViewing(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	l := r.loginOK(t, r.login, "viewer")
	start := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	session := func(mode string, seconds int) map[string]any {
		return map[string]any{"channel_id": r.channels[0], "mode": mode, "start": start.Format(time.RFC3339), "seconds": seconds}
	}
	body := map[string]any{"sessions": []any{session("live", 600), session("dvr", 60)}}
	status, resp := r.deviceDo(t, http.MethodPost, "/api/device/viewing", l.Token, body)
	if status != http.StatusNoContent {
		t.Fatalf("viewing: %d %s", status, resp)
	}
	recs, err := r.env.Store.ReadStream(context.Background(), domain.DeviceStream(l.DeviceID), eventstore.Start, 0)
	// The stream holds the device's login, then its report.
	if err != nil || len(recs) != 2 || recs[0].Type != domain.DeviceLoggedInType || recs[1].Type != domain.ViewingReportedType {
		t.Fatalf("device stream: %d events, %v", len(recs), err)
	}
	recs = recs[1:]
	e, err := r.env.Node.Registry.Decode(recs[0].Type, recs[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	v := e.(domain.ViewingReported)
	if v.DeviceID != l.DeviceID || v.Account != r.account || v.Provider != r.provider || v.Class != domain.DeviceSTB ||
		len(v.Sessions) != 2 || v.Sessions[1].Mode != domain.ViewingDVR || !v.Sessions[0].Start.Equal(start) || v.Sessions[0].Seconds != 600 {
		t.Fatalf("stored %+v", v)
	}

	// A retry under the same Idempotency-Key is stored once.
	h := http.Header{"Authorization": {"Bearer " + l.Token}, "Idempotency-Key": {"batch-7"}}
	for range 2 {
		if status, resp := r.env.DoHeader(t, http.MethodPost, "/api/device/viewing", "", "", body, h); status != http.StatusNoContent {
			t.Fatalf("keyed viewing: %d %s", status, resp)
		}
	}
	recs, _ = r.env.Store.ReadStream(context.Background(), domain.DeviceStream(l.DeviceID), eventstore.Start, 0)
	if len(recs) != 2 { // the login and the first report; the keyed one has a stream of its own
		t.Fatalf("%d events in the device's stream after a keyed report, want 2", len(recs))
	}
	recs, _ = r.env.Store.ReadStream(context.Background(), domain.DeviceViewingStream(l.DeviceID, "batch-7"), eventstore.Start, 0)
	if len(recs) != 1 || recs[0].Type != domain.ViewingReportedType {
		t.Fatalf("%d events in the keyed report's stream after a retry, want 1", len(recs))
	}

	future := session("live", 60)
	future["start"] = time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	running := session("live", 86400)
	unchanged(t, r.env, "bad viewing", func() {
		for _, c := range []struct {
			body   any
			fields []string
		}{
			{map[string]any{}, []string{"sessions"}},
			{map[string]any{"sessions": "x"}, []string{"sessions"}},
			{map[string]any{"sessions": []any{session("live", 10), session("tv", 0), map[string]any{"channel_id": -3, "mode": "live", "start": "yesterday", "seconds": "x"}}},
				[]string{"sessions[1].mode", "sessions[1].seconds", "sessions[2].start", "sessions[2].seconds"}},
			{map[string]any{"sessions": []any{map[string]any{}}}, []string{"sessions[0].channel_id", "sessions[0].mode", "sessions[0].start", "sessions[0].seconds"}},
			{map[string]any{"sessions": []any{future, running, session("live", 86401)}}, []string{"sessions[0].start", "sessions[1].seconds", "sessions[2].seconds"}},
			{map[string]any{"sessions": []any{map[string]any{"channel_id": 0, "mode": "live", "start": start.Format(time.RFC3339), "seconds": 5}}}, []string{"sessions[0].channel_id"}},
			{map[string]any{"sessions": slices.Repeat([]any{session("live", 1)}, 1001)}, []string{"sessions"}},
		} {
			status, resp := r.deviceDo(t, http.MethodPost, "/api/device/viewing", l.Token, c.body)
			e := devFails(t, status, resp, http.StatusBadRequest, "validation_failed")
			for _, f := range c.fields {
				e.field(t, f)
			}
		}
	})
	// An empty report is fine and stores nothing.
	unchanged(t, r.env, "empty viewing", func() {
		if status, resp := r.deviceDo(t, http.MethodPost, "/api/device/viewing", l.Token, map[string]any{"sessions": []any{}}); status != http.StatusNoContent {
			t.Fatalf("empty viewing: %d %s", status, resp)
		}
	})
	// Without a token: 401.
	status, resp = r.env.Do(t, http.MethodPost, "/api/device/viewing", "", "", body)
	devFails(t, status, resp, http.StatusUnauthorized, "unauthorized")
}

// issueUpdate appends an `update` send straight to the store (as the
// provider command endpoint does) and waits for the read model to apply it.
func (r *devRig) issueUpdate(t *testing.T, sendID int64, recipients domain.Recipients, ids ...int64) {
	t.Helper()
	r.env.AppendEvent(t, domain.CommandStream(sendID), domain.CommandsIssued{
		SendID: sendID, Recipients: recipients, IDs: ids, IssuedAt: time.Now().UTC(),
		Commands: []domain.IssuedCommand{{Kind: domain.CommandUpdate, Object: json.RawMessage(`{"command":"update"}`)}},
	})
}

func (r *devRig) channelsStatus(t *testing.T, token string) int {
	t.Helper()
	status, _ := r.deviceDo(t, http.MethodGet, "/api/device/channels", token, nil)
	return status
}

func TestDeviceTokenRevoked(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	a := r.loginOK(t, r.login, "rev-a")
	b := r.loginOK(t, r.login, "rev-b")

	// `update` to one device: its token stops working, the other's not.
	r.issueUpdate(t, 501, domain.RecipientDevices, a.DeviceID)
	if got := r.channelsStatus(t, a.Token); got != http.StatusUnauthorized {
		t.Fatalf("token after update: %d, want 401", got)
	}
	if got := r.channelsStatus(t, b.Token); got != http.StatusOK {
		t.Fatalf("untargeted token: %d", got)
	}
	// Logging in again gives a token that works.
	a = r.loginOK(t, r.login, "rev-a")
	if got := r.channelsStatus(t, a.Token); got != http.StatusOK {
		t.Fatalf("token after re-login: %d", got)
	}

	// `update` to the account, then to the provider.
	r.issueUpdate(t, 502, domain.RecipientAccounts, r.account)
	if r.channelsStatus(t, a.Token) != http.StatusUnauthorized || r.channelsStatus(t, b.Token) != http.StatusUnauthorized {
		t.Fatal("tokens survived an update to their account")
	}
	a, b = r.loginOK(t, r.login, "rev-a"), r.loginOK(t, r.login, "rev-b")
	r.issueUpdate(t, 503, domain.RecipientProviders, r.provider)
	if r.channelsStatus(t, a.Token) != http.StatusUnauthorized {
		t.Fatal("a token survived an update to its provider")
	}

	// Unbinding (DELETE of the device) revokes too.
	a = r.loginOK(t, r.login, "rev-a")
	r.super(t, http.MethodDelete, fmt.Sprintf("/api/provider/devices/%d", a.DeviceID), nil)
	status, body := r.deviceDo(t, http.MethodGet, "/api/device/channels", a.Token, nil)
	devFails(t, status, body, http.StatusUnauthorized, "unauthorized")

	// Junk, a missing token and another scheme.
	for _, h := range []http.Header{{"Authorization": {"Bearer junk"}}, {}, {"Authorization": {"Basic cm9vdDpyb290"}}} {
		status, body := r.env.DoHeader(t, http.MethodGet, "/api/device/channels", "", "", nil, h)
		devFails(t, status, body, http.StatusUnauthorized, "unauthorized")
	}
}

func TestDeviceTokenExpires(t *testing.T) {
	clock := testutil.NewClock(time.Now().UTC())
	r := newDevRig(t, nodetest.Options{Clock: clock.Now, DeviceTokenTTL: time.Hour})
	l := r.loginOK(t, r.login, "short-lived")
	if got := r.channelsStatus(t, l.Token); got != http.StatusOK {
		t.Fatalf("fresh token: %d", got)
	}
	clock.Advance(time.Hour)
	if got := r.channelsStatus(t, l.Token); got != http.StatusUnauthorized {
		t.Fatalf("expired token: %d, want 401", got)
	}
}

func TestDeviceWebsocket(t *testing.T) {
	r := newDevRig(t, nodetest.Options{})
	l := r.loginOK(t, r.login, "ws-box")
	wsURL := "ws" + strings.TrimPrefix(r.env.URL, "http") + "/api/device/ws"
	hub := r.env.Node.Hub

	waitConnected := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for hub.Connected(l.DeviceID) != want {
			if time.Now().After(deadline) {
				t.Fatalf("device connected = %v, want %v", !want, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Bearer header.
	ws, resp, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Authorization": {"Bearer " + l.Token}})
	if err != nil {
		t.Fatalf("dial with Bearer: %v (%v)", err, resp)
	}
	waitConnected(true)
	if c, ok := hub.Lookup(l.DeviceID); !ok || c.Identity().Account != r.account || c.Identity().Provider != r.provider || c.Identity().Address == "" {
		t.Fatalf("connection identity %+v", c.Identity())
	}
	ws.Close()
	waitConnected(false)

	// ?token= in the query.
	ws, resp, err = websocket.DefaultDialer.Dial(wsURL+"?token="+l.Token, nil)
	if err != nil {
		t.Fatalf("dial with ?token=: %v (%v)", err, resp)
	}
	waitConnected(true)
	ws.Close()
	waitConnected(false)

	// A bad token: 401 with the JSON body, no upgrade.
	_, resp, err = websocket.DefaultDialer.Dial(wsURL+"?token=bad", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial with a bad token: %v, %+v", err, resp)
	}
	devFails(t, resp.StatusCode, []byte(readAll(t, resp)), http.StatusUnauthorized, "unauthorized")
	resp.Body.Close()
	if n := hub.Count(); n != 0 {
		t.Fatalf("%d connections after a refused upgrade", n)
	}
}

// A failed login, a quiet minute, then more wrong passwords from the same
// address: each must answer 401 and count, so the sixth failure within a
// window is refused. Once, the quiet minute left an empty entry in the
// limiter that the next failure read past its end: a 500, and failures from
// that address stopped counting.
func TestLoginThrottleAfterQuietWindow(t *testing.T) {
	clock := testutil.NewClock(time.Now().UTC())
	limits := throttle.GuardOptions{LoginLimit: 5, AddressLimit: 100}
	r := newDevRig(t, nodetest.Options{Clock: clock.Now, DeviceLogins: limits, AdminLogins: limits})
	attempts := map[string]func(password string) (int, []byte){
		"admin Basic": func(password string) (int, []byte) {
			return r.env.Do(t, http.MethodGet, "/api/admin/providers", r.env.SuperLogin, password, nil)
		},
		"device": func(password string) (int, []byte) {
			return r.env.Do(t, http.MethodPost, "/api/device/login", "", "", r.loginBody(r.login, "box", password))
		},
	}
	for name, attempt := range attempts {
		t.Run(name, func(t *testing.T) {
			if status, body := attempt("guess"); status != http.StatusUnauthorized {
				t.Fatalf("first wrong password: %d %s", status, body)
			}
			clock.Advance(61 * time.Second)
			for i := 1; i <= 5; i++ {
				if status, body := attempt("guess"); status != http.StatusUnauthorized {
					t.Fatalf("wrong password %d after the quiet minute: %d %s", i, status, body)
				}
			}
			status, body := attempt("guess")
			devFails(t, status, body, http.StatusTooManyRequests, "too_many_requests")
			clock.Advance(61 * time.Second)
		})
	}
}

package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

// Given an account created as TVIP's PHP and Python SDKs create one when no
// password is given ("pin_md5": ""), then it exists without a password: no
// device logs in to it with a login and any password, an update that sends
// "" again changes nothing, and once a password is set its devices log in.
// A create without the key at all is still refused, naming pin_md5.
func TestAccountWithoutPassword(t *testing.T) {
	env := nodetest.Start(t)
	provider := mustProvider(t, env, "TVIP users")
	body := accountBody(provider, "nopass")
	body["pin_md5"] = ""
	status, resp := env.Super(t, http.MethodPost, "/api/provider/accounts", body)
	if status != http.StatusOK {
		t.Fatalf("create with pin_md5 \"\": %d %s", status, resp)
	}
	account := decodeObj(t, resp).id(t)
	if !strings.Contains(string(resp), `"pin_md5":null`) {
		t.Errorf("the account shows its pin: %s", resp)
	}

	login := func(password string) int {
		t.Helper()
		status, resp := env.Do(t, http.MethodPost, "/api/device/login", "", "", map[string]any{
			"provider": provider, "login": "nopass", "password_md5": password,
			"device": map[string]any{"unique_id": "box-nopass", "class": "stb"},
		})
		if status != http.StatusOK && status != http.StatusUnauthorized && status != http.StatusBadRequest {
			t.Fatalf("device login: %d %s", status, resp)
		}
		return status
	}
	for _, password := range []string{pin("nopass"), strings.Repeat("0", 32), md5hex("")} {
		if got := login(password); got != http.StatusUnauthorized {
			t.Errorf("device login to an account without a password, password_md5 %s: %d, want 401", password, got)
		}
	}
	if got := login(""); got != http.StatusBadRequest {
		t.Errorf("device login with an empty password_md5: %d, want 400", got)
	}

	// The SDKs send "" again on every update: it changes nothing.
	path := fmt.Sprintf("/api/provider/accounts/%d", account)
	if status, resp := env.Super(t, http.MethodPut, path, map[string]any{"pin_md5": "", "fullname": "No Pass"}); status != http.StatusOK {
		t.Fatalf("update with pin_md5 \"\": %d %s", status, resp)
	}
	if got := login(pin("nopass")); got != http.StatusUnauthorized {
		t.Errorf("after an update with pin_md5 \"\": device login %d, want 401", got)
	}
	if status, resp := env.Super(t, http.MethodPut, path, map[string]any{"pin_md5": pin("nopass")}); status != http.StatusOK {
		t.Fatalf("set a password: %d %s", status, resp)
	}
	if got := login(pin("nopass")); got != http.StatusOK {
		t.Errorf("device login once the password is set: %d, want 200", got)
	}
	if status, resp := env.Super(t, http.MethodPut, path, map[string]any{"pin_md5": ""}); status != http.StatusOK {
		t.Fatalf("update with pin_md5 \"\": %d %s", status, resp)
	}
	if got := login(pin("nopass")); got != http.StatusOK {
		t.Errorf("an update with pin_md5 \"\" removed the password: device login %d, want 200", got)
	}

	// Without the key, or with null, a create is refused.
	for _, pinValue := range []any{nil, "absent"} {
		b := accountBody(provider, "forgot")
		if pinValue == nil {
			b["pin_md5"] = nil
		} else {
			delete(b, "pin_md5")
		}
		status, resp := env.Super(t, http.MethodPost, "/api/provider/accounts", b)
		var e struct{ Fields map[string]string }
		if status != http.StatusBadRequest || json.Unmarshal(resp, &e) != nil || e.Fields["pin_md5"] != "required" {
			t.Errorf("create with pin_md5 %v: %d %s, want 400 pin_md5: required", pinValue, status, resp)
		}
	}
}

// The device list takes the enabled filter TVIP's PHP SDK offers: the
// devices of enabled, or of disabled, accounts.
func TestDeviceListEnabledFilter(t *testing.T) {
	env := nodetest.Start(t)
	provider := mustProvider(t, env, "Filters")
	ids := map[string]int64{}
	for _, login := range []string{"on", "off"} {
		b := accountBody(provider, login)
		b["enabled"] = login == "on"
		status, resp := env.Super(t, http.MethodPost, "/api/provider/accounts", b)
		if status != http.StatusOK {
			t.Fatalf("account %s: %d %s", login, status, resp)
		}
		account := decodeObj(t, resp).id(t)
		status, resp = env.Super(t, http.MethodPost, "/api/provider/devices", map[string]any{"account": account, "unique_id": "box-" + login})
		if status != http.StatusOK {
			t.Fatalf("device of %s: %d %s", login, status, resp)
		}
		ids[login] = decodeObj(t, resp).id(t)
	}
	for _, c := range []struct {
		query string
		want  []int64
	}{
		{"enabled=true", []int64{ids["on"]}},
		{"enabled=1", []int64{ids["on"]}},
		{"enabled=False", []int64{ids["off"]}},
		{"enabled=", []int64{ids["on"], ids["off"]}}, // PHP's http_build_query sends blanks for unset filters
		{"", []int64{ids["on"], ids["off"]}},
	} {
		status, resp := env.Super(t, http.MethodGet, "/api/provider/devices?sort=id&"+c.query, nil)
		var list struct {
			Data  []struct{ ID int64 }
			Total int
		}
		if status != http.StatusOK || json.Unmarshal(resp, &list) != nil {
			t.Fatalf("devices?%s: %d %s", c.query, status, resp)
		}
		var got []int64
		for _, d := range list.Data {
			got = append(got, d.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || list.Total != len(c.want) {
			t.Errorf("devices?%s: %v (total %d), want %v", c.query, got, list.Total, c.want)
		}
	}
	status, resp := env.Super(t, http.MethodGet, "/api/provider/devices?enabled=maybe", nil)
	if status != http.StatusBadRequest || !strings.Contains(string(resp), "enabled") {
		t.Errorf("devices?enabled=maybe: %d %s, want 400 naming enabled", status, resp)
	}
}

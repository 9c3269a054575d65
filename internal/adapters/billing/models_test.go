package billing_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/billing/billingtest"
)

// remove marks a property to delete in mutate.
type remove struct{}

// rename marks a property to rename in mutate.
type rename struct{ to string }

// mutate returns doc with the value at the dotted path (array indexes as
// numbers) replaced by value, or deleted or renamed.
func mutate(t *testing.T, doc, path string, value any) string {
	t.Helper()
	var root any
	if err := json.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	keys := strings.Split(path, ".")
	cur := root
	for _, k := range keys[:len(keys)-1] {
		if i, err := strconv.Atoi(k); err == nil {
			cur = cur.([]any)[i]
		} else {
			cur = cur.(map[string]any)[k]
		}
	}
	last := keys[len(keys)-1]
	if i, err := strconv.Atoi(last); err == nil {
		cur.([]any)[i] = value
	} else {
		obj := cur.(map[string]any)
		switch v := value.(type) {
		case remove:
			delete(obj, last)
		case rename:
			obj[v.to] = obj[last]
			delete(obj, last)
		default:
			obj[last] = v
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

const (
	single = "services.0.groups.0"
	multi  = "services.0.groups.1"
	offer  = single + ".offers.0"
	tariff = offer + ".tariff"
)

func TestValidateCabinet(t *testing.T) {
	if d := billing.ValidateCabinet([]byte(billingtest.Cabinet), billing.ModelOptions{}); len(d) != 0 {
		t.Fatalf("the conforming cabinet has deviations: %v", d)
	}
	long := func(n int) string { return strings.Repeat("я", n) }
	tests := []struct {
		path  string
		value any
		want  string // "severity $.path" of the one deviation expected
		says  string // a part of the problem
	}{
		{"contacts", remove{}, "error $.contacts", "required"},
		{"account.balance", remove{}, "warning $.account.balance", "send null"},
		{"account.balance", nil, "", ""},
		{"account.fullname", nil, "error $.account.fullname", "must not be null"},
		{"account.id", "42", "error $.account.id", "integer, got a string"},
		{"account.enabled", 1, "error $.account.enabled", "boolean"},
		{"services.0.type", "ott", "error $.services[0].type", "iptv"},
		{"services", map[string]any{}, "error $.services", "must be an array"},
		{single + ".type", "DOUBLE", "error $.services[0].groups[0].type", "SINGLE or MULTI"},
		{single + ".type", remove{}, "error $.services[0].groups[0].type", "required"},
		{single + ".archiveSubscriptions", nil, "error $.services[0].groups[0].archiveSubscriptions", "must not be null"},
		{single + ".futureSubscriptions", remove{}, "error $.services[0].groups[0].futureSubscriptions", "required"},
		{single + ".subscription", nil, "", ""},
		{single + ".subscription.tariff", rename{"tarif"}, "error $.services[0].groups[0].subscription.tariff", `found "tarif"`},
		{single + ".subscription.to", "soon", "error $.services[0].groups[0].subscription.to", "date-time"},
		{multi + ".subscriptions", rename{"subscription"}, "error $.services[0].groups[1].subscriptions", `found "subscription"`},
		{multi + ".subscriptions", []any{nil}, "error $.services[0].groups[1].subscriptions[0]", "must not be null"},
		{offer + ".from", "2025-04-01T00:00:00+03:00", "error $.services[0].groups[0].offers[0].from", "without a colon"},
		{offer + ".from", "2025-04-01T00:00:00Z", "error $.services[0].groups[0].offers[0].from", "never Z"},
		{tariff + ".tms_id", remove{}, "error $." + jsonPath(tariff) + ".tms_id", "required"},
		{tariff + ".tms_id", 1.5, "error $." + jsonPath(tariff) + ".tms_id", "integer, got 1.5"},
		{tariff + ".name", long(46), "warning $." + jsonPath(tariff) + ".name", "46 characters; up to 45"},
		{tariff + ".name", long(45), "", ""},
		{tariff + ".description", long(301), "warning $." + jsonPath(tariff) + ".description", "up to 300"},
		{tariff + ".channel_count", -1, "error $." + jsonPath(tariff) + ".channel_count", "negative"},
		{tariff + ".banner", "banner.png", "warning $." + jsonPath(tariff) + ".banner", "absolute"},
		{tariff + ".banner", nil, "", ""},
		{tariff + ".background_color", "#FFF", "warning $." + jsonPath(tariff) + ".background_color", "very light"},
		{tariff + ".background_color", "red", "warning $." + jsonPath(tariff) + ".background_color", "hex colour"},
		{tariff + ".background_color", "#1A237ECC", "", ""},
		{tariff + ".benefits", nil, "", ""},
		{tariff + ".benefits", []any{}, "", ""},
		{tariff + ".benefits", []any{long(36)}, "error $." + jsonPath(tariff) + ".benefits[0]", "36 characters; at most 35"},
		{tariff + ".benefits", []any{long(35), long(35), "x"}, "error $." + jsonPath(tariff) + ".benefits", "71 characters in all"},
		{tariff + ".benefits", []any{7}, "error $." + jsonPath(tariff) + ".benefits[0]", "must be a string"},
		{tariff + ".benefits", "HD", "error $." + jsonPath(tariff) + ".benefits", "array of strings"},
		{tariff + ".prepaid", true, "warning $." + jsonPath(tariff) + ".prepaid", "removed"},
		{tariff, "free", "error $." + jsonPath(tariff), "must be an object"},
	}
	for _, tt := range tests {
		doc := mutate(t, billingtest.Cabinet, tt.path, tt.value)
		got := billing.ValidateCabinet([]byte(doc), billing.ModelOptions{})
		checkOne(t, tt.path, got, tt.want, tt.says)
	}
}

// jsonPath turns a dotted test path into the validators' JSON path.
func jsonPath(dotted string) string {
	var b strings.Builder
	for i, k := range strings.Split(dotted, ".") {
		if _, err := strconv.Atoi(k); err == nil {
			b.WriteString("[" + k + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}

// checkOne checks that got is exactly the deviation want ("" for none).
func checkOne(t *testing.T, name string, got []billing.Deviation, want, says string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Errorf("%s: unexpected deviations %v", name, got)
		}
		return
	}
	if len(got) != 1 || string(got[0].Severity)+" "+got[0].Path != want || !strings.Contains(got[0].Problem, says) {
		t.Errorf("%s: got %v\nwant one %s: ...%s...", name, got, want, says)
	}
}

func TestValidateNotAModel(t *testing.T) {
	for doc, says := range map[string]string{
		``:               "not valid JSON",
		`{"contacts":`:   "not valid JSON",
		`{} {}`:          "more data",
		`null`:           "got null",
		`[]`:             "must be an object, got an array",
		`"cabinet"`:      "must be an object, got a string",
		`{"services":1}`: "", // several deviations: checked below
	} {
		got := billing.ValidateCabinet([]byte(doc), billing.ModelOptions{})
		if says == "" {
			if len(got) != 3 {
				t.Errorf("%s: %v, want contacts, account and services", doc, got)
			}
			continue
		}
		checkOne(t, doc, got, "error $", says)
	}
}

func TestValidateServiceIDField(t *testing.T) {
	doc := mutate(t, billingtest.Cabinet, tariff+".tms_id", rename{"tvip_id"})
	if d := billing.ValidateCabinet([]byte(doc), billing.ModelOptions{ServiceIDField: "tvip_id"}); len(d) != 2 {
		// tariffs 1 and 3 still carry tms_id only
		t.Errorf("with tvip_id: %v", d)
	}
	got := billing.ValidateCabinet([]byte(doc), billing.ModelOptions{})
	checkOne(t, "tms_id renamed", got, "error $."+jsonPath(tariff)+".tms_id", "required")
}

func TestValidateTariffDetail(t *testing.T) {
	detail := billingtest.TariffDetail("5")
	if d := billing.ValidateTariffDetail([]byte(detail), billing.ModelOptions{}); len(d) != 0 {
		t.Fatalf("the conforming detail has deviations: %v", d)
	}
	tests := []struct {
		path  string
		value any
		want  string
		says  string
	}{
		{"channels.1.categories", []any{9}, `warning $.channels[1].categories[0]`, "category 9 is not in"},
		{"channels.0.number", "1", `error $.channels[0].number`, "integer"},
		{"channels.0.logo_url", nil, "", ""},
		{"channels.0.logo_url", remove{}, `warning $.channels[0].logo_url`, "missing"},
		{"categories", map[string]any{"1": "News", "2": "Sport", "x": "Kids"}, `error $.categories["x"]`, "category id"},
		{"categories", map[string]any{"1": "News", "2": 2}, `error $.categories["2"]`, "category name"},
		{"tariff.tms_id", nil, "error $.tariff.tms_id", "must not be null"},
		{"channels", nil, "error $.channels", "must not be null"},
	}
	for _, tt := range tests {
		got := billing.ValidateTariffDetail([]byte(mutate(t, detail, tt.path, tt.value)), billing.ModelOptions{})
		checkOne(t, tt.path, got, tt.want, tt.says)
	}
}

func TestValidateResults(t *testing.T) {
	if d := billing.ValidateResult([]byte(billingtest.Result), billing.ModelOptions{}); len(d) != 0 {
		t.Errorf("the conforming result has deviations: %v", d)
	}
	checkOne(t, "status 201", billing.ValidateResult([]byte(mutate(t, billingtest.Result, "status", 201)), billing.ModelOptions{}),
		"error $.status", "200 (carried out) or 500")
	checkOne(t, "failed without subscription", billing.ValidateResult([]byte(`{"status":500,"message":null,"subscription":null}`), billing.ModelOptions{}), "", "")
	checkOne(t, "password", billing.ValidatePasswordResult([]byte(`{"status":500,"message":"wrong password"}`)), "", "")
	checkOne(t, "password status text", billing.ValidatePasswordResult([]byte(`{"status":"200","message":null}`)), "error $.status", "integer")
}

func TestTariffIDs(t *testing.T) {
	if got := billing.TariffIDs([]byte(billingtest.Cabinet)); !slices.Equal(got, []int64{2, 1, 3}) {
		t.Errorf("TariffIDs = %v, want [2 1 3]", got)
	}
	if got := billing.TariffIDs([]byte(`{"services":"x"}`)); got != nil {
		t.Errorf("TariffIDs of a non-cabinet = %v", got)
	}
}

func TestDeviationString(t *testing.T) {
	d := billing.Deviation{Path: "$.contacts", Severity: billing.SeverityError, Problem: "required"}
	if d.String() != "error $.contacts: required" {
		t.Errorf("String() = %q", d.String())
	}
}

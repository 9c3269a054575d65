package billing_test

import (
	"reflect"
	"strings"
	"testing"

	"tvsm/internal/adapters/billing"
	"tvsm/internal/adapters/billing/billingtest"
)

// The validators decode whatever an operator's billing answers: they must
// never panic, and every deviation must name where and what.

func fuzzValidator(f *testing.F, seeds []string, validate func([]byte) []billing.Deviation) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{``, `null`, `[]`, `{}`, `{"services":[{"groups":[{"type":"MULTI","offers":[{}]}]}]}`,
		`{"tariff":{"benefits":["` + strings.Repeat("x", 80) + `"]},"categories":{"-1":1}}`, `{"status":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := validate(data)
		for _, d := range got {
			if !strings.HasPrefix(d.Path, "$") || d.Problem == "" ||
				(d.Severity != billing.SeverityError && d.Severity != billing.SeverityWarning) {
				t.Fatalf("malformed deviation %+v", d)
			}
		}
		if again := validate(data); !reflect.DeepEqual(got, again) {
			t.Fatalf("not deterministic:\n%v\n%v", got, again)
		}
	})
}

func FuzzValidateCabinet(f *testing.F) {
	fuzzValidator(f, []string{billingtest.Cabinet}, func(data []byte) []billing.Deviation {
		_ = billing.TariffIDs(data)
		return billing.ValidateCabinet(data, billing.ModelOptions{})
	})
}

func FuzzValidateTariffDetail(f *testing.F) {
	fuzzValidator(f, []string{billingtest.TariffDetail("1")}, func(data []byte) []billing.Deviation {
		return billing.ValidateTariffDetail(data, billing.ModelOptions{})
	})
}

func FuzzValidateResult(f *testing.F) {
	fuzzValidator(f, []string{billingtest.Result, `{"status":200,"message":null}`}, func(data []byte) []billing.Deviation {
		return append(billing.ValidateResult(data, billing.ModelOptions{}), billing.ValidatePasswordResult(data)...)
	})
}

// FuzzParseTariffID: the id a device puts in the path is forwarded only in
// canonical form, so the billing path is exactly the one asked for.
func FuzzParseTariffID(f *testing.F) {
	for _, s := range []string{"1", "0", "01", "+1", "-1", "1/../admin", "9223372036854775807", "%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := billing.ParseTariffID(s)
		if ok && (id <= 0 || billing.TariffPath(id) != "/api/tariff/"+s) {
			t.Fatalf("ParseTariffID(%q) = %d, path %s", s, id, billing.TariffPath(id))
		}
	})
}

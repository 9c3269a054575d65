package domain_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"tvsm/domain"
)

// patchBody is how an HTTP decoder uses Optional: one field per property.
type patchBody struct {
	Name  domain.Optional[string]  `json:"name,omitzero"`
	Limit domain.Optional[int]     `json:"limit,omitzero"`
	IDs   domain.Optional[[]int64] `json:"ids,omitzero"`
}

func TestOptionalDecode(t *testing.T) {
	tests := []struct {
		body string
		want patchBody
	}{
		{`{}`, patchBody{}},
		{`{"name":null}`, patchBody{Name: domain.Null[string]()}},
		{`{"name":"x","limit":0}`, patchBody{Name: domain.Some("x"), Limit: domain.Some(0)}},
		{`{"limit": null , "ids":[1,2]}`, patchBody{Limit: domain.Null[int](), IDs: domain.Some([]int64{1, 2})}},
		{`{"name":""}`, patchBody{Name: domain.Some("")}},
	}
	for _, tt := range tests {
		var got patchBody
		if err := json.Unmarshal([]byte(tt.body), &got); err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.body, got, tt.want)
		}
	}
	var p patchBody
	if err := json.Unmarshal([]byte(`{"limit":"3"}`), &p); err == nil {
		t.Errorf("a string for an int decoded: %+v", p)
	}
}

func TestOptionalEncode(t *testing.T) {
	tests := []struct {
		body patchBody
		want string
	}{
		{patchBody{}, `{}`},
		{patchBody{Name: domain.Null[string](), Limit: domain.Some(0)}, `{"name":null,"limit":0}`},
		{patchBody{IDs: domain.Some([]int64{})}, `{"ids":[]}`},
	}
	for _, tt := range tests {
		data, err := json.Marshal(tt.body)
		if err != nil || string(data) != tt.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.body, data, err, tt.want)
		}
	}
}

func TestOptionalAccessors(t *testing.T) {
	var absent domain.Optional[int]
	if absent.Present || absent.IsNull() || absent.HasValue() || !absent.IsZero() || absent.Ptr() != nil || absent.Or(7) != 7 {
		t.Errorf("zero Optional is not absent")
	}
	if v, ok := absent.Get(); ok || v != 0 {
		t.Errorf("absent.Get() = %v, %v", v, ok)
	}
	null := domain.Null[int]()
	if !null.Present || !null.IsNull() || null.HasValue() || null.IsZero() || null.Ptr() != nil || null.Or(7) != 7 {
		t.Errorf("Null: %+v", null)
	}
	some := domain.Some(5)
	if v, ok := some.Get(); !ok || v != 5 || !some.HasValue() || some.IsNull() || *some.Ptr() != 5 || some.Or(7) != 5 {
		t.Errorf("Some(5): %+v", some)
	}
	p := some.Ptr()
	*p = 6
	if v, _ := some.Get(); v != 5 {
		t.Errorf("Ptr shares memory with the Optional")
	}
	if domain.FromPtr[int](nil) != null || domain.FromPtr(ptr(5)) != some {
		t.Errorf("FromPtr")
	}
	// A Value beside Null is ignored, and Null without Present is absent.
	stray := domain.Optional[int]{Present: true, Null: true, Value: 9}
	if _, ok := stray.Get(); ok || stray.Ptr() != nil {
		t.Errorf("stray value read: %+v", stray)
	}
	if (domain.Optional[int]{Null: true}).IsNull() {
		t.Errorf("Null without Present is null")
	}
}

// wireOptional mirrors httpapi/wire.Optional: the HTTP decoder's values
// convert to domain.Optional with a plain conversion.
type wireOptional[T any] struct {
	Present bool
	Null    bool
	Value   T
}

func TestOptionalConvertsFromWire(t *testing.T) {
	w := wireOptional[string]{Present: true, Value: "alice"}
	if got := domain.Optional[string](w); got != domain.Some("alice") {
		t.Errorf("conversion = %+v", got)
	}
}

// A command built from a stray Optional still yields events that survive a
// JSON round trip.
func TestStrayNullIsCanonicalised(t *testing.T) {
	stray := domain.Optional[string]{Present: true, Null: true, Value: "junk"}
	accountSpec().Given(created, domain.AccountUpdated{AccountID: 42, ContractInfo: domain.Some("c-1")}).
		When(domain.UpdateAccount{ID: 42, ContractInfo: stray}).
		Then(t, domain.AccountUpdated{AccountID: 42, ContractInfo: domain.Null[string]()})
}

package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The contract with TVIP's official Provider API SDK (tmsproviderapisdk):
// every model class builds its object with dict["key"] for a fixed list of
// keys, so a missing key is a KeyError in the client, and the SDK's type
// hints say what each value is. A sdkShape lists, for one resource, every
// key the SDK reads and the JSON types it may have; answers may carry more
// keys (ours), never fewer.

// JSON types of a value as a client decodes it.
const (
	jsonInt    = "int"
	jsonString = "string"
	jsonBool   = "bool"
	jsonArray  = "array"
	jsonObject = "object"
	jsonNull   = "null"
)

// sdkShape maps each key the SDK reads to the JSON types it may have, such
// as "int|null".
type sdkShape map[string]string

// jsonTypeOf returns the JSON type of v, decoded with UseNumber: a number
// with a fraction or exponent is not an int.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return jsonNull
	case bool:
		return jsonBool
	case string:
		return jsonString
	case json.Number:
		if strings.ContainsAny(v.String(), ".eE") {
			return "float"
		}
		return jsonInt
	case []any:
		return jsonArray
	case map[string]any:
		return jsonObject
	}
	return "unknown"
}

// decodeNumbers decodes a JSON object keeping numbers as json.Number.
func decodeNumbers(t testing.TB, body []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, body)
	}
	return m
}

// assertShape fails t unless obj has every key of want with one of its
// types.
func assertShape(t testing.TB, what string, obj map[string]any, want sdkShape) {
	t.Helper()
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		v, ok := obj[key]
		if !ok {
			t.Errorf("%s: key %q missing (the SDK reads it: KeyError)", what, key)
			continue
		}
		if got := jsonTypeOf(v); !slices.Contains(strings.Split(want[key], "|"), got) {
			t.Errorf("%s: %q is %s (%v), want %s", what, key, got, v, want[key])
		}
	}
}

// assertListShape checks a list answer: the envelope the SDK's get_list
// reads ({data, total, start, limit}) and every item's shape. It returns
// the items.
func assertListShape(t testing.TB, what string, body []byte, want sdkShape) []map[string]any {
	t.Helper()
	env := decodeNumbers(t, body)
	assertShape(t, what+" envelope", env, sdkShape{"data": jsonArray, "total": jsonInt, "start": jsonInt, "limit": jsonInt})
	raw, _ := env["data"].([]any)
	items := make([]map[string]any, 0, len(raw))
	for i, it := range raw {
		m, ok := it.(map[string]any)
		if !ok {
			t.Fatalf("%s: item %d is %s, want an object", what, i, jsonTypeOf(it))
		}
		assertShape(t, what+" item", m, want)
		items = append(items, m)
	}
	return items
}

// noRedirects is a client that reports a redirect instead of following
// it, as PHP's curl does by default.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

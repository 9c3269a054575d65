package tvipimport

import (
	"encoding/json"
	"testing"
)

func resourceNamed(t *testing.T, name string) resource {
	t.Helper()
	for _, r := range resources {
		if r.name == name {
			return r
		}
	}
	t.Fatalf("no resource %s", name)
	return resource{}
}

// Given a source object in one of the forms TVIP may answer and the object
// as the node answers it once imported, then they compare alike; and a
// real difference is still one.
func TestSourceFormsCompareAsTheNodeAnswersThem(t *testing.T) {
	n := func(s string) json.Number { return json.Number(s) }
	for _, c := range []struct {
		resource string
		source   object
		target   object
		differ   []string
	}{
		{"devices", object{"mac": "00-1A-2B-3C-4D-5E", "unique_id": "box"}, object{"mac": "00:1a:2b:3c:4d:5e", "unique_id": "box"}, nil},
		{"devices", object{"mac": "001A2B3C4D5E"}, object{"mac": "00:1a:2b:3c:4d:5e"}, nil},
		{"devices", object{"mac": "00:1a:2b:3c:4d:5f"}, object{"mac": "00:1a:2b:3c:4d:5e"}, []string{"mac"}},
		{"tarif_tags", object{"name": "Base", "position": nil}, object{"name": "Base", "position": n("0")}, nil},
		{"tarif_tags", object{"position": n("2")}, object{"position": n("0")}, []string{"position"}},
		// A key the source does not answer at all says nothing.
		{"tarifs", object{"tarif_name": "Basic", "enabled": true}, object{"tarif_name": "Basic", "enabled": true, "channels": []any{}, "description": nil}, nil},
		{"tarifs", object{"tarif_name": "Basic", "channels": []any{n("2"), n("1")}}, object{"tarif_name": "Basic", "channels": []any{n("1"), n("2")}}, nil},
		{"tarifs", object{"channels": []any{}}, object{"channels": []any{n("1")}}, []string{"channels"}},
		{"channels", object{"name": "One", "text_name": ""}, object{"name": "One", "text_name": "One"}, nil},
		{"account_subscriptions", object{"start": "2024-01-15T10:00:00+0300", "stop": nil}, object{"start": "2024-01-15T07:00:00+0000", "stop": nil}, nil},
		{"accounts", object{"enabled": n("1"), "remote_custom_field": ""}, object{"enabled": true, "remote_custom_field": nil}, nil},
	} {
		r := resourceNamed(t, c.resource)
		got := r.differs(c.source, c.target)
		if len(got) != len(c.differ) || (len(got) > 0 && got[0] != c.differ[0]) {
			t.Errorf("%s %v against %v: differ in %v, want %v", c.resource, c.source, c.target, got, c.differ)
		}
	}
}

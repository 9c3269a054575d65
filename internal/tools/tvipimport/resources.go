package tvipimport

import (
	"encoding/json"
	"maps"
	"strconv"
	"strings"

	"tvsm/domain"
)

// resource is one collection of the Provider API and how it is copied.
type resource struct {
	// name is the collection's name in the report and its path under
	// /api/provider, at the source and (for reading) at the target.
	name string
	// kind is the kind of its ids at the target (POST /api/admin/import/ids).
	kind string
	// fields are compared and copied, by their Provider API names.
	fields []string
	// write is the target's collection written to: the Provider API's, or
	// the Admin API's for what the Provider API only reads.
	write string
	// body turns the fields of a Provider API object into the body of a
	// write to write; nil sends them as they are.
	body func(fields map[string]any) map[string]any
	// answered, when not nil, puts a source object as the target answers
	// it, for comparing only: writes send the source's own values.
	answered func(object) object
}

// differs returns the fields of the source's object s that the target's t
// does not hold alike.
func (r resource) differs(s, t object) []string {
	if r.answered != nil {
		s = r.answered(s)
	}
	return differing(r.fields, s, t)
}

// resources are copied in this order, each after what it refers to.
var resources = []resource{
	{name: "regions", kind: "region", fields: []string{"name"}, write: "/api/admin/regions"},
	{name: "providers", kind: "provider", write: "/api/admin/providers",
		fields: []string{"provider_name", "provider_comment", "enabled", "logo_url", "devices_per_account_limit", "region_tag"},
		body:   renamed(map[string]string{"provider_name": "name", "provider_comment": "comment"})},
	{name: "favorite_group", kind: "category", fields: []string{"name"}, write: "/api/admin/categories"},
	{name: "channels", kind: "channel", write: "/api/admin/channels",
		fields: []string{"name", "text_name", "display_number", "logo_url", "enabled", "time_shift_depth", "favorites"},
		body:   channelBody, answered: channelAnswered},
	{name: "tarif_tags", kind: "tariff_tag", write: "/api/provider/tarif_tags",
		fields: []string{"name", "enabled", "provider", "position"}, answered: tariffTagAnswered},
	{name: "tarifs", kind: "tariff", write: "/api/provider/tarifs",
		fields: []string{"tarif_name", "provider", "tarif_tag", "enabled", "channels", "description"}},
	{name: "device_types", kind: "device_type", write: "/api/provider/device_types", fields: []string{"device_type"}},
	{name: "accounts", kind: "account", write: "/api/provider/accounts",
		fields: []string{"login", "provider", "enabled", "fullname", "remote_custom_field", "contract_info",
			"main_address", "account_desc", "region_tag", "devices_per_account_limit"}},
	{name: "account_network", kind: "account_network", write: "/api/provider/account_network",
		fields: []string{"account", "network", "description"}},
	{name: "account_subscriptions", kind: "subscription", write: "/api/provider/account_subscriptions",
		fields: []string{"account", "tarif", "start", "stop", "time_shift_depth"}},
	{name: "devices", kind: "device", write: "/api/provider/devices",
		fields:   []string{"account", "unique_id", "mac", "remote_custom_field", "comment", "use_nat", "udpxy_addr", "device_type"},
		answered: deviceAnswered},
	{name: "device_subscriptions", kind: "subscription", write: "/api/provider/device_subscriptions",
		fields: []string{"device", "tarif", "start", "stop", "time_shift_depth"}},
}

// Resources names the collections an import copies, in its order.
func Resources() []string {
	names := make([]string, len(resources))
	for i, r := range resources {
		names[i] = r.name
	}
	return names
}

// renamed sends the fields under other names.
func renamed(names map[string]string) func(map[string]any) map[string]any {
	return func(f map[string]any) map[string]any {
		out := make(map[string]any, len(f))
		for k, v := range f {
			if n, ok := names[k]; ok {
				k = n
			}
			out[k] = v
		}
		return out
	}
}

// channelAnswered: a channel without a text name ("" or null, as TVIP
// may answer it) is answered by the target with its name as its text name.
func channelAnswered(s object) object {
	if !same(s["text_name"], nil) {
		return s
	}
	c := maps.Clone(s)
	c["text_name"] = s["name"]
	return c
}

// tariffTagAnswered: a tag without a position is answered at position 0.
func tariffTagAnswered(s object) object {
	if v, ok := s["position"]; !ok || v != nil {
		return s
	}
	c := maps.Clone(s)
	c["position"] = json.Number("0")
	return c
}

// deviceAnswered: a MAC address is answered in one form whatever form it
// was written in (lower-case hex pairs joined by colons).
func deviceAnswered(s object) object {
	m, ok := s["mac"].(string)
	if !ok {
		return s
	}
	norm, err := domain.NormalizeMAC(strings.TrimSpace(m))
	if err != nil || norm == m {
		return s // the node refuses it, naming mac
	}
	c := maps.Clone(s)
	c["mac"] = norm
	return c
}

// channelBody writes a channel to the Admin API: its number is an integer
// there (display_number, a string, in the Provider API) and its categories
// are the Provider API's favorites.
func channelBody(f map[string]any) map[string]any {
	out := renamed(map[string]string{"favorites": "categories"})(f)
	if v, ok := out["display_number"]; ok {
		delete(out, "display_number")
		switch n := v.(type) {
		case string:
			if i, err := strconv.Atoi(n); err == nil {
				out["number"] = i
			} else {
				out["number"] = n // the target names it in its refusal
			}
		case json.Number:
			out["number"] = n
		default:
			out["number"] = v
		}
	}
	return out
}

package billing

import (
	"encoding/json"
	"strconv"
)

// The billing models (as of the 2025-03-04 update), as property lists.

var accountProps = []prop{
	{name: "id", check: checkInteger},
	{name: "fullname", check: checkString},
	{name: "balance", nullable: true, check: checkString},
	{name: "enabled", check: checkBoolean},
	{name: "account_credentials", nullable: true, check: checkString},
}

var serviceProps = []prop{
	{name: "type", check: constant("iptv", ": only iptv services are supported")},
	{name: "title", check: checkString},
	{name: "description", nullable: true, check: checkString},
	{name: "groups", check: arrayOf(checkGroup)},
}

var offerProps = []prop{
	{name: "tariff", check: checkTariff},
	{name: "from", check: checkDateTime},
}

var subscriptionProps = []prop{
	{name: "id", check: checkInteger},
	{name: "from", check: checkDateTime},
	{name: "to", nullable: true, check: checkDateTime},
	{name: "cancel_date", nullable: true, check: checkDateTime},
	{name: "tariff", check: checkTariff, alias: "tarif"},
}

var (
	checkOffer         = objectOf(offerProps)
	checkSubscription  = objectOf(subscriptionProps)
	checkSubscriptions = arrayOf(checkSubscription)
)

var singleGroupProps = []prop{
	{name: "title", check: checkString},
	{name: "offers", check: arrayOf(checkOffer)},
	{name: "subscription", nullable: true, check: checkSubscription},
	{name: "archiveSubscriptions", check: checkSubscriptions},
	{name: "futureSubscriptions", check: checkSubscriptions},
}

var multiGroupProps = []prop{
	{name: "title", check: checkString},
	{name: "offers", check: arrayOf(checkOffer)},
	// Before 2025-03-04 the model named it subscription.
	{name: "subscriptions", check: checkSubscriptions, alias: "subscription"},
}

var resultProps = []prop{
	{name: "status", check: checkResultStatus},
	{name: "message", nullable: true, check: checkString},
	{name: "subscription", nullable: true, check: checkSubscription},
}

var passwordResultProps = []prop{
	{name: "status", check: checkResultStatus},
	{name: "message", nullable: true, check: checkString},
}

var checkCabinet = objectOf([]prop{
	{name: "contacts", check: checkString},
	{name: "account", check: objectOf(accountProps)},
	{name: "services", check: arrayOf(objectOf(serviceProps))},
})

// checkGroup checks a group by its kind: SINGLE or MULTI.
func checkGroup(v *validator, path string, x any) {
	obj, ok := v.object(path, x)
	if !ok {
		return
	}
	switch kind := obj["type"]; kind {
	case "SINGLE":
		v.props(path, obj, singleGroupProps)
	case "MULTI":
		v.props(path, obj, multiGroupProps)
	case nil:
		v.errorf(path+".type", "required: SINGLE or MULTI")
		v.props(path, obj, singleGroupProps[:2])
	default:
		v.errorf(path+".type", "must be SINGLE or MULTI, got %s", describe(kind))
		v.props(path, obj, singleGroupProps[:2])
	}
}

// describe shows a JSON value in a message: strings quoted, other kinds
// named.
func describe(x any) string {
	if s, ok := x.(string); ok {
		return strconv.Quote(s)
	}
	return kindOf(x)
}

func checkResultStatus(v *validator, path string, x any) {
	if n, ok := v.integer(path, x); ok && n != 200 && n != 500 {
		v.errorf(path, "must be 200 (carried out) or 500 (not carried out), got %d", n)
	}
}

// TariffIDs returns the billing ids of the tariffs a cabinet answer
// mentions (offers and subscriptions of every group), without repeats, in
// document order; nil when data is not a cabinet.
func TariffIDs(data []byte) []int64 {
	x, err := decodeJSON(data)
	if err != nil {
		return nil
	}
	var ids []int64
	seen := map[int64]bool{}
	add := func(holder any) {
		m, _ := holder.(map[string]any)
		t, _ := m["tariff"].(map[string]any)
		n, _ := t["id"].(json.Number)
		if id, err := strconv.ParseInt(n.String(), 10, 64); err == nil && id > 0 && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, svc := range list(field(x, "services")) {
		for _, g := range list(field(svc, "groups")) {
			for _, o := range list(field(g, "offers")) {
				add(o)
			}
			add(field(g, "subscription"))
			for _, name := range []string{"subscriptions", "archiveSubscriptions", "futureSubscriptions"} {
				for _, s := range list(field(g, name)) {
					add(s)
				}
			}
		}
	}
	return ids
}

func field(x any, name string) any {
	m, _ := x.(map[string]any)
	return m[name]
}

func list(x any) []any {
	a, _ := x.([]any)
	return a
}

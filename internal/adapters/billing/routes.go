package billing

import (
	"net/http"
	"strconv"
)

// Route is one of the six calls of the billing interface that a device may
// make through the proxy. No other path is ever forwarded.
type Route struct {
	// Name identifies the route in the journal: cabinet, switch, subscribe,
	// unsubscribe, tariff, password.
	Name   string
	Method string
	// Path is the billing interface path; for the tariff route the id
	// follows it (TariffPath).
	Path string
}

// The routes of the billing interface.
var (
	RouteCabinet     = Route{Name: "cabinet", Method: http.MethodGet, Path: "/api/cabinet"}
	RouteSwitch      = Route{Name: "switch", Method: http.MethodPost, Path: "/api/switch"}
	RouteSubscribe   = Route{Name: "subscribe", Method: http.MethodPost, Path: "/api/subscribe"}
	RouteUnsubscribe = Route{Name: "unsubscribe", Method: http.MethodPost, Path: "/api/unsubscribe"}
	RouteTariff      = Route{Name: "tariff", Method: http.MethodGet, Path: "/api/tariff/"}
	RoutePassword    = Route{Name: "password", Method: http.MethodPost, Path: "/api/cabinet/password"}
)

// Routes lists every route: cabinet, switch, subscribe, unsubscribe,
// tariff, password.
var Routes = []Route{RouteCabinet, RouteSwitch, RouteSubscribe, RouteUnsubscribe, RouteTariff, RoutePassword}

// TariffPath returns the billing path of tariff id: /api/tariff/{id}.
func TariffPath(id int64) string { return RouteTariff.Path + strconv.FormatInt(id, 10) }

// ParseTariffID accepts a tariff id as a device sends it in the path: a
// positive decimal integer in canonical form (no sign, no leading zeros, at
// most 18 digits), so the forwarded path is exactly what the device asked.
func ParseTariffID(s string) (int64, bool) { return parseID(s) }

// parseID parses a positive decimal id in canonical form.
func parseID(s string) (int64, bool) {
	if s == "" || len(s) > 18 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

package domain

import (
	"fmt"
	"slices"
)

// BillingCalledType names the journal entry of a proxied billing call.
const BillingCalledType = "BillingCalled.v1"

// JournalEventTypes lists the event types that record what happened around
// an aggregate without changing it (they live in its stream so its history
// shows them). Readers of state pass over them: the read model does not
// apply them and the change feed does not report them as changes.
func JournalEventTypes() []string { return []string{BillingCalledType} }

// IsJournalEvent reports whether eventType is one of JournalEventTypes.
func IsJournalEvent(eventType string) bool { return slices.Contains(JournalEventTypes(), eventType) }

// BillingCalled records one call a device made to its operator's billing
// through the proxy: the route, what the device got back and how long it
// took. It is appended to the account's stream (account-{id}) so it shows in
// the account history; the call's time is the event's occurred-at. It
// changes no account field: the account aggregate's Evolve passes over it,
// and it is never decided, only recorded.
type BillingCalled struct {
	AccountID int64 `json:"account_id"`
	Provider  int64 `json:"provider"`
	DeviceID  int64 `json:"device_id,omitempty"`
	// Route is the billing route: cabinet, switch, subscribe, unsubscribe,
	// tariff or password.
	Route  string `json:"route"`
	Method string `json:"method"`
	// Path is the billing interface path called (/api/tariff/7), without the
	// base path of the provider's billing URL.
	Path string `json:"path"`
	// Status is the HTTP status the device got: billing's own, or the
	// proxy's 502 or 504 when billing did not answer usably.
	Status    int   `json:"status"`
	LatencyMS int64 `json:"latency_ms"`
	// Failure says why the proxy answered instead of billing (timeout,
	// unreachable, response_too_large, ...); empty when billing answered.
	Failure string `json:"failure,omitempty"`
}

// EventType implements Event.
func (BillingCalled) EventType() string { return BillingCalledType }

// summary is the account history line of the call.
func (e BillingCalled) summary() string {
	s := fmt.Sprintf("billing %s %s: %d", e.Method, e.Path, e.Status)
	if e.Failure != "" {
		s += " (" + e.Failure + ")"
	}
	return fmt.Sprintf("%s in %d ms", s, e.LatencyMS)
}

func registerBillingEvents(r *Registry) {
	r.Register(BillingCalledType, func() Event { return new(BillingCalled) })
}

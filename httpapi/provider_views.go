package httpapi

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/httpapi/wire"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// The JSON shapes of the Provider API. Field order follows TVIP's
// documentation of each object; every field is always present, null when
// unset. The *_dto fields and pin_md5 are always null, as TVIP answers them.

// providerAccountJSON is an account (the Provider API's account object, as
// TVIP's SDK reads it: created, updated and last_online in Unix seconds,
// region_tag a region's id), plus one read-only field of ours:
// services_available (enabled with a subscription active now: what the
// account's devices get).
type providerAccountJSON struct {
	ID                     int64     `json:"id"`
	Enabled                bool      `json:"enabled"`
	Login                  string    `json:"login"`
	PinMD5                 *string   `json:"pin_md5"`
	Fullname               string    `json:"fullname"`
	Provider               int64     `json:"provider"`
	RemoteCustomField      *string   `json:"remote_custom_field"`
	ContractInfo           *string   `json:"contract_info"`
	MainAddress            *string   `json:"main_address"`
	AccountDesc            *string   `json:"account_desc"`
	ProviderDTO            *struct{} `json:"provider_dto"`
	RegionTag              *int64    `json:"region_tag"`
	RegionDTO              *struct{} `json:"region_dto"`
	DevicesPerAccountLimit *int      `json:"devices_per_account_limit"`
	Created                *int64    `json:"created"`
	Updated                *int64    `json:"updated"`
	LastOnline             *int64    `json:"last_online"`
	ServicesAvailable      bool      `json:"services_available"`
}

func providerAccount(v query.AccountView) providerAccountJSON {
	a := v.Account
	return providerAccountJSON{
		ID:                     a.ID,
		Enabled:                a.Enabled,
		Login:                  a.Login,
		Fullname:               a.Fullname,
		Provider:               a.Provider,
		RemoteCustomField:      a.RemoteCustomField,
		ContractInfo:           a.ContractInfo,
		MainAddress:            a.MainAddress,
		AccountDesc:            a.AccountDesc,
		RegionTag:              a.RegionTag,
		DevicesPerAccountLimit: a.DevicesPerAccountLimit,
		Created:                unixSeconds(a.Created),
		Updated:                unixSeconds(a.Updated),
		LastOnline:             unixSeconds(a.LastOnline),
		ServicesAvailable:      v.ServicesAvailable,
	}
}

// unixSeconds returns t in Unix seconds, nil for the zero time.
func unixSeconds(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	s := t.Unix()
	return &s
}

func encodeProviderAccount(v query.AccountView) ([]byte, error) {
	return providerAccount(v).appendJSON(make([]byte, 0, 512)), nil
}

// appendJSON appends exactly what encoding/json writes for a
// (TestProviderAccountJSONIsEncodingJSONs and its fuzz target compare),
// without reflection: single answers and WriteList use it (jsonAppender).
// It is not a MarshalJSON, which encoding/json would validate and compact
// again, costing more than the reflection it saves.
func (a providerAccountJSON) appendJSON(dst []byte) []byte {
	dst = strconv.AppendInt(append(dst, `{"id":`...), a.ID, 10)
	dst = strconv.AppendBool(append(dst, `,"enabled":`...), a.Enabled)
	dst = domain.AppendJSONString(append(dst, `,"login":`...), a.Login)
	dst = appendNullableString(append(dst, `,"pin_md5":`...), a.PinMD5)
	dst = domain.AppendJSONString(append(dst, `,"fullname":`...), a.Fullname)
	dst = strconv.AppendInt(append(dst, `,"provider":`...), a.Provider, 10)
	dst = appendNullableString(append(dst, `,"remote_custom_field":`...), a.RemoteCustomField)
	dst = appendNullableString(append(dst, `,"contract_info":`...), a.ContractInfo)
	dst = appendNullableString(append(dst, `,"main_address":`...), a.MainAddress)
	dst = appendNullableString(append(dst, `,"account_desc":`...), a.AccountDesc)
	dst = appendNullStruct(append(dst, `,"provider_dto":`...), a.ProviderDTO)
	dst = appendNullableInt(append(dst, `,"region_tag":`...), a.RegionTag)
	dst = appendNullStruct(append(dst, `,"region_dto":`...), a.RegionDTO)
	dst = append(dst, `,"devices_per_account_limit":`...)
	if a.DevicesPerAccountLimit == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, int64(*a.DevicesPerAccountLimit), 10)
	}
	dst = appendNullableInt(append(dst, `,"created":`...), a.Created)
	dst = appendNullableInt(append(dst, `,"updated":`...), a.Updated)
	dst = appendNullableInt(append(dst, `,"last_online":`...), a.LastOnline)
	dst = strconv.AppendBool(append(dst, `,"services_available":`...), a.ServicesAvailable)
	return append(dst, '}')
}

func appendNullableInt(dst []byte, n *int64) []byte {
	if n == nil {
		return append(dst, "null"...)
	}
	return strconv.AppendInt(dst, *n, 10)
}

func appendNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return domain.AppendJSONString(dst, *s)
}

// appendNullStruct writes a *struct{} (the always-null *_dto fields).
func appendNullStruct(dst []byte, p *struct{}) []byte {
	if p == nil {
		return append(dst, "null"...)
	}
	return append(dst, "{}"...)
}

// providerSubscriptionJSON is an account subscription (the Provider API's
// account_subscriptions object); stop is null while open-ended,
// time_shift_depth when unset.
type providerSubscriptionJSON struct {
	ID             int64         `json:"id"`
	Account        int64         `json:"account"`
	Start          wire.DateTime `json:"start"`
	Tarif          int64         `json:"tarif"`
	Stop           wire.DateTime `json:"stop"`
	TimeShiftDepth *int          `json:"time_shift_depth"`
	TarifDTO       *struct{}     `json:"tarif_dto"`
	AccountDTO     *struct{}     `json:"account_dto"`
}

func providerSubscription(s readmodel.Subscription) providerSubscriptionJSON {
	return providerSubscriptionJSON{
		ID:             s.ID,
		Account:        s.Account,
		Start:          wire.NewDateTime(s.Start, nil),
		Tarif:          s.Tariff,
		Stop:           wire.NewDateTime(s.Stop, nil), // zero: null
		TimeShiftDepth: s.TimeShiftDepth,
	}
}

func encodeProviderSubscription(s readmodel.Subscription) ([]byte, error) {
	return json.Marshal(providerSubscription(s))
}

// providerDeviceSubscriptionJSON is a device's own subscription (TVIP's
// device_subscriptions object), with the device's account as an extra.
type providerDeviceSubscriptionJSON struct {
	ID             int64         `json:"id"`
	Device         int64         `json:"device"`
	Start          wire.DateTime `json:"start"`
	Stop           wire.DateTime `json:"stop"`
	Tarif          int64         `json:"tarif"`
	TimeShiftDepth *int          `json:"time_shift_depth"`
	Account        int64         `json:"account"`
}

func providerDeviceSubscription(s readmodel.Subscription) providerDeviceSubscriptionJSON {
	return providerDeviceSubscriptionJSON{
		ID:             s.ID,
		Device:         s.Device,
		Start:          wire.NewDateTime(s.Start, nil),
		Stop:           wire.NewDateTime(s.Stop, nil),
		Tarif:          s.Tariff,
		TimeShiftDepth: s.TimeShiftDepth,
		Account:        s.Account,
	}
}

func encodeProviderDeviceSubscription(s readmodel.Subscription) ([]byte, error) {
	return json.Marshal(providerDeviceSubscription(s))
}

// providerDeviceJSON is a bound device: TVIP's device object (ipaddr,
// first_online, last_online, last_fw_ver and operation_system from its
// logins and connections; the rest set by the provider), plus class,
// model (null when the device did not report one), created and online of
// ours.
type providerDeviceJSON struct {
	ID                int64         `json:"id"`
	UniqueID          string        `json:"unique_id"`
	Account           int64         `json:"account"`
	Provider          int64         `json:"provider"`
	IPAddr            *string       `json:"ipaddr"`
	MAC               *string       `json:"mac"`
	RemoteCustomField *string       `json:"remote_custom_field"`
	Comment           *string       `json:"comment"`
	LastOnline        wire.DateTime `json:"last_online"`
	LastFwVer         *string       `json:"last_fw_ver"`
	FirstOnline       wire.DateTime `json:"first_online"`
	UseNAT            bool          `json:"use_nat"`
	OperationSystem   *string       `json:"operation_system"`
	UdpxyAddr         *string       `json:"udpxy_addr"`
	DeviceType        *int64        `json:"device_type"`
	Class             string        `json:"class"`
	Model             *string       `json:"model"`
	Created           wire.DateTime `json:"created"`
	// Online: its websocket is open on the node that answers.
	Online bool `json:"online"`
}

// providerDevice renders d; online (nil: never) says whether its websocket
// is open.
func providerDevice(d readmodel.Device, online func(device int64) bool) providerDeviceJSON {
	v := providerDeviceJSON{
		ID:                d.ID,
		UniqueID:          d.UniqueID,
		Account:           d.Account,
		Provider:          d.Provider,
		IPAddr:            d.Address,
		MAC:               d.MAC,
		RemoteCustomField: d.RemoteCustomField,
		Comment:           d.Comment,
		LastOnline:        wire.NewDateTime(d.LastOnline, nil),
		LastFwVer:         d.Firmware,
		FirstOnline:       wire.NewDateTime(d.FirstOnline, nil),
		UseNAT:            d.UseNAT,
		OperationSystem:   d.OS,
		UdpxyAddr:         d.UdpxyAddr,
		DeviceType:        d.DeviceType,
		Class:             string(d.Class),
		Created:           wire.NewDateTime(d.Created, nil),
		Online:            online != nil && online(d.ID),
	}
	if d.Model != "" {
		m := d.Model
		v.Model = &m
	}
	return v
}

// providerNetworkJSON is an account network (TVIP's account_network).
type providerNetworkJSON struct {
	ID          int64   `json:"id"`
	Network     string  `json:"network"`
	Account     int64   `json:"account"`
	Description *string `json:"description"`
	Provider    int64   `json:"provider"`
}

func providerNetwork(n readmodel.AccountNetwork) providerNetworkJSON {
	return providerNetworkJSON{ID: n.ID, Network: n.Network.String(), Account: n.Account, Description: n.Description, Provider: n.Provider}
}

func encodeProviderNetwork(n readmodel.AccountNetwork) ([]byte, error) {
	return json.Marshal(providerNetwork(n))
}

// providerHistoryJSON is one entry of an account's history.
type providerHistoryJSON struct {
	Revision  uint64               `json:"revision"`
	Type      string               `json:"type"`
	Summary   string               `json:"summary"`
	Time      wire.DateTime        `json:"time"`
	Actor     string               `json:"actor"`
	RequestID string               `json:"request_id"`
	Changes   []providerChangeJSON `json:"changes"`
}

// providerChangeJSON is one field of a history entry. A secret field
// (pin_md5) shows that it changed, with old and new null.
type providerChangeJSON struct {
	Field  string `json:"field"`
	Old    any    `json:"old"`
	New    any    `json:"new"`
	Secret bool   `json:"secret,omitempty"`
}

func providerHistory(e query.HistoryEntry) providerHistoryJSON {
	v := providerHistoryJSON{
		Revision:  e.Revision,
		Type:      e.Type,
		Summary:   e.Summary,
		Time:      wire.NewDateTime(e.Time, nil),
		Actor:     e.Actor,
		RequestID: e.RequestID,
		Changes:   make([]providerChangeJSON, 0, len(e.Changes)),
	}
	for _, f := range e.Changes {
		ch := providerChangeJSON{Field: f.Field, Secret: f.Secret}
		if !f.Secret {
			ch.Old, ch.New = providerValue(f.Old), providerValue(f.New)
		}
		v.Changes = append(v.Changes, ch)
	}
	return v
}

// providerValue puts a history value in its wire form: date-times as the
// API writes them, device classes as strings.
func providerValue(v any) any {
	switch v := v.(type) {
	case time.Time:
		return wire.NewDateTime(v, nil)
	case domain.DeviceClass:
		return string(v)
	}
	return v
}

// providerFeedJSON is one entry of the change feed.
type providerFeedJSON struct {
	Position string        `json:"position"`
	Entity   string        `json:"entity"`
	ID       int64         `json:"id"`
	Account  int64         `json:"account,omitempty"`
	Type     string        `json:"type"`
	Time     wire.DateTime `json:"time"`
}

func providerFeedEntry(ch query.Change) providerFeedJSON {
	return providerFeedJSON{
		Position: FormatPosition(ch.Position),
		Entity:   ch.Entity,
		ID:       ch.ID,
		Account:  ch.Account,
		Type:     ch.Type,
		Time:     wire.NewDateTime(ch.Time, nil),
	}
}

// FormatPosition writes a log position for the change feed: "123" when its
// commit and prepare parts are equal (always, with the embedded store),
// else "commit/prepare" (EventStoreDB). Clients treat it as opaque.
func FormatPosition(p eventstore.Position) string {
	if p.Commit == p.Prepare {
		return strconv.FormatUint(p.Commit, 10)
	}
	return strconv.FormatUint(p.Commit, 10) + "/" + strconv.FormatUint(p.Prepare, 10)
}

// errFeedPosition is the field problem of a malformed position.
var errFeedPosition = errors.New(`must be a position from the change feed, such as "123" or "123/120"`)

// ParsePosition reads what FormatPosition writes; "" and "0" are the
// beginning of the log.
func ParsePosition(s string) (eventstore.Position, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return eventstore.Beginning, nil
	}
	commit, prepare, split := strings.Cut(s, "/")
	c, err := strconv.ParseUint(commit, 10, 64)
	if err != nil {
		return eventstore.Position{}, errFeedPosition
	}
	p := c
	if split {
		if p, err = strconv.ParseUint(prepare, 10, 64); err != nil {
			return eventstore.Position{}, errFeedPosition
		}
	}
	return eventstore.Position{Commit: c, Prepare: p}, nil
}

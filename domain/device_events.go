package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Device session event type names, in stream device-{id}.
const (
	DeviceConnectedType    = "DeviceConnected.v1"
	DeviceDisconnectedType = "DeviceDisconnected.v1"
	ViewingReportedType    = "ViewingReported.v1"
	DeviceLoggedInType     = "DeviceLoggedIn.v1"
)

// DeviceStream returns "device-{id}": the device's connections and viewing.
func DeviceStream(id int64) string { return "device-" + strconv.FormatInt(id, 10) }

// DeviceViewingStream returns "device-{id}-viewing-{hash of key}": the
// stream of the one viewing report a device sent under an idempotency key.
// Appended only while it does not exist, a retried report is recognised by
// the stream and the event ids (EventStoreDB's rule), not by the event ids
// alone.
func DeviceViewingStream(id int64, key string) string {
	sum := sha256.Sum256([]byte(key))
	return DeviceStream(id) + "-viewing-" + hex.EncodeToString(sum[:16])
}

// DeviceConnected records a device's websocket connection to a node.
type DeviceConnected struct {
	DeviceID int64  `json:"device_id"`
	Account  int64  `json:"account"`
	Provider int64  `json:"provider"`
	Node     string `json:"node,omitempty"`
	Address  string `json:"address,omitempty"` // the client's IP address
}

// DeviceLoggedIn records a device's login (POST /api/device/login): from
// where, and the firmware and operating system it reported. These are the
// device's ipaddr, last_fw_ver and operation_system, and with its
// connections its first_online and last_online.
type DeviceLoggedIn struct {
	DeviceID int64  `json:"device_id"`
	Account  int64  `json:"account"`
	Provider int64  `json:"provider"`
	Address  string `json:"address,omitempty"`
	Firmware string `json:"firmware,omitempty"`
	OS       string `json:"os,omitempty"`
}

// DeviceDisconnected records the end of a device's websocket connection:
// the close code sent or received and why.
type DeviceDisconnected struct {
	DeviceID int64  `json:"device_id"`
	Account  int64  `json:"account"`
	Provider int64  `json:"provider"`
	Node     string `json:"node,omitempty"`
	Code     int    `json:"code"`
	Reason   string `json:"reason,omitempty"`
	Seconds  int64  `json:"seconds"` // how long the connection lasted
}

// ViewingMode is how a channel was watched.
type ViewingMode string

// The viewing modes.
const (
	ViewingLive ViewingMode = "live"
	ViewingDVR  ViewingMode = "dvr"
)

// ViewingSession is one stretch of watching a channel.
type ViewingSession struct {
	Channel int64       `json:"channel"`
	Mode    ViewingMode `json:"mode"`
	Start   time.Time   `json:"start"` // UTC
	Seconds int64       `json:"seconds"`
}

// ViewingReported records viewing sessions a device reported (POST
// /api/device/viewing). Account, provider and class are those of the device
// when it reported, so statistics need no lookup.
type ViewingReported struct {
	DeviceID int64            `json:"device_id"`
	Account  int64            `json:"account"`
	Provider int64            `json:"provider"`
	Class    DeviceClass      `json:"class"`
	Sessions []ViewingSession `json:"sessions"`
}

// EventType implements Event.
func (DeviceConnected) EventType() string { return DeviceConnectedType }

// EventType implements Event.
func (DeviceDisconnected) EventType() string { return DeviceDisconnectedType }

// EventType implements Event.
func (ViewingReported) EventType() string { return ViewingReportedType }

// EventType implements Event.
func (DeviceLoggedIn) EventType() string { return DeviceLoggedInType }

func registerDeviceEvents(r *Registry) {
	r.Register(DeviceConnectedType, func() Event { return new(DeviceConnected) })
	r.Register(DeviceDisconnectedType, func() Event { return new(DeviceDisconnected) })
	r.Register(ViewingReportedType, func() Event { return new(ViewingReported) })
	r.Register(DeviceLoggedInType, func() Event { return new(DeviceLoggedIn) })
}

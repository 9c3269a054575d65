package wsgateway

import (
	"encoding/json"
	"errors"
	"fmt"
)

// MessageType is the type of a device → server message.
type MessageType string

// Device → server message types.
const (
	MessageAck     MessageType = "ack"
	MessageConfirm MessageType = "confirm"
)

// maxIDLen bounds the delivery id a device may send back.
const maxIDLen = 128

// ErrBadMessage is wrapped by ParseDeviceMessage errors.
var ErrBadMessage = errors.New("wsgateway: bad device message")

// DeviceMessage is a parsed device → server message.
type DeviceMessage struct {
	Type MessageType `json:"type"`
	ID   string      `json:"id"`
}

// ParseDeviceMessage decodes and validates a device message: type must be
// "ack" or "confirm" and id non-empty and at most 128 bytes. Unknown fields
// are ignored so devices may add some.
func ParseDeviceMessage(data []byte) (DeviceMessage, error) {
	var m DeviceMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return DeviceMessage{}, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	if m.Type != MessageAck && m.Type != MessageConfirm {
		return DeviceMessage{}, fmt.Errorf("%w: type %q", ErrBadMessage, m.Type)
	}
	if m.ID == "" || len(m.ID) > maxIDLen {
		return DeviceMessage{}, fmt.Errorf("%w: id of %d bytes", ErrBadMessage, len(m.ID))
	}
	return m, nil
}

// commandEnvelope is the server → device command message.
type commandEnvelope struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Command json.RawMessage `json:"command"`
}

// EncodeCommand builds the server → device message
// {"type":"command","id":deliveryID,"command":command}. command must be a
// JSON object (the command as sent by the provider). The result may be
// passed to Hub.Send for any number of devices.
func EncodeCommand(deliveryID string, command json.RawMessage) ([]byte, error) {
	if !json.Valid(command) {
		return nil, fmt.Errorf("wsgateway: encode command %q: invalid JSON", deliveryID)
	}
	return json.Marshal(commandEnvelope{Type: "command", ID: deliveryID, Command: command})
}

package wsgateway

import (
	"bytes"
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
	if m, ok := parseCompactMessage(data); ok {
		return m, nil
	}
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

// The compact forms of the two device messages, as devices send them
// (JSON.stringify of {type, id}; encoding/json of a map, keys sorted):
// every acknowledgement of a broadcast takes this path.
const (
	ackHead     = `{"type":"ack","id":"`
	confirmHead = `{"type":"confirm","id":"`
	compactTail = `"}`
	idHead      = `{"id":"`
	ackTail     = `","type":"ack"}`
	confirmTail = `","type":"confirm"}`
)

// parseCompactMessage decodes a device message in a compact form,
// {"type":"ack","id":"..."} or {"id":"...","type":"ack"} (or "confirm"),
// with an id of printable ASCII that needs no escape, without reflection;
// ok is false for anything else, which encoding/json then decodes. It
// answers exactly what the encoding/json path answers for the messages it
// takes.
func parseCompactMessage(data []byte) (DeviceMessage, bool) {
	var (
		m  DeviceMessage
		id []byte
		ok bool
	)
	switch {
	case bytes.HasPrefix(data, []byte(ackHead)):
		m.Type = MessageAck
		id, ok = bytes.CutSuffix(data[len(ackHead):], []byte(compactTail))
	case bytes.HasPrefix(data, []byte(confirmHead)):
		m.Type = MessageConfirm
		id, ok = bytes.CutSuffix(data[len(confirmHead):], []byte(compactTail))
	case bytes.HasPrefix(data, []byte(idHead)):
		rest := data[len(idHead):]
		if id, ok = bytes.CutSuffix(rest, []byte(ackTail)); ok {
			m.Type = MessageAck
		} else if id, ok = bytes.CutSuffix(rest, []byte(confirmTail)); ok {
			m.Type = MessageConfirm
		}
	}
	if !ok || len(id) == 0 || len(id) > maxIDLen {
		return DeviceMessage{}, false
	}
	for _, c := range id {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return DeviceMessage{}, false
		}
	}
	m.ID = string(id)
	return m, true
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

// commandHead is how every EncodeCommand result begins, up to the delivery
// id.
const commandHead = `{"type":"command","id":"`

// CommandMessage is a command object encoded once for many deliveries.
// Sending one command to thousands of devices differs per device only in
// the delivery id, so Encode splices the id between a shared head and tail:
// one allocation and copy per device, no JSON work.
type CommandMessage struct {
	command json.RawMessage
	tail    []byte // `","command":{...}}`
}

// NewCommandMessage validates and encodes command (a JSON object) for
// Encode.
func NewCommandMessage(command json.RawMessage) (*CommandMessage, error) {
	whole, err := EncodeCommand("", command)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(whole, []byte(commandHead)) {
		return nil, fmt.Errorf("wsgateway: encode command: unexpected envelope %.40q", whole)
	}
	return &CommandMessage{command: command, tail: whole[len(commandHead):]}, nil
}

// Encode returns the server → device message for deliveryID, byte for byte
// what EncodeCommand(deliveryID, command) returns. The result is the
// caller's.
func (m *CommandMessage) Encode(deliveryID string) []byte {
	if !plainJSONString(deliveryID) {
		msg, _ := EncodeCommand(deliveryID, m.command) // valid: checked by NewCommandMessage
		return msg
	}
	b := make([]byte, 0, len(commandHead)+len(deliveryID)+len(m.tail))
	b = append(b, commandHead...)
	b = append(b, deliveryID...)
	return append(b, m.tail...)
}

// plainJSONString reports whether encoding/json writes s unchanged between
// quotes: printable ASCII other than the characters it escapes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e:
			return false
		case c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			return false
		}
	}
	return true
}

package domain

import (
	"encoding/json"
	"time"
)

// Command event type names. CommandsIssued, CommandsSent and CommandExpired
// live in command-{send id}; CommandsAcked and CommandsConfirmed in
// receipt-{send id}.
const (
	CommandsIssuedType    = "CommandsIssued.v1"
	CommandsSentType      = "CommandsSent.v1"
	CommandExpiredType    = "CommandExpired.v1"
	CommandsAckedType     = "CommandsAcked.v1"
	CommandsConfirmedType = "CommandsConfirmed.v1"
)

// IssuedCommand is one validated command of a send. Object is the command
// object as the provider sent it; devices receive it unchanged.
type IssuedCommand struct {
	Kind        CommandKind     `json:"kind"`
	MessageType MessageType     `json:"type,omitempty"`
	Channel     int64           `json:"channel,omitempty"`
	PostTime    time.Time       `json:"post_time,omitzero"` // zero: at issue
	TTL         time.Time       `json:"ttl,omitzero"`       // zero: none
	Object      json.RawMessage `json:"object"`
}

// CommandsIssued records a provider's send (POST
// /api/provider/commands/send/...). Scope is the provider the send belongs
// to: the issuing admin's, or for a superadmin the one provider all targets
// share (nil when they span providers); receipts are shown only within it.
type CommandsIssued struct {
	SendID     int64           `json:"send_id"`
	Recipients Recipients      `json:"recipients"`
	IDs        []int64         `json:"ids"`
	Commands   []IssuedCommand `json:"commands"`
	Scope      *int64          `json:"scope,omitempty"`
	IssuedAt   time.Time       `json:"issued_at"`
}

// CommandsSent records that a node claimed the delivery of command Index of
// the send to Devices and handed it to their connections. It is appended
// with an exact expected revision of command-{id} before the messages are
// written, so two nodes never both deliver to one device: a device gets a
// command at most once.
//
// The send-time round of a command without ttl records itself even when it
// claims no device (Devices empty): the command was handled on time. Late
// marks the claims of a late delivery: of a command without ttl whose send
// time passed while no node ran.
type CommandsSent struct {
	SendID  int64   `json:"send_id"`
	Index   int     `json:"index"`
	Devices []int64 `json:"devices"`
	Node    string  `json:"node,omitempty"`
	Late    bool    `json:"late,omitempty"`
}

// CommandExpired records that command Index is delivered to no one from
// then on: its ttl passed (Reason empty), or one of the Expired* reasons.
type CommandExpired struct {
	SendID int64  `json:"send_id"`
	Index  int    `json:"index"`
	Reason string `json:"reason,omitempty"`
}

// Reasons of CommandExpired for commands without ttl that were not handled
// at their send time.
const (
	// ExpiredMissedSendTime: no node ran at the send time; the first node to
	// start delivered it late to the target devices connected within its
	// late window (the CommandsSent marked Late), then expired it.
	ExpiredMissedSendTime = "missed_send_time"
	// ExpiredTooLate: no node handled it in time to deliver it at all (a
	// node started too long after the send time, or a running node was
	// stalled past the grace): it went to no one.
	ExpiredTooLate = "too_late"
)

// CommandsAcked records devices that acknowledged receipt of command Index.
type CommandsAcked struct {
	SendID  int64   `json:"send_id"`
	Index   int     `json:"index"`
	Devices []int64 `json:"devices"`
}

// CommandsConfirmed records devices whose user confirmed the confirm message
// of command Index.
type CommandsConfirmed struct {
	SendID  int64   `json:"send_id"`
	Index   int     `json:"index"`
	Devices []int64 `json:"devices"`
}

// EventType implements Event.
func (CommandsIssued) EventType() string { return CommandsIssuedType }

// EventType implements Event.
func (CommandsSent) EventType() string { return CommandsSentType }

// EventType implements Event.
func (CommandExpired) EventType() string { return CommandExpiredType }

// EventType implements Event.
func (CommandsAcked) EventType() string { return CommandsAckedType }

// EventType implements Event.
func (CommandsConfirmed) EventType() string { return CommandsConfirmedType }

func registerCommandEvents(r *Registry) {
	r.Register(CommandsIssuedType, func() Event { return new(CommandsIssued) })
	r.Register(CommandsSentType, func() Event { return new(CommandsSent) })
	r.Register(CommandExpiredType, func() Event { return new(CommandExpired) })
	r.Register(CommandsAckedType, func() Event { return new(CommandsAcked) })
	r.Register(CommandsConfirmedType, func() Event { return new(CommandsConfirmed) })
}

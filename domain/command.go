package domain

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Recipients is the class of ids a command send addresses: the
// {recipients} of POST /api/provider/commands/send/{recipients}.
type Recipients string

// The recipient classes.
const (
	RecipientProviders Recipients = "providers"
	RecipientAccounts  Recipients = "accounts"
	RecipientDevices   Recipients = "devices"
)

// ParseRecipients returns the recipient class named s.
func ParseRecipients(s string) (Recipients, error) {
	switch r := Recipients(s); r {
	case RecipientProviders, RecipientAccounts, RecipientDevices:
		return r, nil
	}
	return "", fmt.Errorf("must be one of providers, accounts, devices")
}

// CommandKind is the `command` field of a command object: the five kinds of
// the Provider API, plus `update`.
type CommandKind string

// The command kinds.
const (
	CommandUserMessage        CommandKind = "user_message"
	CommandRefreshChannelList CommandKind = "refresh_channel_list"
	CommandReinit             CommandKind = "reinit"
	CommandRestart            CommandKind = "restart"
	CommandSwitchToChannel    CommandKind = "switch_to_channel"
	// CommandUpdate drops the target devices' authorisation: their tokens
	// stop working when the command is issued, so they log in again.
	CommandUpdate CommandKind = "update"
)

// CommandKinds lists every command kind.
func CommandKinds() []CommandKind {
	return []CommandKind{CommandUserMessage, CommandRefreshChannelList, CommandReinit, CommandRestart, CommandSwitchToChannel, CommandUpdate}
}

// MessageType is the `type` of a user_message.
type MessageType string

// The user_message types. Confirm messages need the user's confirmation,
// which the device reports back.
const (
	MessageNotify  MessageType = "notify"
	MessageConfirm MessageType = "confirm"
	MessageTicker  MessageType = "ticker"
)

// Limits of a command send.
const (
	MaxSendIDs           = 10000
	MaxSendCommands      = 16
	MaxCommandTextLen    = 4096
	MaxCommandTitleLen   = 256
	MaxCommandDelay      = 86400 // seconds a notify stays on screen
	MaxCommandObjectSize = 16 << 10
	// MaxCommandHorizon bounds post_time and ttl: a command scheduled more
	// than a year ahead is a mistake (a ttl in milliseconds, for one).
	MaxCommandHorizon = 366 * 24 * time.Hour
	// MaxReportedIDs bounds how many bad elements of ids one error names,
	// so that a list of 10,000 wrong ids gets a readable answer.
	MaxReportedIDs = 20
)

var (
	commandTextRule  = textRule{max: MaxCommandTextLen, required: true, multiline: true}
	commandTitleRule = textRule{max: MaxCommandTitleLen}
)

// CommandSpec is one command object of a send, decoded by the HTTP layer.
// Object is the object exactly as the provider sent it (compacted JSON):
// devices receive it unchanged, including fields tvsm does not know.
type CommandSpec struct {
	Kind        CommandKind
	MessageType MessageType // user_message only
	Text        string      // user_message
	Title       string      // user_message
	Delay       *int        // user_message notify: seconds on screen
	UseAsPush   *bool       // user_message
	Channel     int64       // switch_to_channel
	PostTime    time.Time   // zero: send now
	TTL         time.Time   // zero: no ttl (only devices connected at send time)
	Object      json.RawMessage
}

// SendCommands is a provider's request to push commands to devices.
// SendID is allocated outside the domain. Scope is the one provider the
// send belongs to: the issuing admin's, or for a superadmin's send whose
// targets all belong to one provider, that provider; nil when it spans
// providers. It decides who may see the receipts. Whether the ids exist
// and lie in the admin's scope is checked by the application layer, which
// sees the read model.
type SendCommands struct {
	SendID     int64
	Recipients Recipients
	IDs        []int64
	Commands   []CommandSpec
	Broadcast  bool
	Scope      *int64
}

// Stream returns the send's stream: command-{send id}.
func (c SendCommands) Stream() string { return CommandStream(c.SendID) }

// CommandSend is a command-{id} stream as the decision to issue it sees
// it: issued or not. Deliveries and expiry are the dispatcher's business and
// receipts live in their own stream; neither changes this state.
type CommandSend struct {
	SendID   int64
	IssuedAt time.Time
}

// Issued reports whether the send was issued.
func (s CommandSend) Issued() bool { return s.SendID != 0 }

// CommandSendDecider returns the decider of a send: issuing it once.
// Issuing an id that was issued before fails with ErrAlreadyExists.
func CommandSendDecider() Decider[CommandSend, SendCommands] {
	return Decider[CommandSend, SendCommands]{
		Initial: func() CommandSend { return CommandSend{} },
		Evolve: func(s CommandSend, e Event) CommandSend {
			if e, ok := e.(CommandsIssued); ok {
				return CommandSend{SendID: e.SendID, IssuedAt: e.IssuedAt}
			}
			return s
		},
		Decide: func(s CommandSend, c SendCommands, now time.Time) ([]Event, error) {
			if s.Issued() {
				return nil, alreadyExists("send", c.SendID)
			}
			issued, err := IssueCommands(c, now)
			if err != nil {
				return nil, err
			}
			return []Event{issued}, nil
		},
	}
}

// CommandField names field i of the commands list on the wire:
// "commands[2].ttl".
func CommandField(i int, field string) string {
	return "commands[" + strconv.Itoa(i) + "]." + field
}

// IssueCommands validates a send at now and returns the event that records
// it. Every bad field is reported at once, named as on the wire (ids,
// commands[0].type, ...).
func IssueCommands(c SendCommands, now time.Time) (CommandsIssued, error) {
	var p problems
	p.add("send_id", checkID(c.SendID))
	if _, err := ParseRecipients(string(c.Recipients)); err != nil {
		p.addErr("recipients", err)
	}
	if c.Broadcast {
		p.add("broadcast", "only false is supported")
	}
	ids := checkSendIDs(&p, c.IDs)
	switch {
	case len(c.Commands) == 0:
		p.add("commands", problemRequired)
	case len(c.Commands) > MaxSendCommands:
		p.add("commands", fmt.Sprintf("must hold at most %d commands", MaxSendCommands))
	}
	now = normTime(now)
	issued := CommandsIssued{SendID: c.SendID, Recipients: c.Recipients, IDs: ids, Scope: c.Scope, IssuedAt: now}
	for i, spec := range c.Commands {
		if i >= MaxSendCommands {
			break
		}
		issued.Commands = append(issued.Commands, checkCommand(&p, i, spec, now))
	}
	if err := p.err(); err != nil {
		return CommandsIssued{}, err
	}
	return issued, nil
}

// SendIDField names element i of the ids list on the wire: "ids[3]".
func SendIDField(i int) string { return "ids[" + strconv.Itoa(i) + "]" }

// checkSendIDs validates the ids of a send, naming a bad element by its
// index, and returns them without repeats, in the order given.
func checkSendIDs(p *problems, ids []int64) []int64 {
	switch {
	case len(ids) == 0:
		p.add("ids", problemRequired)
		return nil
	case len(ids) > MaxSendIDs:
		p.add("ids", fmt.Sprintf("must hold at most %d ids", MaxSendIDs))
		return nil
	}
	out := make([]int64, 0, len(ids))
	seen := make(map[int64]struct{}, len(ids))
	bad := 0
	for i, id := range ids {
		if id <= 0 {
			if bad++; bad <= MaxReportedIDs {
				p.add(SendIDField(i), problemPositive)
			}
			continue
		}
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}

// checkCommand validates command i and returns its issued form.
func checkCommand(p *problems, i int, c CommandSpec, now time.Time) IssuedCommand {
	field := func(name string) string { return CommandField(i, name) }
	out := IssuedCommand{Kind: c.Kind, Object: c.Object}
	switch c.Kind {
	case CommandUserMessage:
		switch c.MessageType {
		case MessageNotify, MessageConfirm, MessageTicker:
			out.MessageType = c.MessageType
		case "":
			p.add(field("type"), problemRequired)
		default:
			p.add(field("type"), "must be one of notify, confirm, ticker")
		}
		p.add(field("text"), commandTextRule.check(c.Text))
		p.add(field("title"), commandTitleRule.check(c.Title))
		if c.Delay != nil && (*c.Delay < 0 || *c.Delay > MaxCommandDelay) {
			p.add(field("delay"), fmt.Sprintf("must be between 0 and %d seconds", MaxCommandDelay))
		}
	case CommandSwitchToChannel:
		if c.Channel == 0 {
			p.add(field("channel"), problemRequired)
		} else {
			p.add(field("channel"), checkID(c.Channel))
		}
		out.Channel = c.Channel
	case CommandRefreshChannelList, CommandReinit, CommandRestart, CommandUpdate:
	case "":
		p.add(field("command"), problemRequired)
	default:
		p.add(field("command"), "must be one of "+joinKinds())
	}
	if !c.PostTime.IsZero() {
		out.PostTime = normTime(c.PostTime)
		if out.PostTime.After(now.Add(MaxCommandHorizon)) {
			p.add(field("post_time"), "must be within a year from now")
		}
	}
	if !c.TTL.IsZero() {
		out.TTL = normTime(c.TTL)
		switch {
		case !out.TTL.After(now):
			p.add(field("ttl"), "has already passed")
		case !out.PostTime.IsZero() && !out.TTL.After(out.PostTime):
			p.add(field("ttl"), "must be after post_time")
		case out.TTL.After(now.Add(MaxCommandHorizon)):
			p.add(field("ttl"), "must be within a year from now (a Unix time in seconds)")
		}
	}
	switch {
	case len(c.Object) == 0 || !json.Valid(c.Object) || c.Object[0] != '{':
		p.add(field("command"), "must be a JSON object")
	case len(c.Object) > MaxCommandObjectSize:
		p.add(field("command"), fmt.Sprintf("must be at most %d bytes of JSON", MaxCommandObjectSize))
	}
	return out
}

func joinKinds() string {
	names := make([]string, 0, len(CommandKinds()))
	for _, k := range CommandKinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// SendStart returns when the command may first be sent: its post_time, or
// the time it was issued when it has none or one already past (a past
// post_time means "now").
func (c IssuedCommand) SendStart(issuedAt time.Time) time.Time {
	if c.PostTime.After(issuedAt) {
		return c.PostTime
	}
	return issuedAt
}

// Targets reports whether a device of account on provider is addressed by
// the send.
func (e CommandsIssued) Targets(device, account, provider int64) bool {
	var id int64
	switch e.Recipients {
	case RecipientProviders:
		id = provider
	case RecipientAccounts:
		id = account
	case RecipientDevices:
		id = device
	default:
		return false
	}
	for _, x := range e.IDs {
		if x == id {
			return true
		}
	}
	return false
}

// CommandStream returns "command-{send id}": the send and its deliveries.
func CommandStream(sendID int64) string { return "command-" + strconv.FormatInt(sendID, 10) }

// ReceiptStream returns "receipt-{send id}": acks and confirmations of the
// send's deliveries. They are kept apart from command-{id} so that they never
// conflict with the optimistic-concurrency appends of delivery claims.
func ReceiptStream(sendID int64) string { return "receipt-" + strconv.FormatInt(sendID, 10) }

// DeliveryID names the delivery of command index of send to device, as the
// device sees it and echoes in ack and confirm: "{send}.{index}.{device}".
func DeliveryID(sendID int64, index int, device int64) string {
	return strconv.FormatInt(sendID, 10) + "." + strconv.Itoa(index) + "." + strconv.FormatInt(device, 10)
}

// ParseDeliveryID is the inverse of DeliveryID: it accepts exactly what
// DeliveryID writes (no signs, no leading zeros), since devices echo the id
// they were sent.
func ParseDeliveryID(s string) (sendID int64, index int, device int64, ok bool) {
	a, rest, ok1 := strings.Cut(s, ".")
	b, c, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	sendID, ok1 = canonicalInt(a)
	idx, ok2 := canonicalInt(b)
	device, ok3 := canonicalInt(c)
	if !ok1 || !ok2 || !ok3 || sendID <= 0 || device <= 0 || idx >= MaxSendCommands {
		return 0, 0, 0, false
	}
	return sendID, int(idx), device, true
}

// canonicalInt parses a non-negative decimal integer written as
// strconv.FormatInt writes it.
func canonicalInt(s string) (int64, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

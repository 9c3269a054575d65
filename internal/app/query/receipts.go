package query

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"tvsm/domain"
)

// CommandState is where one command of a send stands (TVIP's Provider API
// defines no delivery state for a delayed command; these are ours).
type CommandState string

// The command states.
const (
	// CommandQueued: before its post_time; nothing sent yet.
	CommandQueued CommandState = "queued"
	// CommandSending: past its send time and before its ttl: devices that
	// connect now still get it; or a command without ttl in its late
	// delivery (its send time passed while no node ran).
	CommandSending CommandState = "sending"
	// CommandDone: a command without ttl past its send time; it went to the
	// devices connected then, and no one else will get it.
	CommandDone CommandState = "done"
	// CommandExpired: its ttl passed, or the dispatcher recorded it as
	// expired (CommandView.Reason says why); no one gets it from now on.
	CommandExpired CommandState = "expired"
)

// ExpiredTTL is CommandView.Reason of a command whose ttl passed; the
// others are the dispatcher's (domain.ExpiredMissedSendTime,
// domain.ExpiredTooLate).
const ExpiredTTL = "ttl"

// ReceiptStatus is how far one command got on one device.
type ReceiptStatus string

// The receipt statuses, from the furthest: confirmed (the user confirmed a
// confirm message), acked (the device acknowledged it), sent (handed to
// the device's connection), expired (sent, never acknowledged, and the
// command expired).
const (
	ReceiptSent      ReceiptStatus = "sent"
	ReceiptAcked     ReceiptStatus = "acked"
	ReceiptConfirmed ReceiptStatus = "confirmed"
	ReceiptExpired   ReceiptStatus = "expired"
)

// SendView is a send and what became of it (GET /api/provider/commands/{id}).
type SendView struct {
	SendID     int64
	Recipients domain.Recipients
	IDs        []int64
	// Scope is the provider the send belongs to (domain.SendCommands);
	// nil when it spans providers: then only superadmins see it.
	Scope    *int64
	Issued   time.Time
	IssuedBy domain.Actor
	Commands []CommandView
}

// CommandView is one command of a send.
type CommandView struct {
	Index   int
	Command domain.IssuedCommand
	State   CommandState
	// Reason says why an expired command expired (ExpiredTTL,
	// domain.ExpiredMissedSendTime, domain.ExpiredTooLate); empty otherwise.
	Reason string
	// Sent, Acked and Confirmed count the devices that got that far.
	Sent, Acked, Confirmed int
	// Receipts has one entry per device the command was sent to, by device
	// id.
	Receipts []DeviceReceipt
}

// DeviceReceipt is what one device did with one command. The times are
// when each step was recorded; zero when it did not happen.
type DeviceReceipt struct {
	Device                 int64
	Status                 ReceiptStatus
	Sent, Acked, Confirmed time.Time
}

// errNoIssue: a command stream without its CommandsIssued.
var errNoIssue = errors.New("send was never issued")

// FoldSend folds the events of command-{id} and receipt-{id}, in any order
// and with repeats, into the send's view at now. Each step of a device
// counts at its first record. A receipt of a device the command was never
// sent to is not a receipt and is left out (the dispatcher records the
// delivery before the device can acknowledge it). It fails with
// domain.ErrNotFound when the events hold no CommandsIssued.
func FoldSend(events []domain.Envelope, now time.Time) (SendView, error) {
	var (
		v       SendView
		issued  bool
		expired = map[int]string{} // reasons, by index
		late    = map[int]bool{}   // late delivery under way
		steps   = map[int]map[int64]*DeviceReceipt{}
	)
	for _, env := range events {
		switch e := env.Event.(type) {
		case domain.CommandsIssued:
			issued = true
			v.SendID, v.Recipients, v.IDs, v.Scope, v.Issued, v.IssuedBy = e.SendID, e.Recipients, e.IDs, e.Scope, e.IssuedAt, env.Actor
			v.Commands = make([]CommandView, len(e.Commands))
			for i, c := range e.Commands {
				v.Commands[i] = CommandView{Index: i, Command: c}
			}
		case domain.CommandsSent:
			late[e.Index] = late[e.Index] || e.Late
			recordStep(steps, e.Index, e.Devices, env.OccurredAt, func(r *DeviceReceipt) *time.Time { return &r.Sent })
		case domain.CommandsAcked:
			recordStep(steps, e.Index, e.Devices, env.OccurredAt, func(r *DeviceReceipt) *time.Time { return &r.Acked })
		case domain.CommandsConfirmed:
			recordStep(steps, e.Index, e.Devices, env.OccurredAt, func(r *DeviceReceipt) *time.Time { return &r.Confirmed })
		case domain.CommandExpired:
			expired[e.Index] = cmp.Or(e.Reason, ExpiredTTL)
		}
	}
	if !issued {
		return SendView{}, errors.Join(errNoIssue, domain.ErrNotFound)
	}
	for i := range v.Commands {
		c := &v.Commands[i]
		reason, isExpired := expired[i]
		c.State = commandState(c.Command, v.Issued, now, isExpired, late[i])
		if c.State == CommandExpired {
			c.Reason = cmp.Or(reason, ExpiredTTL)
		}
		c.Receipts = receiptsOf(steps[i], c.State == CommandExpired)
		for _, r := range c.Receipts {
			c.Sent++
			c.Acked += boolInt(!r.Acked.IsZero())
			c.Confirmed += boolInt(!r.Confirmed.IsZero())
		}
	}
	return v, nil
}

// recordStep records at as the time of a step of devices on command index,
// keeping the earliest time seen.
func recordStep(steps map[int]map[int64]*DeviceReceipt, index int, devices []int64, at time.Time, step func(*DeviceReceipt) *time.Time) {
	byDevice := steps[index]
	if byDevice == nil {
		byDevice = map[int64]*DeviceReceipt{}
		steps[index] = byDevice
	}
	for _, d := range devices {
		r := byDevice[d]
		if r == nil {
			r = &DeviceReceipt{Device: d}
			byDevice[d] = r
		}
		if t := step(r); t.IsZero() || at.Before(*t) {
			*t = at
		}
	}
}

// receiptsOf returns the receipts of the devices a command was sent to,
// by device id, with their status.
func receiptsOf(byDevice map[int64]*DeviceReceipt, expired bool) []DeviceReceipt {
	out := make([]DeviceReceipt, 0, len(byDevice))
	for _, r := range byDevice {
		if r.Sent.IsZero() {
			continue
		}
		switch {
		case !r.Confirmed.IsZero():
			r.Status = ReceiptConfirmed
		case !r.Acked.IsZero():
			r.Status = ReceiptAcked
		case expired:
			r.Status = ReceiptExpired
		default:
			r.Status = ReceiptSent
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b DeviceReceipt) int { return cmp.Compare(a.Device, b.Device) })
	return out
}

// commandState is the state of command c of a send issued at issuedAt,
// at now; expired tells whether its expiry was recorded, late whether a
// late delivery was.
func commandState(c domain.IssuedCommand, issuedAt, now time.Time, expired, late bool) CommandState {
	switch {
	case expired, !c.TTL.IsZero() && !now.Before(c.TTL):
		return CommandExpired
	case now.Before(c.SendStart(issuedAt)):
		return CommandQueued
	case c.TTL.IsZero() && !late:
		return CommandDone
	}
	return CommandSending
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

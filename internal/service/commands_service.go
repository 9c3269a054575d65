package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/app"
)

// SendIDKind is the id kind of command sends (the ids-send stream).
const SendIDKind = "send"

// SendInput is a command send as the HTTP layer decoded it (spec §4.1):
// POST /api/provider/commands/send/{recipients}?broadcast=...
type SendInput struct {
	Recipients domain.Recipients
	IDs        []int64
	Commands   []domain.CommandSpec
	Broadcast  bool
}

// SendCommands records a send in command-{send id} and answers with
// encode's rendering of the new send id. Nothing is appended unless the
// whole send is valid: every field (domain.IssueCommands), every id known
// to the read model (400 naming ids[i]), every switch_to_channel channel
// known (400 naming commands[i].channel), and every id inside the caller's
// provider scope (ErrForbidden). The answer means the send is durable; it
// waits for the read model only when the send holds an update command (the
// dispatcher follows the log, and the read model shows nothing else of
// sends). With the caller's Idempotency-Key the send is recorded at most
// once and a retry gets the same send id.
func (s *Service) SendCommands(ctx context.Context, c Caller, in SendInput, encode BodyEncoder[int64]) ([]byte, error) {
	now := s.now()
	cmd := domain.SendCommands{Recipients: in.Recipients, IDs: in.IDs, Commands: in.Commands, Broadcast: in.Broadcast}
	scope, err := s.checkSend(c, cmd, now)
	if err != nil {
		return nil, err
	}
	cmd.Scope = scope
	fingerprint, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("service: send: fingerprint: %w", err)
	}
	return createOnce(ctx, s, c, SendIDKind, func() string { return "send " + string(fingerprint) }, encode,
		func(ctx context.Context, pins *app.Pins) (eventstore.Position, func() (int64, error), error) {
			return s.issueSend(ctx, c, pins, cmd, now)
		})
}

// issueSend appends the checked send cmd under a new send id, deciding at
// now, the time it was checked at.
func (s *Service) issueSend(ctx context.Context, c Caller, pins *app.Pins, cmd domain.SendCommands, now time.Time) (eventstore.Position, func() (int64, error), error) {
	id, err := pins.ID(ctx, SendIDKind)
	if err != nil {
		return eventstore.Position{}, nil, err
	}
	cmd.SendID = id
	meta := c.meta()
	meta.Now = now
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.CommandSendDecider(), cmd, meta)
	if err != nil {
		return eventstore.Position{}, nil, err
	}
	var wait eventstore.Position // zero: nothing to wait for
	if dropsAuthorisation(cmd.Commands) {
		wait = res.Position
	}
	return wait, func() (int64, error) { return id, nil }, nil
}

// dropsAuthorisation reports whether a send holds an update command, which
// the read model applies by refusing the targets' tokens: such a send
// answers once that is in force on this node, like any other write.
func dropsAuthorisation(specs []domain.CommandSpec) bool {
	for _, c := range specs {
		if c.Kind == domain.CommandUpdate {
			return true
		}
	}
	return false
}

// checkSend validates a send before an id is taken and returns its scope:
// the caller's provider, or for a superadmin the one provider every target
// belongs to (nil when they span several). One answer names every bad
// field; scope is checked only on an otherwise valid send.
func (s *Service) checkSend(c Caller, cmd domain.SendCommands, now time.Time) (*int64, error) {
	probe := cmd
	probe.SendID = 1
	_, err := domain.IssueCommands(probe, now)
	var extra map[string]string
	s.checkSendChannels(cmd.Commands, &extra)
	owners := s.sendOwners(cmd, &extra)
	if err := withProblems(err, extra); err != nil {
		return nil, err
	}
	return sendScope(c, cmd, owners)
}

// checkSendChannels records switch_to_channel commands whose channel does
// not exist.
func (s *Service) checkSendChannels(specs []domain.CommandSpec, extra *map[string]string) {
	for i, spec := range specs {
		if spec.Kind != domain.CommandSwitchToChannel || spec.Channel <= 0 {
			continue // the domain reports a missing or bad channel
		}
		if _, ok := s.cfg.Model.Channel(spec.Channel); !ok {
			addFieldProblem(extra, domain.CommandField(i, "channel"), fmt.Sprintf("unknown channel %d", spec.Channel))
		}
	}
}

// sendOwners returns the provider of each target id (0 where the domain
// reports the id, or it is unknown: recorded in extra, naming at most
// domain.MaxReportedIDs of them).
func (s *Service) sendOwners(cmd domain.SendCommands, extra *map[string]string) []int64 {
	if len(cmd.IDs) > domain.MaxSendIDs {
		return nil
	}
	owner := s.ownerLookup(cmd.Recipients)
	if owner == nil {
		return nil
	}
	owners := make([]int64, len(cmd.IDs))
	unknown := 0
	for i, id := range cmd.IDs {
		if id <= 0 {
			continue
		}
		p, ok := owner(id)
		if !ok {
			if unknown++; unknown <= domain.MaxReportedIDs {
				addFieldProblem(extra, domain.SendIDField(i), fmt.Sprintf("unknown %s %d", recipientNoun(cmd.Recipients), id))
			}
			continue
		}
		owners[i] = p
	}
	return owners
}

// ownerLookup returns how to find the provider of an id of recipients in
// the read model; nil for an unknown class.
func (s *Service) ownerLookup(r domain.Recipients) func(int64) (int64, bool) {
	m := s.cfg.Model
	switch r {
	case domain.RecipientProviders:
		return func(id int64) (int64, bool) { _, ok := m.Provider(id); return id, ok }
	case domain.RecipientAccounts:
		return func(id int64) (int64, bool) { a, ok := m.Account(id); return a.Provider, ok }
	case domain.RecipientDevices:
		return func(id int64) (int64, bool) { d, ok := m.Device(id); return d.Provider, ok }
	}
	return nil
}

// recipientNoun names one id of recipients: "account".
func recipientNoun(r domain.Recipients) string { return strings.TrimSuffix(string(r), "s") }

// sendScope checks that every target lies in the caller's scope and
// returns the send's scope.
func sendScope(c Caller, cmd domain.SendCommands, owners []int64) (*int64, error) {
	for i, p := range owners {
		if err := c.checkScope(p); err != nil {
			return nil, fmt.Errorf("%s: %s %d: %w", domain.SendIDField(i), recipientNoun(cmd.Recipients), cmd.IDs[i], err)
		}
	}
	if c.Scope != nil {
		p := *c.Scope
		return &p, nil
	}
	return soleProvider(owners), nil
}

// soleProvider returns the provider all owners share, or nil.
func soleProvider(owners []int64) *int64 {
	if len(owners) == 0 {
		return nil
	}
	p := owners[0]
	for _, o := range owners[1:] {
		if o != p {
			return nil
		}
	}
	return &p
}

// CommandReceipts returns send id with what became of each of its commands
// on each device, folded (FoldSend) from command-{id} and receipt-{id} at
// the service's time. A send is shown to superadmins and to the admins of
// its scope's provider: ErrForbidden for others, as other Provider API
// reads answer; domain.ErrNotFound when there is no such send.
func (s *Service) CommandReceipts(ctx context.Context, c Caller, id int64) (SendView, error) {
	// Receipts first: a receipt read then had its delivery recorded before
	// it, so the command stream read after shows the delivery too.
	receipts, err := s.readEnvelopes(ctx, domain.ReceiptStream(id))
	if err != nil && !errors.Is(err, eventstore.ErrStreamNotFound) {
		return SendView{}, err
	}
	events, err := s.readEnvelopes(ctx, domain.CommandStream(id))
	if errors.Is(err, eventstore.ErrStreamNotFound) {
		return SendView{}, fmt.Errorf("send %d: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return SendView{}, err
	}
	v, err := FoldSend(append(events, receipts...), s.now())
	if err != nil {
		return SendView{}, fmt.Errorf("send %d: %w", id, err)
	}
	if c.Scope != nil && (v.Scope == nil || *v.Scope != *c.Scope) {
		return SendView{}, fmt.Errorf("send %d: %w", id, ErrForbidden)
	}
	return v, nil
}

// readEnvelopes reads a whole stream with each event's metadata.
func (s *Service) readEnvelopes(ctx context.Context, stream string) ([]domain.Envelope, error) {
	out, head, err := record.Fold(ctx, s.rec, stream, record.Head{}, nil,
		func(out []domain.Envelope, e domain.Event, rec eventstore.RecordedEvent) ([]domain.Envelope, error) {
			env, err := record.Envelope(e, rec)
			return append(out, env), err
		})
	if err != nil {
		return nil, err
	}
	if !head.Exists {
		return nil, fmt.Errorf("read %s: %w", stream, eventstore.ErrStreamNotFound)
	}
	return out, nil
}

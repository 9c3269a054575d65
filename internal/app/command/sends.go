package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"tvsm/domain"
	"tvsm/internal/app"
)

// SendIDKind is the id kind of command sends (the ids-send stream).
const SendIDKind = "send"

// SendInput is a command send as the HTTP layer decoded it from
// POST /api/provider/commands/send/{recipients}?broadcast=...
type SendInput struct {
	Recipients domain.Recipients
	IDs        []int64
	Commands   []domain.CommandSpec
	Broadcast  bool
}

// Sends handles the sending of commands to devices.
type Sends struct{ w *writer }

// Send records a send in command-{send id} and returns the new send id. Nothing is appended unless the
// whole send is valid: every field (domain.IssueCommands), every id known
// to the read model (400 naming ids[i]), every switch_to_channel channel
// known (400 naming commands[i].channel), and every id inside the caller's
// provider scope (ErrForbidden). The answer means the send is durable; it
// waits for the read model only when the send holds an update command (the
// dispatcher follows the log, and the read model shows nothing else of
// sends).
func (h *Sends) Send(ctx context.Context, c app.Caller, in SendInput) (int64, error) {
	w := h.w
	now := w.now()
	cmd := domain.SendCommands{Recipients: in.Recipients, IDs: in.IDs, Commands: in.Commands, Broadcast: in.Broadcast}
	scope, err := h.check(c, cmd, now)
	if err != nil {
		return 0, err
	}
	cmd.Scope = scope
	id, err := w.x.NewID(ctx, SendIDKind)
	if err != nil {
		return 0, err
	}
	cmd.SendID = id
	meta := c.Meta()
	meta.Now = now // the time it was checked at
	claims := w.cfg.SendClaims
	res, err := app.Execute(ctx, w.x, cmd.Stream(), withClaim(ctx, domain.CommandSendDecider(), claims), cmd, meta)
	if err != nil {
		return 0, err
	}
	if rev, ok := res.Revision.Exact(); ok && claims != nil {
		claims.SendAppended(id, rev)
	}
	// Answered once the read model shows the send, like any other write:
	// it lists the send (GET /commands), and an update command in it is in
	// force on this node.
	if err := w.written(ctx, res.Position); err != nil {
		return 0, err
	}
	return id, nil
}

// withClaim makes d's send carry this node's delivery claim in its append
// (claims may be nil: no claim). A retried append carries the same events;
// a decision made again asks for the claim again, which replaces the one
// before.
func withClaim(ctx context.Context, d domain.Decider[domain.CommandSend, domain.SendCommands], claims SendClaimer) domain.Decider[domain.CommandSend, domain.SendCommands] {
	if claims == nil {
		return d
	}
	decide := d.Decide
	d.Decide = func(s domain.CommandSend, c domain.SendCommands, now time.Time) ([]domain.Event, error) {
		events, err := decide(s, c, now)
		if err != nil || len(events) != 1 {
			return events, err
		}
		if issued, ok := events[0].(domain.CommandsIssued); ok {
			events = append(events, claims.ClaimWithSend(ctx, issued)...)
		}
		return events, nil
	}
	return d
}

// check validates a send before an id is taken and returns its scope:
// the caller's provider, or for a superadmin the one provider every target
// belongs to (nil when they span several). One answer names every bad
// field; scope is checked only on an otherwise valid send.
func (h *Sends) check(c app.Caller, cmd domain.SendCommands, now time.Time) (*int64, error) {
	probe := cmd
	probe.SendID = 1
	_, err := domain.IssueCommands(probe, now)
	var extra map[string]string
	h.checkChannels(cmd.Commands, &extra)
	owners := h.owners(cmd, &extra)
	if err := withProblems(err, extra); err != nil {
		return nil, err
	}
	return sendScope(c, cmd, owners)
}

// checkChannels records switch_to_channel commands whose channel does
// not exist.
func (h *Sends) checkChannels(specs []domain.CommandSpec, extra *map[string]string) {
	for i, spec := range specs {
		if spec.Kind != domain.CommandSwitchToChannel || spec.Channel <= 0 {
			continue // the domain reports a missing or bad channel
		}
		if _, ok := h.w.model.Channel(spec.Channel); !ok {
			addFieldProblem(extra, domain.CommandField(i, "channel"), fmt.Sprintf("unknown channel %d", spec.Channel))
		}
	}
}

// owners returns the provider of each target id (0 where the domain
// reports the id, or it is unknown: recorded in extra, naming at most
// domain.MaxReportedIDs of them).
func (h *Sends) owners(cmd domain.SendCommands, extra *map[string]string) []int64 {
	if len(cmd.IDs) > domain.MaxSendIDs {
		return nil
	}
	owner := h.ownerLookup(cmd.Recipients)
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
func (h *Sends) ownerLookup(r domain.Recipients) func(int64) (int64, bool) {
	m := h.w.model
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
func sendScope(c app.Caller, cmd domain.SendCommands, owners []int64) (*int64, error) {
	for i, p := range owners {
		if err := c.CheckScope(p); err != nil {
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

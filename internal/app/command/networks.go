package command

import (
	"context"
	"fmt"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// NetworkInput is the body of an account network create or update (TVIP's
// account_network): Network in CIDR notation and Account are needed to
// create; an update changes the fields present.
type NetworkInput struct {
	Network     domain.Optional[string]
	Account     domain.Optional[int64]
	Description domain.Optional[string]
}

// Networks handles the commands on account networks. A provider's networks
// are one aggregate (domain.AccountNetworks), so that no two overlap even
// when written concurrently through several nodes.
type Networks struct{ w *writer }

// Create adds a network to an account of the caller's scope and returns it.
func (h *Networks) Create(ctx context.Context, c app.Caller, in NetworkInput) (readmodel.AccountNetwork, error) {
	w := h.w
	account, ok := in.Account.Get()
	if !ok {
		return readmodel.AccountNetwork{}, domain.NewValidationError("account", problemRequired)
	}
	acc, err := h.account(c, account)
	if err != nil {
		return readmodel.AccountNetwork{}, err
	}
	cmd := domain.AddAccountNetwork{Provider: acc.Provider, Account: account, Network: in.Network.Or(""), Description: in.Description.Ptr()}
	probe := cmd
	probe.ID = 1
	if _, err := domain.NetworksDecider().Decide(domain.AccountNetworks{}, probe, w.now()); err != nil {
		return readmodel.AccountNetwork{}, err
	}
	id, err := w.x.NewID(ctx, "account_network")
	if err != nil {
		return readmodel.AccountNetwork{}, err
	}
	cmd.ID = id
	app.NoteSubject(ctx, account) // the answer shows the network
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.NetworksDecider(), domain.NetworkCommand(cmd)); err != nil {
		return readmodel.AccountNetwork{}, err
	}
	return w.q.Networks.Current(id)
}

// Update changes the fields of network id that in carries; a new account
// must be of the same provider.
func (h *Networks) Update(ctx context.Context, c app.Caller, id int64, in NetworkInput) (readmodel.AccountNetwork, error) {
	w := h.w
	cur, err := w.q.Networks.Get(ctx, c, id)
	if err != nil {
		return readmodel.AccountNetwork{}, err
	}
	if account, ok := in.Account.Get(); ok && account != cur.Account {
		acc, err := h.account(c, account)
		if err != nil {
			return readmodel.AccountNetwork{}, err
		}
		if acc.Provider != cur.Provider {
			return readmodel.AccountNetwork{}, domain.NewValidationError("account", "belongs to another provider")
		}
	}
	cmd := domain.ChangeAccountNetwork{Provider: cur.Provider, ID: id, Network: in.Network, Account: in.Account, Description: in.Description}
	app.NoteSubject(ctx, in.Account.Or(cur.Account))
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.NetworksDecider(), domain.NetworkCommand(cmd)); err != nil {
		return readmodel.AccountNetwork{}, err
	}
	return w.q.Networks.Current(id)
}

// Delete removes network id and returns it as it was.
func (h *Networks) Delete(ctx context.Context, c app.Caller, id int64) (readmodel.AccountNetwork, error) {
	w := h.w
	cur, err := w.q.Networks.Get(ctx, c, id)
	if err != nil {
		return readmodel.AccountNetwork{}, err
	}
	cmd := domain.RemoveAccountNetwork{Provider: cur.Provider, ID: id}
	app.NoteSubject(ctx, cur.Account)
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.NetworksDecider(), domain.NetworkCommand(cmd)); err != nil {
		return readmodel.AccountNetwork{}, err
	}
	return cur, nil
}

// account returns a live account the caller may write to.
func (h *Networks) account(c app.Caller, id int64) (readmodel.Account, error) {
	acc, ok := h.w.model.Account(id)
	if !ok {
		return readmodel.Account{}, domain.NewValidationError("account", problemUnknown)
	}
	if err := c.CheckScope(acc.Provider); err != nil {
		return readmodel.Account{}, fmt.Errorf("account %d: %w", id, err)
	}
	return acc, nil
}

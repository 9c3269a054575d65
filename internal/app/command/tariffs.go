package command

import (
	"context"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/internal/app"
)

// TariffFields are the fields of a tariff create or partial update. On an
// update Provider may be present (resync jobs re-send it) but must not
// change; a null Description or Channels clears it.
type TariffFields struct {
	Provider    domain.Optional[int64]
	Name        domain.Optional[string]
	Enabled     domain.Optional[bool]
	Channels    domain.Optional[[]int64]
	Description domain.Optional[string]
}

// WithDefaults returns f as a create by c means it: a provider-scoped
// admin that sends no provider creates a tariff of its own provider.
func (f TariffFields) WithDefaults(c app.Caller) TariffFields {
	if f.Provider.Or(0) == 0 && c.Scope != nil {
		f.Provider = domain.Some(*c.Scope)
	}
	return f
}

// Tariffs handles the commands on tariffs; an admin changes the tariffs of
// the providers in its scope.
type Tariffs struct{ w *writer }

// Create creates a tariff of f.Provider with a new id. A provider-scoped
// admin creates tariffs of its own provider only; when it sends no
// provider, its own is taken (WithDefaults). The provider and every channel
// must exist.
func (h *Tariffs) Create(ctx context.Context, c app.Caller, f TariffFields) (domain.Tariff, error) {
	w := h.w
	f = f.WithDefaults(c)
	provider := f.Provider.Or(0)
	if provider > 0 {
		if err := c.CheckScope(provider); err != nil {
			return domain.Tariff{}, err
		}
	}
	cmd := domain.CreateTariff{
		ID:          1, // placeholder for the dry run; the real id is taken after it
		Provider:    provider,
		Name:        f.Name.Or(""),
		Enabled:     f.Enabled.Ptr(),
		Channels:    f.Channels.Or(nil),
		Description: f.Description.Or(""),
	}
	var extra map[string]string
	if provider > 0 {
		if _, ok := w.model.Provider(provider); !ok {
			addFieldProblem(&extra, "provider", fmt.Sprintf("unknown provider %d", provider))
		}
	}
	if missing := missingIDs(cmd.Channels, nil, h.channelExists); len(missing) > 0 {
		addFieldProblem(&extra, "channels", unknownIDsProblem("channel", missing))
	}
	if err := withProblems(dryRun(domain.TariffDecider(), domain.TariffCommand(cmd)), extra); err != nil {
		return domain.Tariff{}, err
	}
	id, err := w.x.NewID(ctx, "tariff")
	if err != nil {
		return domain.Tariff{}, err
	}
	cmd.ID = id
	if _, err := execute(ctx, w, c, cmd.Stream(), scopedTariffDecider(c), domain.TariffCommand(cmd)); err != nil {
		return domain.Tariff{}, err
	}
	return w.q.Tariffs.Current(id)
}

// Update changes the fields of tariff id that f carries. The tariff must
// belong to a provider within the caller's scope. Channels it does not list
// yet must exist (the ones it lists stay valid after their deletion, so a
// resync re-sending the list passes).
func (h *Tariffs) Update(ctx context.Context, c app.Caller, id int64, f TariffFields) (domain.Tariff, error) {
	w := h.w
	cur, known := w.model.Tariff(id)
	if known {
		if err := c.CheckScope(cur.Provider); err != nil {
			return domain.Tariff{}, err
		}
	}
	cmd := domain.UpdateTariff{ID: id, Provider: f.Provider, Name: f.Name, Enabled: f.Enabled, Channels: f.Channels, Description: f.Description}
	var extra map[string]string
	if v, ok := f.Channels.Get(); ok {
		if missing := missingIDs(v, cur.Channels, h.channelExists); len(missing) > 0 {
			addFieldProblem(&extra, "channels", unknownIDsProblem("channel", missing))
		}
	}
	if len(extra) > 0 {
		if !known {
			return domain.Tariff{}, notFound("tariff", id)
		}
		return domain.Tariff{}, withProblems(dryRunOn(domain.TariffDecider(), cur, domain.TariffCommand(cmd)), extra)
	}
	if _, err := execute(ctx, w, c, cmd.Stream(), scopedTariffDecider(c), domain.TariffCommand(cmd)); err != nil {
		return domain.Tariff{}, err
	}
	return w.q.Tariffs.Current(id)
}

// Delete deletes tariff id, which must belong to a provider within the
// caller's scope, and returns it as it was. Subscriptions to it are history
// and stay.
func (h *Tariffs) Delete(ctx context.Context, c app.Caller, id int64) (domain.Tariff, error) {
	if cur, ok := h.w.model.Tariff(id); ok {
		if err := c.CheckScope(cur.Provider); err != nil {
			return domain.Tariff{}, err
		}
	}
	cmd := domain.DeleteTariff{ID: id}
	res, err := execute(ctx, h.w, c, cmd.Stream(), scopedTariffDecider(c), domain.TariffCommand(cmd))
	if err != nil {
		return domain.Tariff{}, err
	}
	return res.State, nil
}

// scopedTariffDecider is the tariff decider that also refuses commands on
// a tariff of a provider outside the caller's scope, judged on the state
// the command is decided on (the read model may lag behind it).
func scopedTariffDecider(c app.Caller) domain.Decider[domain.Tariff, domain.TariffCommand] {
	d := domain.TariffDecider()
	decide := d.Decide
	d.Decide = func(t domain.Tariff, cmd domain.TariffCommand, now time.Time) ([]domain.Event, error) {
		if t.Exists() {
			if err := c.CheckScope(t.Provider); err != nil {
				return nil, err
			}
		}
		return decide(t, cmd, now)
	}
	return d
}

func (h *Tariffs) channelExists(id int64) bool {
	_, ok := h.w.model.Channel(id)
	return ok
}

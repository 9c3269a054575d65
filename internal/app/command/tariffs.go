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
// change; a null Description, Channels or Tag clears it.
type TariffFields struct {
	Provider    domain.Optional[int64]
	Name        domain.Optional[string]
	Enabled     domain.Optional[bool]
	Channels    domain.Optional[[]int64]
	Description domain.Optional[string]
	Tag         domain.Optional[int64]
}

// WithDefaults returns f as a create by c means it: a provider-scoped
// admin that sends no provider creates a tariff of its own provider.
func (f TariffFields) WithDefaults(c app.Caller) TariffFields {
	f.Provider = defaultProvider(f.Provider, c)
	return f
}

// defaultProvider returns the provider of a create by c: the one given, or
// a provider-scoped admin's own.
func defaultProvider(p domain.Optional[int64], c app.Caller) domain.Optional[int64] {
	if p.Or(0) == 0 && c.Scope != nil {
		return domain.Some(*c.Scope)
	}
	return p
}

// providerOfCreate returns the provider a create by c of an object of a
// provider is for (p, or a provider-scoped admin's own; 0 when none is
// given, for the domain to report): app.ErrForbidden when it is outside
// c's scope, a problem with "provider" in extra when it does not exist.
func (w *writer) providerOfCreate(c app.Caller, p domain.Optional[int64], extra *map[string]string) (int64, error) {
	provider := defaultProvider(p, c).Or(0)
	if provider <= 0 {
		return provider, nil
	}
	if err := c.CheckScope(provider); err != nil {
		return 0, err
	}
	if _, ok := w.model.Provider(provider); !ok {
		addFieldProblem(extra, "provider", fmt.Sprintf("unknown provider %d", provider))
	}
	return provider, nil
}

// Tariffs handles the commands on tariffs; an admin changes the tariffs of
// the providers in its scope.
type Tariffs struct{ w *writer }

// Create creates a tariff of f.Provider with a new id. A provider-scoped
// admin creates tariffs of its own provider only; when it sends no
// provider, its own is taken (WithDefaults). The provider, every channel
// and the tag (one of the provider's) must exist.
func (h *Tariffs) Create(ctx context.Context, c app.Caller, f TariffFields) (domain.Tariff, error) {
	w := h.w
	var extra map[string]string
	provider, err := w.providerOfCreate(c, f.Provider, &extra)
	if err != nil {
		return domain.Tariff{}, err
	}
	cmd := domain.CreateTariff{
		ID:          1, // placeholder for the dry run; the real id is taken after it
		Provider:    provider,
		Name:        f.Name.Or(""),
		Enabled:     f.Enabled.Ptr(),
		Channels:    f.Channels.Or(nil),
		Description: f.Description.Or(""),
		Tag:         f.Tag.Ptr(),
	}
	if cmd.Tag != nil && provider > 0 {
		h.checkTag(&extra, *cmd.Tag, provider)
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
// resync re-sending the list passes); so must a new tag, one of the
// tariff's provider.
func (h *Tariffs) Update(ctx context.Context, c app.Caller, id int64, f TariffFields) (domain.Tariff, error) {
	w := h.w
	cur, known := w.model.Tariff(id)
	if known {
		if err := c.CheckScope(cur.Provider); err != nil {
			return domain.Tariff{}, err
		}
	}
	cmd := domain.UpdateTariff{ID: id, Provider: f.Provider, Name: f.Name, Enabled: f.Enabled, Channels: f.Channels,
		Description: f.Description, Tag: f.Tag}
	var extra map[string]string
	if v, ok := f.Channels.Get(); ok {
		if missing := missingIDs(v, cur.Channels, h.channelExists); len(missing) > 0 {
			addFieldProblem(&extra, "channels", unknownIDsProblem("channel", missing))
		}
	}
	if v, ok := f.Tag.Get(); ok && known && (cur.Tag == nil || *cur.Tag != v) {
		h.checkTag(&extra, v, cur.Provider)
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
// a tariff of a provider outside the caller's scope.
func scopedTariffDecider(c app.Caller) domain.Decider[domain.Tariff, domain.TariffCommand] {
	return scopedDecider(c, domain.TariffDecider(), func(t domain.Tariff) (int64, bool) { return t.Provider, t.Exists() })
}

// scopedDecider is d that also refuses commands on an object of a provider
// outside the caller's scope, judged on the state the command is decided on
// (the read model may lag behind it). owner returns the object's provider
// and whether it exists.
func scopedDecider[S, C any](c app.Caller, d domain.Decider[S, C], owner func(S) (int64, bool)) domain.Decider[S, C] {
	decide := d.Decide
	d.Decide = func(s S, cmd C, now time.Time) ([]domain.Event, error) {
		if p, exists := owner(s); exists {
			if err := c.CheckScope(p); err != nil {
				return nil, err
			}
		}
		return decide(s, cmd, now)
	}
	return d
}

// checkTag records a problem with tarif_tag unless tag is a tag of
// provider. Another provider's tag reads as unknown: a scoped admin learns
// nothing of other providers.
func (h *Tariffs) checkTag(extra *map[string]string, tag, provider int64) {
	if tag <= 0 {
		return // the domain's to report
	}
	if t, ok := h.w.model.TariffTag(tag); !ok || t.Provider != provider {
		addFieldProblem(extra, domain.TariffTagField, fmt.Sprintf("unknown tariff tag %d of provider %d", tag, provider))
	}
}

func (h *Tariffs) channelExists(id int64) bool {
	_, ok := h.w.model.Channel(id)
	return ok
}

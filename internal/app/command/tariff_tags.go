package command

import (
	"context"

	"tvsm/domain"
	"tvsm/internal/app"
)

// TariffTagFields are the fields of a tariff tag create or partial update.
// On an update Provider may be present (resync jobs re-send it) but must
// not change.
type TariffTagFields struct {
	Provider domain.Optional[int64]
	Name     domain.Optional[string]
	Enabled  domain.Optional[bool]
	Position domain.Optional[int]
}

// WithDefaults returns f as a create by c means it: a provider-scoped
// admin that sends no provider creates a tag of its own provider.
func (f TariffTagFields) WithDefaults(c app.Caller) TariffTagFields {
	f.Provider = defaultProvider(f.Provider, c)
	return f
}

// TariffTags handles the commands on tariff tags; an admin changes the
// tags of the providers in its scope.
type TariffTags struct{ w *writer }

// Create creates a tag of f.Provider with a new id. A provider-scoped admin
// creates tags of its own provider only, its own when it sends none. The
// provider must exist.
func (h *TariffTags) Create(ctx context.Context, c app.Caller, f TariffTagFields) (domain.TariffTag, error) {
	w := h.w
	var extra map[string]string
	provider, err := w.providerOfCreate(c, f.Provider, &extra)
	if err != nil {
		return domain.TariffTag{}, err
	}
	cmd := domain.CreateTariffTag{
		ID:       1, // placeholder for the dry run; the real id is taken after it
		Provider: provider,
		Name:     f.Name.Or(""),
		Enabled:  f.Enabled.Ptr(),
		Position: f.Position.Or(0),
	}
	if err := withProblems(dryRun(domain.TariffTagDecider(), domain.TariffTagCommand(cmd)), extra); err != nil {
		return domain.TariffTag{}, err
	}
	id, err := w.x.NewID(ctx, "tariff_tag")
	if err != nil {
		return domain.TariffTag{}, err
	}
	cmd.ID = id
	if _, err := execute(ctx, w, c, cmd.Stream(), scopedTagDecider(c), domain.TariffTagCommand(cmd)); err != nil {
		return domain.TariffTag{}, err
	}
	return w.q.TariffTags.Current(id)
}

// Update changes the fields of tag id that f carries; the tag must belong
// to a provider within the caller's scope.
func (h *TariffTags) Update(ctx context.Context, c app.Caller, id int64, f TariffTagFields) (domain.TariffTag, error) {
	if cur, ok := h.w.model.TariffTag(id); ok {
		if err := c.CheckScope(cur.Provider); err != nil {
			return domain.TariffTag{}, err
		}
	}
	cmd := domain.UpdateTariffTag{ID: id, Provider: f.Provider, Name: f.Name, Enabled: f.Enabled, Position: f.Position}
	if _, err := execute(ctx, h.w, c, cmd.Stream(), scopedTagDecider(c), domain.TariffTagCommand(cmd)); err != nil {
		return domain.TariffTag{}, err
	}
	return h.w.q.TariffTags.Current(id)
}

// Delete deletes tag id, which must belong to a provider within the
// caller's scope, and returns it as it was. A tag that tariffs name is not
// deleted (*app.InUseError naming them): untag them first. The check reads
// the read model, so a tariff tagged at the same moment on another node
// may keep the id of a deleted tag; it is shown as it is, and a re-send of
// it unchanged passes.
func (h *TariffTags) Delete(ctx context.Context, c app.Caller, id int64) (domain.TariffTag, error) {
	if cur, ok := h.w.model.TariffTag(id); ok {
		if err := c.CheckScope(cur.Provider); err != nil {
			return domain.TariffTag{}, err
		}
		if by := h.w.model.TariffsTagged(id); len(by) > 0 {
			return domain.TariffTag{}, &app.InUseError{What: domain.TariffTagField, ID: id, By: "tariff", IDs: by}
		}
	}
	cmd := domain.DeleteTariffTag{ID: id}
	res, err := execute(ctx, h.w, c, cmd.Stream(), scopedTagDecider(c), domain.TariffTagCommand(cmd))
	if err != nil {
		return domain.TariffTag{}, err
	}
	return res.State, nil
}

// scopedTagDecider is the tariff tag decider that also refuses commands on
// a tag of a provider outside the caller's scope.
func scopedTagDecider(c app.Caller) domain.Decider[domain.TariffTag, domain.TariffTagCommand] {
	return scopedDecider(c, domain.TariffTagDecider(), func(t domain.TariffTag) (int64, bool) { return t.Provider, t.Exists() })
}

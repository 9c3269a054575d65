package command

import (
	"context"
	"fmt"

	"tvsm/domain"
	"tvsm/internal/app"
)

// ProviderFields are the fields of a provider create or partial update, as
// the Admin API decoded them: absent fields are left alone (or take their
// defaults on create), null clears a nullable field (devices_per_account_limit,
// free_tariff, region_tag, comment, logo_url, billing.url, billing.token).
type ProviderFields struct {
	Name                   domain.Optional[string]
	Enabled                domain.Optional[bool]
	DevicesPerAccountLimit domain.Optional[int]
	FreeTariff             domain.Optional[int64]
	RegionTag              domain.Optional[int64]
	Comment                domain.Optional[string]
	LogoURL                domain.Optional[string]
	Billing                domain.BillingPatch
}

// Providers handles the commands on providers; only superadmins make them.
type Providers struct{ w *writer }

// Create creates a provider with a new id and returns it as the read model
// shows it once the write is applied.
func (h *Providers) Create(ctx context.Context, c app.Caller, f ProviderFields) (domain.Provider, error) {
	w := h.w
	if err := c.RequireSuperadmin(); err != nil {
		return domain.Provider{}, err
	}
	cmd := domain.CreateProvider{
		ID:                     1, // placeholder for the dry run; the real id is taken after it
		Name:                   f.Name.Or(""),
		Enabled:                f.Enabled.Ptr(),
		DevicesPerAccountLimit: f.DevicesPerAccountLimit.Ptr(),
		FreeTariff:             f.FreeTariff.Ptr(),
		RegionTag:              f.RegionTag.Ptr(),
		Comment:                f.Comment.Or(""),
		LogoURL:                f.LogoURL.Or(""),
		Billing: domain.Billing{
			Resolve: f.Billing.Resolve.Or(false),
			URL:     f.Billing.URL.Or(""),
			Token:   f.Billing.Token.Or(""),
		},
	}
	var extra map[string]string
	if v, ok := f.FreeTariff.Get(); ok && v > 0 {
		// A new provider has no tariffs yet: set the free tariff by an
		// update once it has one.
		addFieldProblem(&extra, "free_tariff", fmt.Sprintf("unknown tariff %d of this provider", v))
	}
	if v, ok := f.RegionTag.Get(); ok {
		h.checkRegion(&extra, v)
	}
	h.checkBillingURL(f, &extra)
	if err := withProblems(dryRun(domain.ProviderDecider(), domain.ProviderCommand(cmd)), extra); err != nil {
		return domain.Provider{}, err
	}
	id, err := w.x.NewID(ctx, "provider")
	if err != nil {
		return domain.Provider{}, err
	}
	cmd.ID = id
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.ProviderDecider(), domain.ProviderCommand(cmd)); err != nil {
		return domain.Provider{}, err
	}
	return w.q.Providers.Current(id)
}

// Update changes the fields of provider id that f carries; fields equal to
// the current ones append nothing.
func (h *Providers) Update(ctx context.Context, c app.Caller, id int64, f ProviderFields) (domain.Provider, error) {
	w := h.w
	if err := c.RequireSuperadmin(); err != nil {
		return domain.Provider{}, err
	}
	var extra map[string]string
	cur, _ := w.model.Provider(id)
	if v, ok := f.RegionTag.Get(); ok && (cur.RegionTag == nil || *cur.RegionTag != v) {
		// Like the free tariff below, a region re-sent unchanged is not
		// checked again.
		h.checkRegion(&extra, v)
	}
	if v, ok := f.FreeTariff.Get(); ok && v > 0 {
		// A free tariff re-sent unchanged is not checked again: the tariff
		// may have been deleted since, and a resync must still pass.
		if cur.FreeTariff == nil || *cur.FreeTariff != v {
			if t, ok := w.model.Tariff(v); !ok || t.Provider != id {
				addFieldProblem(&extra, "free_tariff", fmt.Sprintf("unknown tariff %d of this provider", v))
			}
		}
	}
	h.checkBillingURL(f, &extra)
	cmd := domain.UpdateProvider{
		ID:                     id,
		Name:                   f.Name,
		Enabled:                f.Enabled,
		DevicesPerAccountLimit: f.DevicesPerAccountLimit,
		FreeTariff:             f.FreeTariff,
		RegionTag:              f.RegionTag,
		Comment:                f.Comment,
		LogoURL:                f.LogoURL,
		Billing:                f.Billing,
	}
	if len(extra) > 0 {
		// Name the domain's problems too (on the state the read model
		// has), unless the provider is unknown.
		cur, ok := w.model.Provider(id)
		if !ok {
			return domain.Provider{}, notFound("provider", id)
		}
		return domain.Provider{}, withProblems(dryRunOn(domain.ProviderDecider(), cur, domain.ProviderCommand(cmd)), extra)
	}
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.ProviderDecider(), domain.ProviderCommand(cmd)); err != nil {
		return domain.Provider{}, err
	}
	return w.q.Providers.Current(id)
}

// checkBillingURL records the problem Config.BillingURL finds with the
// billing url f sets, if any.
func (h *Providers) checkBillingURL(f ProviderFields, extra *map[string]string) {
	check := h.w.cfg.BillingURL
	if u, ok := f.Billing.URL.Get(); ok && u != "" && check != nil {
		if err := check(u); err != nil {
			addFieldProblem(extra, "billing.url", err.Error())
		}
	}
}

// Delete deletes provider id and returns it as it was. Its accounts,
// tariffs and admins are left as they are.
func (h *Providers) Delete(ctx context.Context, c app.Caller, id int64) (domain.Provider, error) {
	if err := c.RequireSuperadmin(); err != nil {
		return domain.Provider{}, err
	}
	cmd := domain.DeleteProvider{ID: id}
	res, err := execute(ctx, h.w, c, cmd.Stream(), domain.ProviderDecider(), domain.ProviderCommand(cmd))
	if err != nil {
		return domain.Provider{}, err
	}
	return res.State, nil
}

// checkRegion records a problem with region_tag unless region exists.
func (h *Providers) checkRegion(extra *map[string]string, region int64) {
	if region <= 0 {
		return // the domain's to report
	}
	if _, ok := h.w.model.Region(region); !ok {
		addFieldProblem(extra, domain.RegionTagField, fmt.Sprintf("unknown region %d", region))
	}
}

package service

import (
	"context"
	"fmt"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// ProviderFields are the fields of a provider create or partial update, as
// the Admin API decoded them: absent fields are left alone (or take their
// defaults on create), null clears a nullable field (devices_per_account_limit,
// free_tariff, billing.url, billing.token).
type ProviderFields struct {
	Name                   domain.Optional[string]
	Enabled                domain.Optional[bool]
	DevicesPerAccountLimit domain.Optional[int]
	FreeTariff             domain.Optional[int64]
	Billing                domain.BillingPatch
}

// ListProviders lists the providers q selects. A provider-scoped admin sees
// only its own provider.
func (s *Service) ListProviders(_ context.Context, c Caller, q readmodel.ProviderQuery) (readmodel.List[domain.Provider], error) {
	q.Scope = adminListScope(c)
	l, err := s.cfg.Model.ListProviders(q)
	return l, listError(err)
}

// Provider returns provider id. A provider-scoped admin may read only its
// own provider (ErrForbidden for any other id, existing or not). The
// result's Billing.Token is a secret: never show it.
func (s *Service) Provider(_ context.Context, c Caller, id int64) (domain.Provider, error) {
	if err := c.checkScope(id); err != nil {
		return domain.Provider{}, err
	}
	p, ok := s.cfg.Model.Provider(id)
	if !ok {
		return domain.Provider{}, adminNotFound("provider", id)
	}
	return p, nil
}

// CreateProvider creates a provider (superadmins only) with a new id and
// answers with encode's rendering of it as the read model shows it once the
// write is applied. With the caller's Idempotency-Key the provider is
// created once however often the request is repeated, and retries get the
// recorded rendering.
func (s *Service) CreateProvider(ctx context.Context, c Caller, f ProviderFields, encode BodyEncoder[domain.Provider]) ([]byte, error) {
	if err := c.superadmin(); err != nil {
		return nil, err
	}
	cmd := domain.CreateProvider{
		ID:                     1, // placeholder for the dry run; the real id comes from pins
		Name:                   f.Name.Or(""),
		Enabled:                f.Enabled.Ptr(),
		DevicesPerAccountLimit: f.DevicesPerAccountLimit.Ptr(),
		FreeTariff:             f.FreeTariff.Ptr(),
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
	if err := withProblems(dryRun(domain.ProviderDecider(), domain.ProviderCommand(cmd)), extra); err != nil {
		return nil, err
	}
	return createOnce(ctx, s, c, "provider", fingerprintOf("provider", f), encode,
		func(ctx context.Context, pins *app.Pins) (eventstore.Position, func() (domain.Provider, error), error) {
			id, err := pins.ID(ctx, "provider")
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			cmd.ID = id
			res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.ProviderDecider(), domain.ProviderCommand(cmd), c.meta())
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			return res.Position, func() (domain.Provider, error) { return s.providerAfterWrite(id) }, nil
		})
}

// UpdateProvider changes the fields of provider id that f carries
// (superadmins only); fields equal to the current ones append nothing.
func (s *Service) UpdateProvider(ctx context.Context, c Caller, id int64, f ProviderFields) (domain.Provider, error) {
	if err := c.superadmin(); err != nil {
		return domain.Provider{}, err
	}
	var extra map[string]string
	if v, ok := f.FreeTariff.Get(); ok && v > 0 {
		cur, _ := s.cfg.Model.Provider(id)
		// A free tariff re-sent unchanged is not checked again: the tariff
		// may have been deleted since, and a resync must still pass.
		if cur.FreeTariff == nil || *cur.FreeTariff != v {
			if t, ok := s.cfg.Model.Tariff(v); !ok || t.Provider != id {
				addFieldProblem(&extra, "free_tariff", fmt.Sprintf("unknown tariff %d of this provider", v))
			}
		}
	}
	cmd := domain.UpdateProvider{
		ID:                     id,
		Name:                   f.Name,
		Enabled:                f.Enabled,
		DevicesPerAccountLimit: f.DevicesPerAccountLimit,
		FreeTariff:             f.FreeTariff,
		Billing:                f.Billing,
	}
	if len(extra) > 0 {
		// Name the domain's problems too (on the state the read model
		// has), unless the provider is unknown.
		cur, ok := s.cfg.Model.Provider(id)
		if !ok {
			return domain.Provider{}, adminNotFound("provider", id)
		}
		return domain.Provider{}, withProblems(dryRunOn(domain.ProviderDecider(), cur, domain.ProviderCommand(cmd)), extra)
	}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.ProviderDecider(), domain.ProviderCommand(cmd), c.meta())
	if err != nil {
		return domain.Provider{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Provider{}, err
	}
	return s.providerAfterWrite(id)
}

// DeleteProvider deletes provider id (superadmins only) and returns it as
// it was. Its accounts, tariffs and admins are left as they are.
func (s *Service) DeleteProvider(ctx context.Context, c Caller, id int64) (domain.Provider, error) {
	if err := c.superadmin(); err != nil {
		return domain.Provider{}, err
	}
	cmd := domain.DeleteProvider{ID: id}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.ProviderDecider(), domain.ProviderCommand(cmd), c.meta())
	if err != nil {
		return domain.Provider{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Provider{}, err
	}
	return res.State, nil
}

// providerAfterWrite reads provider id back after a write was applied.
func (s *Service) providerAfterWrite(id int64) (domain.Provider, error) {
	p, ok := s.cfg.Model.Provider(id)
	if !ok { // deleted by a concurrent request meanwhile
		return domain.Provider{}, adminNotFound("provider", id)
	}
	return p, nil
}

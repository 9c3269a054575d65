package service

import (
	"context"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
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

// ListTariffs lists the tariffs q selects; a provider-scoped admin sees
// only its own provider's.
func (s *Service) ListTariffs(_ context.Context, c Caller, q readmodel.TariffQuery) (readmodel.List[domain.Tariff], error) {
	q.Scope = adminListScope(c)
	l, err := s.cfg.Model.ListTariffs(q)
	return l, listError(err)
}

// Tariff returns tariff id: ErrNotFound when there is none, ErrForbidden
// when it belongs to a provider outside the caller's scope.
func (s *Service) Tariff(_ context.Context, c Caller, id int64) (domain.Tariff, error) {
	t, ok := s.cfg.Model.Tariff(id)
	if !ok {
		return domain.Tariff{}, adminNotFound("tariff", id)
	}
	if err := c.checkScope(t.Provider); err != nil {
		return domain.Tariff{}, err
	}
	return t, nil
}

// CreateTariff creates a tariff of f.Provider with a new id and answers
// with encode's rendering of it (see CreateProvider for Idempotency-Key). A
// provider-scoped admin creates tariffs of its own provider only; when it
// sends no provider, its own is taken. The provider and every channel must
// exist.
func (s *Service) CreateTariff(ctx context.Context, c Caller, f TariffFields, encode BodyEncoder[domain.Tariff]) ([]byte, error) {
	provider := f.Provider.Or(0)
	if provider == 0 && c.Scope != nil {
		provider = *c.Scope
		f.Provider = domain.Some(provider)
	}
	if provider > 0 {
		if err := c.checkScope(provider); err != nil {
			return nil, err
		}
	}
	cmd := domain.CreateTariff{
		ID:          1, // placeholder for the dry run; the real id comes from pins
		Provider:    provider,
		Name:        f.Name.Or(""),
		Enabled:     f.Enabled.Ptr(),
		Channels:    f.Channels.Or(nil),
		Description: f.Description.Or(""),
	}
	var extra map[string]string
	if provider > 0 {
		if _, ok := s.cfg.Model.Provider(provider); !ok {
			addFieldProblem(&extra, "provider", fmt.Sprintf("unknown provider %d", provider))
		}
	}
	if missing := missingIDs(cmd.Channels, nil, s.adminChannelExists); len(missing) > 0 {
		addFieldProblem(&extra, "channels", unknownIDsProblem("channel", missing))
	}
	if err := withProblems(dryRun(domain.TariffDecider(), domain.TariffCommand(cmd)), extra); err != nil {
		return nil, err
	}
	return createOnce(ctx, s, c, "tariff", fingerprintOf("tariff", f), encode,
		func(ctx context.Context, pins *app.Pins) (eventstore.Position, func() (domain.Tariff, error), error) {
			id, err := pins.ID(ctx, "tariff")
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			cmd.ID = id
			res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), scopedTariffDecider(c), domain.TariffCommand(cmd), c.meta())
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			return res.Position, func() (domain.Tariff, error) { return s.tariffAfterWrite(id) }, nil
		})
}

// UpdateTariff changes the fields of tariff id that f carries. The tariff
// must belong to a provider within the caller's scope. Channels it does not
// list yet must exist (the ones it lists stay valid after their deletion,
// so a resync re-sending the list passes).
func (s *Service) UpdateTariff(ctx context.Context, c Caller, id int64, f TariffFields) (domain.Tariff, error) {
	cur, known := s.cfg.Model.Tariff(id)
	if known {
		if err := c.checkScope(cur.Provider); err != nil {
			return domain.Tariff{}, err
		}
	}
	cmd := domain.UpdateTariff{ID: id, Provider: f.Provider, Name: f.Name, Enabled: f.Enabled, Channels: f.Channels, Description: f.Description}
	var extra map[string]string
	if v, ok := f.Channels.Get(); ok {
		if missing := missingIDs(v, cur.Channels, s.adminChannelExists); len(missing) > 0 {
			addFieldProblem(&extra, "channels", unknownIDsProblem("channel", missing))
		}
	}
	if len(extra) > 0 {
		if !known {
			return domain.Tariff{}, adminNotFound("tariff", id)
		}
		return domain.Tariff{}, withProblems(dryRunOn(domain.TariffDecider(), cur, domain.TariffCommand(cmd)), extra)
	}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), scopedTariffDecider(c), domain.TariffCommand(cmd), c.meta())
	if err != nil {
		return domain.Tariff{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Tariff{}, err
	}
	return s.tariffAfterWrite(id)
}

// DeleteTariff deletes tariff id, which must belong to a provider within
// the caller's scope, and returns it as it was. Subscriptions to it are
// history and stay.
func (s *Service) DeleteTariff(ctx context.Context, c Caller, id int64) (domain.Tariff, error) {
	if cur, ok := s.cfg.Model.Tariff(id); ok {
		if err := c.checkScope(cur.Provider); err != nil {
			return domain.Tariff{}, err
		}
	}
	cmd := domain.DeleteTariff{ID: id}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), scopedTariffDecider(c), domain.TariffCommand(cmd), c.meta())
	if err != nil {
		return domain.Tariff{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Tariff{}, err
	}
	return res.State, nil
}

// scopedTariffDecider is the tariff decider that also refuses commands on
// a tariff of a provider outside the caller's scope, judged on the state
// the command is decided on (the read model may lag behind it).
func scopedTariffDecider(c Caller) domain.Decider[domain.Tariff, domain.TariffCommand] {
	d := domain.TariffDecider()
	decide := d.Decide
	d.Decide = func(t domain.Tariff, cmd domain.TariffCommand, now time.Time) ([]domain.Event, error) {
		if t.Exists() {
			if err := c.checkScope(t.Provider); err != nil {
				return nil, err
			}
		}
		return decide(t, cmd, now)
	}
	return d
}

func (s *Service) adminChannelExists(id int64) bool {
	_, ok := s.cfg.Model.Channel(id)
	return ok
}

// tariffAfterWrite reads tariff id back after a write was applied.
func (s *Service) tariffAfterWrite(id int64) (domain.Tariff, error) {
	t, ok := s.cfg.Model.Tariff(id)
	if !ok {
		return domain.Tariff{}, adminNotFound("tariff", id)
	}
	return t, nil
}

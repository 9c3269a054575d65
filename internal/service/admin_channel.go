package service

import (
	"context"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// Channels and categories are the operator's line-up: they belong to no
// provider, every admin may read them, and only superadmins change them.

// ChannelFields are the fields of a channel create or partial update; a
// null LogoURL, Description or Categories clears it.
type ChannelFields struct {
	Name        domain.Optional[string]
	Number      domain.Optional[int]
	LogoURL     domain.Optional[string]
	Description domain.Optional[string]
	Categories  domain.Optional[[]int64]
}

// CategoryFields are the fields of a category create or update.
type CategoryFields struct {
	Name domain.Optional[string]
}

// ListChannels lists the channels q selects.
func (s *Service) ListChannels(_ context.Context, _ Caller, q readmodel.ChannelQuery) (readmodel.List[domain.Channel], error) {
	l, err := s.cfg.Model.ListChannels(q)
	return l, listError(err)
}

// Channel returns channel id.
func (s *Service) Channel(_ context.Context, _ Caller, id int64) (domain.Channel, error) {
	ch, ok := s.cfg.Model.Channel(id)
	if !ok {
		return domain.Channel{}, adminNotFound("channel", id)
	}
	return ch, nil
}

// CreateChannel creates a channel with a new id (superadmins only). Its
// categories must exist.
func (s *Service) CreateChannel(ctx context.Context, c Caller, f ChannelFields, encode BodyEncoder[domain.Channel]) ([]byte, error) {
	if err := c.superadmin(); err != nil {
		return nil, err
	}
	cmd := domain.CreateChannel{
		ID:          1, // placeholder for the dry run; the real id comes from pins
		Name:        f.Name.Or(""),
		Number:      f.Number.Or(0),
		LogoURL:     f.LogoURL.Or(""),
		Description: f.Description.Or(""),
		Categories:  f.Categories.Or(nil),
	}
	var extra map[string]string
	if missing := missingIDs(cmd.Categories, nil, s.adminCategoryExists); len(missing) > 0 {
		addFieldProblem(&extra, "categories", unknownIDsProblem("category", missing))
	}
	if err := withProblems(dryRun(domain.ChannelDecider(), domain.ChannelCommand(cmd)), extra); err != nil {
		return nil, err
	}
	return createOnce(ctx, s, c, "channel", fingerprintOf("channel", f), encode,
		func(ctx context.Context, pins *app.Pins) (eventstore.Position, func() (domain.Channel, error), error) {
			id, err := pins.ID(ctx, "channel")
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			cmd.ID = id
			res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.ChannelDecider(), domain.ChannelCommand(cmd), c.meta())
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			return res.Position, func() (domain.Channel, error) { return s.channelAfterWrite(id) }, nil
		})
}

// UpdateChannel changes the fields of channel id that f carries
// (superadmins only). Categories the channel does not list yet must exist.
func (s *Service) UpdateChannel(ctx context.Context, c Caller, id int64, f ChannelFields) (domain.Channel, error) {
	if err := c.superadmin(); err != nil {
		return domain.Channel{}, err
	}
	cmd := domain.UpdateChannel{ID: id, Name: f.Name, Number: f.Number, LogoURL: f.LogoURL, Description: f.Description, Categories: f.Categories}
	if v, ok := f.Categories.Get(); ok {
		cur, known := s.cfg.Model.Channel(id)
		if missing := missingIDs(v, cur.Categories, s.adminCategoryExists); len(missing) > 0 {
			if !known {
				return domain.Channel{}, adminNotFound("channel", id)
			}
			extra := map[string]string{"categories": unknownIDsProblem("category", missing)}
			return domain.Channel{}, withProblems(dryRunOn(domain.ChannelDecider(), cur, domain.ChannelCommand(cmd)), extra)
		}
	}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.ChannelDecider(), domain.ChannelCommand(cmd), c.meta())
	if err != nil {
		return domain.Channel{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Channel{}, err
	}
	return s.channelAfterWrite(id)
}

// DeleteChannel deletes channel id (superadmins only) and returns it as it
// was. Tariffs keep its id
// in their lists; readers skip channels that no longer exist.
func (s *Service) DeleteChannel(ctx context.Context, c Caller, id int64) (domain.Channel, error) {
	if err := c.superadmin(); err != nil {
		return domain.Channel{}, err
	}
	cmd := domain.DeleteChannel{ID: id}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.ChannelDecider(), domain.ChannelCommand(cmd), c.meta())
	if err != nil {
		return domain.Channel{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Channel{}, err
	}
	return res.State, nil
}

func (s *Service) channelAfterWrite(id int64) (domain.Channel, error) {
	ch, ok := s.cfg.Model.Channel(id)
	if !ok {
		return domain.Channel{}, adminNotFound("channel", id)
	}
	return ch, nil
}

// ListCategories lists the channel categories q selects.
func (s *Service) ListCategories(_ context.Context, _ Caller, q readmodel.CategoryQuery) (readmodel.List[domain.Category], error) {
	l, err := s.cfg.Model.ListCategories(q)
	return l, listError(err)
}

// Category returns category id.
func (s *Service) Category(_ context.Context, _ Caller, id int64) (domain.Category, error) {
	cat, ok := s.cfg.Model.Category(id)
	if !ok {
		return domain.Category{}, adminNotFound("category", id)
	}
	return cat, nil
}

// CreateCategory creates a category with a new id (superadmins only).
func (s *Service) CreateCategory(ctx context.Context, c Caller, f CategoryFields, encode BodyEncoder[domain.Category]) ([]byte, error) {
	if err := c.superadmin(); err != nil {
		return nil, err
	}
	cmd := domain.CreateCategory{ID: 1, Name: f.Name.Or("")} // placeholder id for the dry run
	if err := dryRun(domain.CategoryDecider(), domain.CategoryCommand(cmd)); err != nil {
		return nil, err
	}
	return createOnce(ctx, s, c, "category", fingerprintOf("category", f), encode,
		func(ctx context.Context, pins *app.Pins) (eventstore.Position, func() (domain.Category, error), error) {
			id, err := pins.ID(ctx, "category")
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			cmd.ID = id
			res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.CategoryDecider(), domain.CategoryCommand(cmd), c.meta())
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			return res.Position, func() (domain.Category, error) { return s.categoryAfterWrite(id) }, nil
		})
}

// UpdateCategory renames category id (superadmins only).
func (s *Service) UpdateCategory(ctx context.Context, c Caller, id int64, f CategoryFields) (domain.Category, error) {
	if err := c.superadmin(); err != nil {
		return domain.Category{}, err
	}
	cmd := domain.UpdateCategory{ID: id, Name: f.Name}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.CategoryDecider(), domain.CategoryCommand(cmd), c.meta())
	if err != nil {
		return domain.Category{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Category{}, err
	}
	return s.categoryAfterWrite(id)
}

// DeleteCategory deletes category id (superadmins only) and returns it as
// it was. Channels keep its
// id in their lists; readers skip categories that no longer exist.
func (s *Service) DeleteCategory(ctx context.Context, c Caller, id int64) (domain.Category, error) {
	if err := c.superadmin(); err != nil {
		return domain.Category{}, err
	}
	cmd := domain.DeleteCategory{ID: id}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.CategoryDecider(), domain.CategoryCommand(cmd), c.meta())
	if err != nil {
		return domain.Category{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return domain.Category{}, err
	}
	return res.State, nil
}

func (s *Service) categoryAfterWrite(id int64) (domain.Category, error) {
	cat, ok := s.cfg.Model.Category(id)
	if !ok {
		return domain.Category{}, adminNotFound("category", id)
	}
	return cat, nil
}

func (s *Service) adminCategoryExists(id int64) bool {
	_, ok := s.cfg.Model.Category(id)
	return ok
}

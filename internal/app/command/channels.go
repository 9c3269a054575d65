package command

import (
	"context"

	"tvsm/domain"
	"tvsm/internal/app"
)

// Channels and categories are the operator's line-up: they belong to no
// provider, and only superadmins change them (categories are Named
// handlers, in named.go).

// ChannelFields are the fields of a channel create or partial update; a
// null LogoURL, Description, Categories, TextName or TimeShiftDepth clears
// it.
type ChannelFields struct {
	Name           domain.Optional[string]
	Number         domain.Optional[int]
	LogoURL        domain.Optional[string]
	Description    domain.Optional[string]
	Categories     domain.Optional[[]int64]
	TextName       domain.Optional[string]
	Enabled        domain.Optional[bool]
	TimeShiftDepth domain.Optional[int]
}

// Channels handles the commands on channels.
type Channels struct{ w *writer }

// Create creates a channel with a new id. Its categories must exist.
func (h *Channels) Create(ctx context.Context, c app.Caller, f ChannelFields) (domain.Channel, error) {
	w := h.w
	if err := c.RequireSuperadmin(); err != nil {
		return domain.Channel{}, err
	}
	cmd := domain.CreateChannel{
		ID:             1, // placeholder for the dry run; the real id is taken after it
		Name:           f.Name.Or(""),
		Number:         f.Number.Or(0),
		LogoURL:        f.LogoURL.Or(""),
		Description:    f.Description.Or(""),
		Categories:     f.Categories.Or(nil),
		TextName:       f.TextName.Or(""),
		Enabled:        f.Enabled.Ptr(),
		TimeShiftDepth: f.TimeShiftDepth.Ptr(),
	}
	var extra map[string]string
	if missing := missingIDs(cmd.Categories, nil, w.categoryExists); len(missing) > 0 {
		addFieldProblem(&extra, "categories", unknownIDsProblem("category", missing))
	}
	if err := withProblems(dryRun(domain.ChannelDecider(), domain.ChannelCommand(cmd)), extra); err != nil {
		return domain.Channel{}, err
	}
	id, err := w.x.NewID(ctx, "channel")
	if err != nil {
		return domain.Channel{}, err
	}
	cmd.ID = id
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.ChannelDecider(), domain.ChannelCommand(cmd)); err != nil {
		return domain.Channel{}, err
	}
	return w.q.Channels.Current(id)
}

// Update changes the fields of channel id that f carries. Categories the
// channel does not list yet must exist.
func (h *Channels) Update(ctx context.Context, c app.Caller, id int64, f ChannelFields) (domain.Channel, error) {
	w := h.w
	if err := c.RequireSuperadmin(); err != nil {
		return domain.Channel{}, err
	}
	cmd := domain.UpdateChannel{ID: id, Name: f.Name, Number: f.Number, LogoURL: f.LogoURL, Description: f.Description,
		Categories: f.Categories, TextName: f.TextName, Enabled: f.Enabled, TimeShiftDepth: f.TimeShiftDepth}
	if v, ok := f.Categories.Get(); ok {
		cur, known := w.model.Channel(id)
		if missing := missingIDs(v, cur.Categories, w.categoryExists); len(missing) > 0 {
			if !known {
				return domain.Channel{}, notFound("channel", id)
			}
			extra := map[string]string{"categories": unknownIDsProblem("category", missing)}
			return domain.Channel{}, withProblems(dryRunOn(domain.ChannelDecider(), cur, domain.ChannelCommand(cmd)), extra)
		}
	}
	if _, err := execute(ctx, w, c, cmd.Stream(), domain.ChannelDecider(), domain.ChannelCommand(cmd)); err != nil {
		return domain.Channel{}, err
	}
	return w.q.Channels.Current(id)
}

// Delete deletes channel id and returns it as it was. Tariffs keep its id
// in their lists; readers skip channels that no longer exist.
func (h *Channels) Delete(ctx context.Context, c app.Caller, id int64) (domain.Channel, error) {
	if err := c.RequireSuperadmin(); err != nil {
		return domain.Channel{}, err
	}
	cmd := domain.DeleteChannel{ID: id}
	res, err := execute(ctx, h.w, c, cmd.Stream(), domain.ChannelDecider(), domain.ChannelCommand(cmd))
	if err != nil {
		return domain.Channel{}, err
	}
	return res.State, nil
}

func (w *writer) categoryExists(id int64) bool {
	_, ok := w.model.Category(id)
	return ok
}

package command

import (
	"context"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// Categories, regions and device types are global objects that are an id
// and a name; only superadmins change them, and one generic handler, Named,
// serves them all.

// NameFields are the fields of a create or update of a named object.
type NameFields struct {
	Name domain.Optional[string]
}

// CategoryFields are the fields of a category create or update.
type CategoryFields = NameFields

// Named handles the commands on one kind of named object: S is its state,
// C its command.
type Named[S any, C interface{ Stream() string }] struct {
	w       *writer
	kind    string // of its ids and streams: "category"
	decider func() domain.Decider[S, C]
	create  func(id int64, name string) C
	update  func(id int64, name domain.Optional[string]) C
	del     func(id int64) C
	current func(id int64) (S, error)
	// inUse, when set, refuses the delete of an object others refer to
	// (an *app.InUseError).
	inUse func(id int64) error
}

// Categories handles the commands on channel categories. Deleting one
// leaves its id in the channels' lists; readers skip categories that no
// longer exist.
type Categories = Named[domain.Category, domain.CategoryCommand]

// Regions handles the commands on regions. A region that providers name
// cannot be deleted.
type Regions = Named[domain.Region, domain.RegionCommand]

// DeviceTypes handles the commands on device types.
type DeviceTypes = Named[domain.DeviceType, domain.DeviceTypeCommand]

// Create creates an object with a new id.
func (h *Named[S, C]) Create(ctx context.Context, c app.Caller, f NameFields) (S, error) {
	var zero S
	if err := c.RequireSuperadmin(); err != nil {
		return zero, err
	}
	cmd := h.create(1, f.Name.Or("")) // placeholder id for the dry run
	if err := dryRun(h.decider(), cmd); err != nil {
		return zero, err
	}
	id, err := h.w.x.NewID(ctx, h.kind)
	if err != nil {
		return zero, err
	}
	cmd = h.create(id, f.Name.Or(""))
	if _, err := execute(ctx, h.w, c, cmd.Stream(), h.decider(), cmd); err != nil {
		return zero, err
	}
	return h.current(id)
}

// Update renames object id; the same name appends nothing.
func (h *Named[S, C]) Update(ctx context.Context, c app.Caller, id int64, f NameFields) (S, error) {
	var zero S
	if err := c.RequireSuperadmin(); err != nil {
		return zero, err
	}
	cmd := h.update(id, f.Name)
	if _, err := execute(ctx, h.w, c, cmd.Stream(), h.decider(), cmd); err != nil {
		return zero, err
	}
	return h.current(id)
}

// Delete deletes object id and returns it as it was.
func (h *Named[S, C]) Delete(ctx context.Context, c app.Caller, id int64) (S, error) {
	var zero S
	if err := c.RequireSuperadmin(); err != nil {
		return zero, err
	}
	if h.inUse != nil {
		if err := h.inUse(id); err != nil {
			return zero, err
		}
	}
	cmd := h.del(id)
	res, err := execute(ctx, h.w, c, cmd.Stream(), h.decider(), cmd)
	if err != nil {
		return zero, err
	}
	return res.State, nil
}

func newCategories(w *writer) *Categories {
	return &Categories{w: w, kind: "category", decider: domain.CategoryDecider,
		create: func(id int64, name string) domain.CategoryCommand { return domain.CreateCategory{ID: id, Name: name} },
		update: func(id int64, name domain.Optional[string]) domain.CategoryCommand {
			return domain.UpdateCategory{ID: id, Name: name}
		},
		del:     func(id int64) domain.CategoryCommand { return domain.DeleteCategory{ID: id} },
		current: w.q.Categories.Current,
	}
}

func newRegions(w *writer) *Regions {
	return &Regions{w: w, kind: "region", decider: domain.RegionDecider,
		create: func(id int64, name string) domain.RegionCommand { return domain.CreateRegion{ID: id, Name: name} },
		update: func(id int64, name domain.Optional[string]) domain.RegionCommand {
			return domain.UpdateRegion{ID: id, Name: name}
		},
		del:     func(id int64) domain.RegionCommand { return domain.DeleteRegion{ID: id} },
		current: w.q.Regions.Current,
		inUse: func(id int64) error {
			if by := w.model.ProvidersInRegion(id); len(by) > 0 {
				return &app.InUseError{What: "region", ID: id, By: "provider", IDs: by}
			}
			l, err := w.model.ListAccounts(readmodel.AccountQuery{Scope: readmodel.AllProviders, RegionTag: id, Page: inUsePage})
			if by := idsOf(l, err, func(a readmodel.Account) int64 { return a.ID }); len(by) > 0 {
				return &app.InUseError{What: "region", ID: id, By: "account", IDs: by}
			}
			return nil
		},
	}
}

// inUsePage is how many of the objects that refer to one an in-use
// refusal names.
var inUsePage = readmodel.Page{Limit: 20}

// idsOf returns the ids of a list's page.
func idsOf[T any](l readmodel.List[T], err error, id func(T) int64) []int64 {
	if err != nil {
		return nil
	}
	var ids []int64
	for v := range l.Items {
		ids = append(ids, id(v))
	}
	return ids
}

func newDeviceTypes(w *writer) *DeviceTypes {
	return &DeviceTypes{w: w, kind: "device_type", decider: domain.DeviceTypeDecider,
		create: func(id int64, name string) domain.DeviceTypeCommand {
			return domain.CreateDeviceType{ID: id, Name: name}
		},
		update: func(id int64, name domain.Optional[string]) domain.DeviceTypeCommand {
			return domain.UpdateDeviceType{ID: id, Name: name}
		},
		del:     func(id int64) domain.DeviceTypeCommand { return domain.DeleteDeviceType{ID: id} },
		current: w.q.DeviceTypes.Current,
		inUse: func(id int64) error {
			l, err := w.model.ListDevices(readmodel.DeviceQuery{Scope: readmodel.AllProviders, DeviceType: id, Page: inUsePage})
			if by := idsOf(l, err, func(d readmodel.Device) int64 { return d.ID }); len(by) > 0 {
				return &app.InUseError{What: "device_type", ID: id, By: "device", IDs: by}
			}
			return nil
		},
	}
}

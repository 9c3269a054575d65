package command

import (
	"context"
	"errors"
	"fmt"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// DeviceInput is the body of a device create or update by a provider
// (TVIP's device object). A create needs Account and UniqueID or MAC (the
// unique id then is the MAC, as set-top boxes identify themselves by it);
// Class defaults to stb. An update changes the provider's fields present;
// UniqueID, Class, Model and Provider may be re-sent but cannot change,
// and a new Account moves the device there (same provider).
type DeviceInput struct {
	Account           domain.Optional[int64]
	UniqueID          domain.Optional[string]
	Class             domain.Optional[string]
	Model             domain.Optional[string]
	Provider          domain.Optional[int64]
	MAC               domain.Optional[string]
	RemoteCustomField domain.Optional[string]
	Comment           domain.Optional[string]
	UseNAT            domain.Optional[bool]
	UdpxyAddr         domain.Optional[string]
	DeviceType        domain.Optional[int64]
}

// fields returns the provider's fields of a create.
func (in DeviceInput) fields() domain.DeviceFields {
	return domain.DeviceFields{MAC: in.MAC.Ptr(), RemoteCustomField: in.RemoteCustomField.Ptr(), Comment: in.Comment.Ptr(),
		UseNAT: in.UseNAT.Or(false), UdpxyAddr: in.UdpxyAddr.Ptr(), DeviceType: in.DeviceType.Ptr()}
}

// Create registers a device for an account before it ever logs in (TVIP's
// quick bind): it is bound at once, counts against the device limit, and
// logs in later with the account's credentials as the device it is. A
// unique id already bound within the provider is refused (400 naming
// unique_id).
func (h *Devices) Create(ctx context.Context, c app.Caller, in DeviceInput) (readmodel.Device, error) {
	w := h.w
	accountID, ok := in.Account.Get()
	if !ok {
		return readmodel.Device{}, domain.NewValidationError("account", problemRequired)
	}
	acc, ok := w.model.Account(accountID)
	if !ok {
		return readmodel.Device{}, domain.NewValidationError("account", problemUnknown)
	}
	if err := c.CheckScope(acc.Provider); err != nil {
		return readmodel.Device{}, fmt.Errorf("account %d: %w", accountID, err)
	}
	if p, ok := in.Provider.Get(); ok && p != acc.Provider {
		return readmodel.Device{}, domain.NewValidationError("provider", "must be the account's provider")
	}
	uid, hasUID := in.UniqueID.Get()
	if !hasUID || uid == "" {
		if mac, ok := in.MAC.Get(); ok {
			uid, _ = domain.NormalizeMAC(mac) // a bad MAC is named below
		}
	}
	cmd := domain.BindDevice{AccountID: accountID, UniqueID: uid, Class: domain.DeviceClass(in.Class.Or(string(domain.DeviceSTB))),
		Model: in.Model.Or(""), Fields: in.fields()}
	probe := cmd
	probe.DeviceID = 1
	if _, err := domain.AccountDecider().Decide(domain.Account{ID: accountID, Provider: acc.Provider}, probe, w.now()); err != nil {
		return readmodel.Device{}, err
	}
	if err := h.checkDeviceType(in.DeviceType, nil); err != nil {
		return readmodel.Device{}, err
	}
	if l, err := w.model.ListDevices(readmodel.DeviceQuery{Scope: readmodel.ProviderScope(acc.Provider), UniqueID: uid}); err == nil && l.Total > 0 {
		return readmodel.Device{}, domain.NewValidationError("unique_id", fmt.Sprintf("already bound (device %d)", l.Slice()[0].ID))
	}
	cmd.ProviderLimit = w.providerDeviceLimit(acc.Provider)
	id, err := w.x.NewID(ctx, "device")
	if err != nil {
		return readmodel.Device{}, err
	}
	cmd.DeviceID = id
	res, err := execute(ctx, w, c, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd))
	if err != nil {
		return readmodel.Device{}, limitProblem(err)
	}
	d, ok := res.State.DeviceByUniqueID(uid)
	if !ok { // unreachable: the decision bound it or found it bound
		return readmodel.Device{}, fmt.Errorf("command: device %q not bound to account %d after binding", uid, accountID)
	}
	return w.q.Devices.Current(d.ID)
}

// Update changes the provider's fields of device id that in carries, and
// moves it to another account of the same provider when Account changes
// (bound to the new account first, within its limit, then unbound from the
// old one, which ends the device's own subscriptions). The device keeps
// its id.
func (h *Devices) Update(ctx context.Context, c app.Caller, id int64, in DeviceInput) (readmodel.Device, error) {
	w := h.w
	cur, err := w.q.Devices.Get(ctx, c, id)
	if err != nil {
		return readmodel.Device{}, err
	}
	var p = map[string]string{}
	if v, ok := in.Provider.Get(); in.Provider.Present && (!ok || v != cur.Provider) {
		p["provider"] = problemImmutable
	}
	if v, ok := in.Class.Get(); in.Class.Present && (!ok || domain.DeviceClass(v) != cur.Class) {
		if parsed, err := domain.ParseDeviceClass(v); err != nil || parsed != cur.Class {
			p["class"] = problemImmutable
		}
	}
	if v, ok := in.Model.Get(); ok && v != cur.Model {
		p["model"] = problemImmutable
	}
	if len(p) > 0 {
		return readmodel.Device{}, &domain.ValidationError{Fields: p}
	}
	if err := h.checkDeviceType(in.DeviceType, cur.DeviceType); err != nil {
		return readmodel.Device{}, err
	}
	change := domain.ChangeDevice{AccountID: cur.Account, DeviceID: id, UniqueID: in.UniqueID, MAC: in.MAC,
		RemoteCustomField: in.RemoteCustomField, Comment: in.Comment, UseNAT: in.UseNAT, UdpxyAddr: in.UdpxyAddr, DeviceType: in.DeviceType}
	if target, ok := in.Account.Get(); ok && target != cur.Account {
		return h.move(ctx, c, cur, target, change)
	} else if in.Account.IsNull() {
		return readmodel.Device{}, domain.NewValidationError("account", "must not be null")
	}
	if _, err := execute(ctx, w, c, change.Stream(), domain.AccountDecider(), domain.AccountCommand(change)); err != nil {
		return readmodel.Device{}, err
	}
	return w.q.Devices.Current(id)
}

// move binds device cur, changed by change, to account target and unbinds
// it from its account.
func (h *Devices) move(ctx context.Context, c app.Caller, cur readmodel.Device, target int64, change domain.ChangeDevice) (readmodel.Device, error) {
	w := h.w
	acc, ok := w.model.Account(target)
	if !ok {
		return readmodel.Device{}, domain.NewValidationError("account", problemUnknown)
	}
	if err := c.CheckScope(acc.Provider); err != nil {
		return readmodel.Device{}, fmt.Errorf("account %d: %w", target, err)
	}
	if acc.Provider != cur.Provider {
		return readmodel.Device{}, domain.NewValidationError("account", "belongs to another provider")
	}
	// The fields after the change, decided on the device as it is.
	st, ok := w.model.AccountState(cur.Account)
	if !ok {
		return readmodel.Device{}, fmt.Errorf("device %d: %w", cur.ID, domain.ErrNotFound)
	}
	events, err := domain.AccountDecider().Decide(st, change, w.now())
	if err != nil {
		return readmodel.Device{}, err
	}
	moved, _ := domain.AccountDecider().Fold(st, events...).Device(cur.ID)
	bind := domain.BindDevice{AccountID: target, DeviceID: cur.ID, UniqueID: moved.UniqueID, Class: moved.Class, Model: moved.Model,
		Fields: moved.DeviceFields}
	bind.ProviderLimit = w.providerDeviceLimit(acc.Provider)
	if _, err := execute(ctx, w, c, bind.Stream(), domain.AccountDecider(), domain.AccountCommand(bind)); err != nil {
		return readmodel.Device{}, limitProblem(err)
	}
	unbind := domain.UnbindDevice{AccountID: cur.Account, DeviceID: cur.ID}
	if _, err := execute(ctx, w, c, unbind.Stream(), domain.AccountDecider(), domain.AccountCommand(unbind)); err != nil &&
		!errors.Is(err, domain.ErrNotFound) {
		return readmodel.Device{}, err
	}
	return w.q.Devices.Current(cur.ID)
}

// limitProblem turns a refusal by the device limit into the 400 a provider
// gets, naming the account; other errors pass.
func limitProblem(err error) error {
	var limit *domain.DeviceLimitError
	if errors.As(err, &limit) {
		return domain.NewValidationError("account", fmt.Sprintf("has the maximum of %d devices bound", limit.Limit))
	}
	return err
}

// checkDeviceType checks that a device_type given names a device type;
// the current one (cur) passes unchecked.
func (h *Devices) checkDeviceType(o domain.Optional[int64], cur *int64) error {
	id, ok := o.Get()
	if !ok || id <= 0 || cur != nil && *cur == id {
		return nil
	}
	if _, found := h.w.model.DeviceType(id); !found {
		return domain.NewValidationError("device_type", problemUnknown)
	}
	return nil
}

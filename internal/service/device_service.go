package service

import (
	"context"
	"fmt"

	"tvsm/domain"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// ListDevices returns the bound devices q selects within the caller's
// scope (q.Scope is overwritten).
func (s *Service) ListDevices(ctx context.Context, c Caller, q readmodel.DeviceQuery) (readmodel.List[readmodel.Device], error) {
	q.Scope = c.papiScope()
	l, err := s.cfg.Model.ListDevices(q)
	return l, papiListError(err)
}

// Device returns bound device id (domain.ErrNotFound, ErrForbidden as
// Account does).
func (s *Service) Device(ctx context.Context, c Caller, id int64) (readmodel.Device, error) {
	d, ok := s.cfg.Model.Device(id)
	if !ok {
		return readmodel.Device{}, fmt.Errorf("device %d: %w", id, domain.ErrNotFound)
	}
	if err := c.checkScope(d.Provider); err != nil {
		return readmodel.Device{}, fmt.Errorf("device %d: %w", id, err)
	}
	return d, nil
}

// UnbindDevice removes device id from its account (DELETE of a device) and
// returns it as it was. The device may bind again by logging in.
func (s *Service) UnbindDevice(ctx context.Context, c Caller, id int64) (readmodel.Device, error) {
	cur, err := s.Device(ctx, c, id)
	if err != nil {
		return readmodel.Device{}, err
	}
	cmd := domain.UnbindDevice{AccountID: cur.Account, DeviceID: id}
	res, err := app.Execute(ctx, s.cfg.Executor, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd), c.meta())
	if err != nil {
		return readmodel.Device{}, err
	}
	if err := s.written(ctx, res.Position); err != nil {
		return readmodel.Device{}, err
	}
	return cur, nil
}

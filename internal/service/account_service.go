package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// Problem texts of the Provider API's own checks (the domain has its own).
const (
	papiUnknown   = "not found"
	papiTaken     = "already taken"
	papiRequired  = "required"
	papiImmutable = "cannot be changed"
)

// AccountInput is the body of an account create or update (spec §2.1),
// every field in its three states: absent, null or a value. A create needs
// Login, PinMD5, Fullname and Provider (a provider-scoped admin may leave
// Provider out: it defaults to the admin's provider). An update changes the
// fields present; null on a non-nullable field means "unchanged", as sync
// jobs re-send pin_md5: null as the API returns it.
type AccountInput struct {
	Enabled                domain.Optional[bool]
	Login                  domain.Optional[string]
	PinMD5                 domain.Optional[string] `json:"pin_md5,omitzero"`
	Fullname               domain.Optional[string]
	Provider               domain.Optional[int64]
	RemoteCustomField      domain.Optional[string]
	ContractInfo           domain.Optional[string]
	MainAddress            domain.Optional[string]
	AccountDesc            domain.Optional[string]
	RegionTag              domain.Optional[string]
	DevicesPerAccountLimit domain.Optional[int64]
}

// AccountView is an account as the Provider API shows it: the read model's
// copy and whether its devices get service now (enabled, with a
// subscription active now; spec §3).
type AccountView struct {
	readmodel.Account
	ServicesAvailable bool
}

// ListAccounts returns the accounts q selects within the caller's scope (a
// provider-scoped admin never sees another provider's accounts; q.Scope is
// overwritten).
func (s *Service) ListAccounts(ctx context.Context, c Caller, q readmodel.AccountQuery) (readmodel.List[AccountView], error) {
	q.Scope = c.papiScope()
	l, err := s.cfg.Model.ListAccounts(q)
	if err != nil {
		return readmodel.List[AccountView]{}, papiListError(err)
	}
	now := s.now()
	return readmodel.List[AccountView]{Total: l.Total, Items: func(yield func(AccountView) bool) {
		for a := range l.Items {
			if !yield(s.viewAccount(a, now)) {
				return
			}
		}
	}}, nil
}

// Account returns account id: domain.ErrNotFound when there is none (or it
// was deleted), ErrForbidden when it belongs to a provider outside the
// caller's scope.
func (s *Service) Account(ctx context.Context, c Caller, id int64) (AccountView, error) {
	a, err := s.scopedAccount(c, id)
	if err != nil {
		return AccountView{}, err
	}
	return s.viewAccount(a, s.now()), nil
}

// scopedAccount returns the read model's account id after the scope check.
func (s *Service) scopedAccount(c Caller, id int64) (readmodel.Account, error) {
	a, ok := s.cfg.Model.Account(id)
	if !ok {
		return readmodel.Account{}, fmt.Errorf("account %d: %w", id, domain.ErrNotFound)
	}
	if err := c.checkScope(a.Provider); err != nil {
		return readmodel.Account{}, fmt.Errorf("account %d: %w", id, err)
	}
	return a, nil
}

func (s *Service) viewAccount(a readmodel.Account, now time.Time) AccountView {
	v := AccountView{Account: a}
	if a.Enabled {
		for _, sub := range s.cfg.Model.AccountSubscriptions(a.ID) {
			if sub.ActiveAt(now) {
				v.ServicesAvailable = true
				break
			}
		}
	}
	return v
}

// CreateAccount creates an account and answers with encode's rendering of
// it, once the read model shows it. The login is reserved within the
// provider before the account is created (app.Reserve on app.LoginStream),
// so of concurrent creates of one login exactly one succeeds; the others
// fail with a *domain.ValidationError naming login. With the caller's
// Idempotency-Key the create happens at most once (app.Executor.Idempotent);
// a retry gets the recorded answer.
func (s *Service) CreateAccount(ctx context.Context, c Caller, in AccountInput, encode BodyEncoder[AccountView]) ([]byte, error) {
	provider, hasProvider := in.Provider.Get()
	if !hasProvider && c.Scope != nil {
		provider = *c.Scope
	}
	cmd := domain.CreateAccount{
		Provider:               provider,
		Login:                  in.Login.Or(""),
		PinMD5:                 in.PinMD5.Or(""),
		Fullname:               in.Fullname.Or(""),
		Enabled:                in.Enabled.Ptr(),
		RemoteCustomField:      in.RemoteCustomField.Ptr(),
		ContractInfo:           in.ContractInfo.Ptr(),
		MainAddress:            in.MainAddress.Ptr(),
		AccountDesc:            in.AccountDesc.Ptr(),
		RegionTag:              in.RegionTag.Ptr(),
		DevicesPerAccountLimit: papiIntPtr(in.DevicesPerAccountLimit),
	}
	if provider > 0 {
		if err := c.checkScope(provider); err != nil {
			return nil, err
		}
	}
	// Every field problem at once, before an id or a login is taken: the
	// decision on an empty account checks the fields alone.
	probe := cmd
	probe.ID = 1
	if _, err := domain.AccountDecider().Decide(domain.Account{}, probe, s.now()); err != nil {
		return nil, err
	}
	if _, ok := s.cfg.Model.Provider(provider); !ok {
		return nil, domain.NewValidationError("provider", papiUnknown)
	}

	return createOnce(ctx, s, c, "account", fingerprintOf("account", in), encode,
		func(ctx context.Context, pins *app.Pins) (eventstore.Position, func() (AccountView, error), error) {
			id, err := pins.ID(ctx, "account")
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			cmd.ID = id
			res, err := s.createAccountReserved(ctx, c, cmd)
			if err != nil {
				return eventstore.Position{}, nil, err
			}
			return res.Position, func() (AccountView, error) { return s.accountNow(id) }, nil
		})
}

// createAccountReserved reserves the login for the new account and creates
// it: in one atomic append when the store can, else one after the other,
// giving the login back when the create fails.
func (s *Service) createAccountReserved(ctx context.Context, c Caller, cmd domain.CreateAccount) (app.Result[domain.Account], error) {
	stream := app.LoginStream(cmd.Provider, cmd.Login)
	owner := domain.AccountStream(cmd.ID)
	meta := c.meta()
	meta.NewStream = true // cmd.ID was just allocated
	// One atomic append of reservation and account when the store can;
	// otherwise (or when the login is not plainly free) reserve, then create.
	res, handled, err := app.ExecuteReserving(ctx, s.cfg.Executor, stream, owner, domain.AccountDecider(), domain.AccountCommand(cmd), meta)
	if handled {
		return res, err
	}
	if err := s.reserveAccountLogin(ctx, c, stream, owner); err != nil {
		return app.Result[domain.Account]{}, err
	}
	res, err = app.Execute(ctx, s.cfg.Executor, owner, domain.AccountDecider(), domain.AccountCommand(cmd), meta)
	if err != nil {
		s.releaseAccountLogin(ctx, c, stream, owner)
		return app.Result[domain.Account]{}, err
	}
	return res, nil
}

// reserveAccountLogin makes owner the holder of a login, converting "taken" into
// the validation error the API answers (400 naming login).
func (s *Service) reserveAccountLogin(ctx context.Context, c Caller, stream, owner string) error {
	err := s.cfg.Executor.Reserve(ctx, stream, owner, c.meta(), s.accountAlive)
	if errors.Is(err, app.ErrTaken) {
		return domain.NewValidationError("login", papiTaken)
	}
	return err
}

// releaseAccountLogin gives a login back, best effort: a failure leaves a
// reservation that the next request for the login takes over once its
// owner is found dead (app.Reserve), so it is logged, not returned.
func (s *Service) releaseAccountLogin(ctx context.Context, c Caller, stream, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.cfg.Executor.Release(rctx, stream, owner, c.meta()); err != nil {
		s.log.Warn("login release failed", "stream", stream, "owner", owner, "error", err)
	}
}

// accountAlive is the app.IsAlive of login reservations: the owner
// "account-{id}" exists and is not deleted. It reads the stream rather than
// the read model, which may lag behind another node's writes.
func (s *Service) accountAlive(ctx context.Context, owner string) (bool, error) {
	a, found, err := s.loadAccountStream(ctx, owner)
	if err != nil || !found {
		return false, err
	}
	return a.Exists(), nil
}

// loadAccountStream folds an account stream read from the store; found is false
// when the stream has no events.
func (s *Service) loadAccountStream(ctx context.Context, stream string) (domain.Account, bool, error) {
	d := domain.AccountDecider()
	st, head, err := record.Fold(ctx, s.rec, stream, record.Head{}, d.Initial(),
		func(st domain.Account, e domain.Event, _ eventstore.RecordedEvent) (domain.Account, error) {
			return d.Evolve(st, e), nil
		})
	if err != nil {
		return domain.Account{}, false, err
	}
	return st, head.Exists, nil
}

// UpdateAccount changes the fields of account id that in carries (POST with
// id, or PUT) and returns the account as the read model then shows it. A
// re-sent record that changes nothing appends nothing. A new login is
// reserved before the change and the old one released after it.
func (s *Service) UpdateAccount(ctx context.Context, c Caller, id int64, in AccountInput) (AccountView, error) {
	cur, err := s.scopedAccount(c, id)
	if err != nil {
		return AccountView{}, err
	}
	cmd := domain.UpdateAccount{
		ID:                     id,
		Enabled:                in.Enabled,
		Login:                  in.Login,
		PinMD5:                 in.PinMD5,
		Fullname:               in.Fullname,
		Provider:               in.Provider,
		RemoteCustomField:      in.RemoteCustomField,
		ContractInfo:           in.ContractInfo,
		MainAddress:            in.MainAddress,
		AccountDesc:            in.AccountDesc,
		RegionTag:              in.RegionTag,
		DevicesPerAccountLimit: papiIntOptional(in.DevicesPerAccountLimit),
	}
	newLogin, changing := in.Login.Get()
	changing = changing && newLogin != cur.Login
	var loginStream, owner string
	if changing {
		// Field problems first, so that a bad request reserves nothing.
		if st, ok := s.cfg.Model.AccountState(id); ok {
			if _, err := domain.AccountDecider().Decide(st, cmd, s.now()); err != nil {
				return AccountView{}, err
			}
		}
		loginStream, owner = app.LoginStream(cur.Provider, newLogin), domain.AccountStream(id)
		if err := s.reserveAccountLogin(ctx, c, loginStream, owner); err != nil {
			return AccountView{}, err
		}
	}
	// The login the decision replaced, seen by the decision itself rather
	// than by the read model, which may lag behind another node.
	oldLogin := cur.Login
	res, err := app.Execute(ctx, s.cfg.Executor, domain.AccountStream(id), loginSeenBy(&oldLogin), domain.AccountCommand(cmd), c.meta())
	if err != nil {
		if changing {
			s.releaseAccountLogin(ctx, c, loginStream, owner)
		}
		return AccountView{}, err
	}
	if changing && oldLogin != res.State.Login {
		s.releaseAccountLogin(ctx, c, app.LoginStream(cur.Provider, oldLogin), owner)
	}
	return s.accountAfter(ctx, id, res.Position)
}

// accountAfter waits for the read model to apply pos and returns account id.
func (s *Service) accountAfter(ctx context.Context, id int64, pos eventstore.Position) (AccountView, error) {
	if err := s.written(ctx, pos); err != nil {
		return AccountView{}, err
	}
	return s.accountNow(id)
}

// accountNow returns account id as the read model shows it now (ErrNotFound
// when someone deleted it meanwhile).
func (s *Service) accountNow(id int64) (AccountView, error) {
	a, ok := s.cfg.Model.Account(id)
	if !ok {
		return AccountView{}, fmt.Errorf("account %d: %w", id, domain.ErrNotFound)
	}
	return s.viewAccount(a, s.now()), nil
}

// DeleteAccount deletes account id with its subscriptions and devices,
// releases its login and returns the account as it was.
func (s *Service) DeleteAccount(ctx context.Context, c Caller, id int64) (AccountView, error) {
	cur, err := s.scopedAccount(c, id)
	if err != nil {
		return AccountView{}, err
	}
	view := s.viewAccount(cur, s.now())
	login := cur.Login
	d := loginSeenBy(&login)
	owner := domain.AccountStream(id)
	res, err := app.Execute(ctx, s.cfg.Executor, owner, d, domain.AccountCommand(domain.DeleteAccount{ID: id}), c.meta())
	if err != nil {
		return AccountView{}, err
	}
	s.releaseAccountLogin(ctx, c, app.LoginStream(cur.Provider, login), owner)
	if err := s.written(ctx, res.Position); err != nil {
		return AccountView{}, err
	}
	view.ServicesAvailable = false
	return view, nil
}

// papiScope is the read model scope of the caller's lists.
func (c Caller) papiScope() readmodel.Scope {
	if c.Scope == nil {
		return readmodel.AllProviders
	}
	return readmodel.ProviderScope(*c.Scope)
}

// papiListError turns an unknown sort field into a validation error (the HTTP
// layer checks sort fields first; this is the backstop).
func papiListError(err error) error {
	if errors.Is(err, readmodel.ErrUnknownSortField) {
		return domain.NewValidationError("sort", err.Error())
	}
	return err
}

// papiIntPtr converts a nullable integer of the wire into the domain's *int,
// keeping values outside int's range invalid.
func papiIntPtr(o domain.Optional[int64]) *int {
	v, ok := o.Get()
	if !ok {
		return nil
	}
	n := papiClampLimit(v)
	return &n
}

// papiIntOptional converts an Optional[int64] into an Optional[int].
func papiIntOptional(o domain.Optional[int64]) domain.Optional[int] {
	switch {
	case !o.Present:
		return domain.Optional[int]{}
	case o.Null:
		return domain.Null[int]()
	}
	return domain.Some(papiClampLimit(o.Value))
}

// papiClampLimit maps an int64 onto int; a value outside the domain's range
// (0..domain.MaxDeviceLimit) becomes -1, which the domain refuses.
func papiClampLimit(v int64) int {
	if v < 0 || v > domain.MaxDeviceLimit {
		return -1
	}
	return int(v)
}

// loginSeenBy is the account decider, recording in *login the login of the
// state each decision is made on: the login a change replaced, as the
// stream (not the possibly lagging read model) had it.
func loginSeenBy(login *string) domain.Decider[domain.Account, domain.AccountCommand] {
	d := domain.AccountDecider()
	decide := d.Decide
	d.Decide = func(st domain.Account, cmd domain.AccountCommand, now time.Time) ([]domain.Event, error) {
		*login = st.Login
		return decide(st, cmd, now)
	}
	return d
}

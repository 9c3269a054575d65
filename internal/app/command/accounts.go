package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/app"
	"tvsm/internal/app/query"
)

// Problem texts of the Provider API's own checks (the domain has its own).
const (
	problemUnknown   = "not found"
	problemTaken     = "already taken"
	problemRequired  = "required"
	problemImmutable = "cannot be changed"
)

// AccountInput is the body of an account create or update, every field in
// its three states: absent, null or a value. A create needs Login, PinMD5,
// Fullname and Provider (a provider-scoped admin may leave Provider out: it
// defaults to the admin's provider). An update changes the fields present;
// null on a non-nullable field means "unchanged", as sync jobs re-send
// pin_md5: null as the API returns it.
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
	RegionTag              domain.Optional[int64]
	DevicesPerAccountLimit domain.Optional[int64]
}

// Accounts handles the commands on accounts. A login is unique within its
// provider: it is held by a reservation stream (app.LoginStream) owned by
// the account, taken before the account is created or renamed and given
// back after it is renamed or deleted.
type Accounts struct{ w *writer }

// Create creates an account and returns it as the read model shows it once
// the write is applied. The login is reserved within the provider first
// (in one atomic append with the account when the store can), so of
// concurrent creates of one login exactly one succeeds; the others fail
// with a *domain.ValidationError naming login.
func (h *Accounts) Create(ctx context.Context, c app.Caller, in AccountInput) (query.AccountView, error) {
	w := h.w
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
		DevicesPerAccountLimit: intPtr(in.DevicesPerAccountLimit),
	}
	if provider > 0 {
		if err := c.CheckScope(provider); err != nil {
			return query.AccountView{}, err
		}
	}
	// Every field problem at once, before an id or a login is taken: the
	// decision on an empty account checks the fields alone.
	probe := cmd
	probe.ID = 1
	_, err := domain.AccountDecider().Decide(domain.Account{}, probe, w.now())
	if !in.PinMD5.HasValue() {
		// "" creates an account without a password (TVIP's SDKs send it
		// by default); a create that leaves the key out, or sends null,
		// has most likely forgotten it.
		err = withProblems(err, map[string]string{"pin_md5": problemRequired})
	}
	if err != nil {
		return query.AccountView{}, err
	}
	if _, ok := w.model.Provider(provider); !ok {
		return query.AccountView{}, domain.NewValidationError("provider", problemUnknown)
	}
	if err := h.checkRegion(in.RegionTag, nil); err != nil {
		return query.AccountView{}, err
	}

	id, err := w.x.NewID(ctx, "account")
	if err != nil {
		return query.AccountView{}, err
	}
	cmd.ID = id
	res, err := h.createReserved(ctx, c, cmd)
	if err != nil {
		return query.AccountView{}, err
	}
	if err := w.written(ctx, res.Position); err != nil {
		return query.AccountView{}, err
	}
	return w.q.Accounts.Current(id)
}

// createReserved reserves the login for the new account and creates it: in
// one atomic append when the store can, else one after the other, giving
// the login back when the create fails.
func (h *Accounts) createReserved(ctx context.Context, c app.Caller, cmd domain.CreateAccount) (app.Result[domain.Account], error) {
	if err := h.checkLegacyLogin(cmd.Provider, cmd.Login, cmd.ID); err != nil {
		return app.Result[domain.Account]{}, err
	}
	stream := h.w.x.LoginStream(cmd.Provider, cmd.Login)
	owner := domain.AccountStream(cmd.ID)
	meta := c.Meta()
	meta.NewStream = true // cmd.ID was just allocated
	res, handled, err := app.ExecuteReserving(ctx, h.w.x, stream, owner, domain.AccountDecider(), domain.AccountCommand(cmd), meta)
	if handled {
		return res, err
	}
	if err := h.reserveLogin(ctx, c, cmd.Provider, cmd.Login, cmd.ID); err != nil {
		return app.Result[domain.Account]{}, err
	}
	res, err = app.Execute(ctx, h.w.x, owner, domain.AccountDecider(), domain.AccountCommand(cmd), meta)
	if err != nil {
		h.releaseLogin(ctx, c, stream, owner)
		return app.Result[domain.Account]{}, err
	}
	return res, nil
}

// reserveLogin makes account id the holder of a login, converting "taken"
// into the validation error the API answers (400 naming login).
func (h *Accounts) reserveLogin(ctx context.Context, c app.Caller, provider int64, login string, id int64) error {
	if err := h.checkLegacyLogin(provider, login, id); err != nil {
		return err
	}
	err := h.w.x.Reserve(ctx, h.w.x.LoginStream(provider, login), domain.AccountStream(id), c.Meta(), h.holds(provider, login))
	if errors.Is(err, app.ErrTaken) {
		return domain.NewValidationError("login", problemTaken)
	}
	return err
}

// checkLegacyLogin refuses a login that a live account of a store written
// before logins were hashed holds through its old reservation stream
// ("login-{provider}-{login}", no longer written): the read model knows
// those accounts, and asking it costs a map lookup where reading the old
// stream would cost a store read on every create. The account id itself
// may hold it: a keyed create retried after its answer was lost (the node
// died before recording it) creates the same account again, which the
// read model already shows.
func (h *Accounts) checkLegacyLogin(provider int64, login string, id int64) error {
	if a, taken := h.w.model.AccountByLogin(provider, login); taken && a.ID != id {
		return domain.NewValidationError("login", problemTaken)
	}
	return nil
}

// releaseLogin gives a login back, best effort: a failure leaves a
// reservation that the next request for the login takes over once its
// owner is found dead (app.Executor.Reserve), so it is logged, not
// returned.
func (h *Accounts) releaseLogin(ctx context.Context, c app.Caller, stream, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := h.w.x.Release(rctx, stream, owner, c.Meta()); err != nil {
		h.w.log.Warn("login release failed", "stream", stream, "owner", owner, "error", err)
	}
}

// holds is the app.IsAlive of the reservation of login in provider: its
// owner "account-{id}" exists, is not deleted and has that login. A
// reservation is left behind by a crash between two appends: before the
// account is created (no account), after the account was deleted (deleted),
// and on both sides of a login change, which reserves the new login, then
// changes the account, then releases the old one (an account with another
// login). Each is taken over once older than the grace period. It reads the
// stream rather than the read model, which may lag behind another node's
// writes.
func (h *Accounts) holds(provider int64, login string) app.IsAlive {
	return func(ctx context.Context, owner string) (bool, error) {
		a, found, err := h.w.loadAccount(ctx, owner)
		if err != nil || !found {
			return false, err
		}
		return a.Exists() && a.Provider == provider && a.Login == login, nil
	}
}

// Update changes the fields of account id that in carries (POST with id, or
// PUT) and returns the account as the read model then shows it. A re-sent
// record that changes nothing appends nothing. A new login is reserved
// before the change and the old one released after it.
func (h *Accounts) Update(ctx context.Context, c app.Caller, id int64, in AccountInput) (query.AccountView, error) {
	w := h.w
	cur, err := w.q.Accounts.Scoped(c, id)
	if err != nil {
		return query.AccountView{}, err
	}
	if err := h.checkRegion(in.RegionTag, cur.RegionTag); err != nil {
		return query.AccountView{}, err
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
		DevicesPerAccountLimit: intOptional(in.DevicesPerAccountLimit),
	}
	newLogin, changing := in.Login.Get()
	changing = changing && newLogin != cur.Login
	var loginStream, owner string
	if changing {
		// Field problems first, so that a bad request reserves nothing.
		if st, ok := w.model.AccountState(id); ok {
			if _, err := domain.AccountDecider().Decide(st, cmd, w.now()); err != nil {
				return query.AccountView{}, err
			}
		}
		loginStream, owner = h.w.x.LoginStream(cur.Provider, newLogin), domain.AccountStream(id)
		if err := h.reserveLogin(ctx, c, cur.Provider, newLogin, id); err != nil {
			return query.AccountView{}, err
		}
	}
	// The login the decision replaced, seen by the decision itself rather
	// than by the read model, which may lag behind another node.
	oldLogin := cur.Login
	res, err := app.Execute(ctx, w.x, domain.AccountStream(id), loginSeenBy(&oldLogin), domain.AccountCommand(cmd), c.Meta())
	if err != nil {
		if changing {
			h.releaseLogin(ctx, c, loginStream, owner)
		}
		return query.AccountView{}, err
	}
	if changing && oldLogin != res.State.Login {
		h.releaseLogin(ctx, c, h.w.x.LoginStream(cur.Provider, oldLogin), owner)
	}
	if err := w.written(ctx, res.Position); err != nil {
		return query.AccountView{}, err
	}
	return w.q.Accounts.Current(id)
}

// Delete deletes account id with its subscriptions and devices, releases
// its login and returns the account as it was.
func (h *Accounts) Delete(ctx context.Context, c app.Caller, id int64) (query.AccountView, error) {
	w := h.w
	cur, err := w.q.Accounts.Scoped(c, id)
	if err != nil {
		return query.AccountView{}, err
	}
	view := w.q.Accounts.View(cur)
	login := cur.Login
	owner := domain.AccountStream(id)
	res, err := app.Execute(ctx, w.x, owner, loginSeenBy(&login), domain.AccountCommand(domain.DeleteAccount{ID: id}), c.Meta())
	if err != nil {
		return query.AccountView{}, err
	}
	h.releaseLogin(ctx, c, h.w.x.LoginStream(cur.Provider, login), owner)
	pos := res.Position
	if netPos := h.removeNetworks(ctx, c, cur.Provider, id); netPos.After(pos) {
		pos = netPos
	}
	if err := w.written(ctx, pos); err != nil {
		return query.AccountView{}, err
	}
	view.ServicesAvailable = false
	return view, nil
}

// removeNetworks removes the account networks of a deleted account, best
// effort: a network left behind (a crash in between) authorises no one,
// since its account is gone, and an admin can delete it.
//
// It returns the position to wait for (zero when nothing was appended).
func (h *Accounts) removeNetworks(ctx context.Context, c app.Caller, provider, account int64) eventstore.Position {
	if _, _, ok := h.w.model.AccountNetworks(provider); !ok {
		return eventstore.Position{} // the provider never had networks
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	cmd := domain.RemoveAccountNetworks{Provider: provider, Account: account}
	res, err := app.Execute(rctx, h.w.x, cmd.Stream(), domain.NetworksDecider(), domain.NetworkCommand(cmd), c.Meta())
	if err != nil {
		h.w.log.Warn("removing a deleted account's networks failed", "account", account, "error", err)
		return eventstore.Position{}
	}
	return res.Position
}

// checkRegion checks that a region_tag given names a region; the current
// one (cur) passes unchecked, so a sync job re-sending a record whose
// region was since deleted is not refused.
func (h *Accounts) checkRegion(o domain.Optional[int64], cur *int64) error {
	id, ok := o.Get()
	if !ok || id <= 0 || cur != nil && *cur == id {
		return nil
	}
	if _, found := h.w.model.Region(id); !found {
		return domain.NewValidationError("region_tag", problemUnknown)
	}
	return nil
}

// intPtr converts a nullable integer of the wire into the domain's *int,
// keeping values outside int's range invalid.
func intPtr(o domain.Optional[int64]) *int {
	v, ok := o.Get()
	if !ok {
		return nil
	}
	n := clampLimit(v)
	return &n
}

// intOptional converts an Optional[int64] into an Optional[int].
func intOptional(o domain.Optional[int64]) domain.Optional[int] {
	switch {
	case !o.Present:
		return domain.Optional[int]{}
	case o.Null:
		return domain.Null[int]()
	}
	return domain.Some(clampLimit(o.Value))
}

// clampLimit maps an int64 onto int; a value outside the domain's range
// (0..domain.MaxDeviceLimit) becomes -1, which the domain refuses.
func clampLimit(v int64) int {
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

// Erase erases account id for good (domain.EraseAccount): it appends
// AccountErased, then destroys the key the account's personal data was
// encrypted under, gives its login back and removes its networks. A
// deleted account can be erased. Erasing an erased account destroys the
// key again and succeeds, so a retry mends a crash between the two steps.
func (h *Accounts) Erase(ctx context.Context, c app.Caller, id int64, force bool) error {
	w := h.w
	if w.cfg.Keys == nil {
		return errors.New("command: erasure needs a key store")
	}
	owner := domain.AccountStream(id)
	cur, found, err := w.loadAccount(ctx, owner)
	if err != nil {
		return err
	}
	if !found || cur.ID == 0 {
		return notFound("account", id)
	}
	if err := c.CheckScope(cur.Provider); err != nil {
		return fmt.Errorf("account %d: %w", id, err)
	}
	var pos eventstore.Position
	if !cur.Erased {
		res, err := app.Execute(ctx, w.x, owner, domain.AccountDecider(), domain.AccountCommand(domain.EraseAccount{ID: id, Force: force}), c.Meta())
		if err != nil {
			return err
		}
		pos = res.Position
	}
	if err := w.cfg.Keys.Erase(ctx, id); err != nil {
		return fmt.Errorf("account %d: erased, but its key was not destroyed (erase it again): %w", id, err)
	}
	if !cur.Deleted {
		h.releaseLogin(ctx, c, w.x.LoginStream(cur.Provider, cur.Login), owner)
		if netPos := h.removeNetworks(ctx, c, cur.Provider, id); netPos.After(pos) {
			pos = netPos
		}
	}
	if pos == (eventstore.Position{}) {
		return nil
	}
	return w.written(ctx, pos)
}

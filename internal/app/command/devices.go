package command

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/record"
	"tvsm/internal/adapters/devauth"
	"tvsm/internal/app"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// Devices handles the commands on devices: a device logs in (proving it
// belongs to an account with the account's login and password digest, it
// is bound to the account within the device limit and gets a token for the
// other Device API calls), reports what was watched, and is unbound by an
// admin.
type Devices struct{ w *writer }

// Delete unbinds device id from its account (DELETE of a device), which
// ends the device's own subscriptions, and returns it as it was. The
// device may bind again by logging in.
func (h *Devices) Delete(ctx context.Context, c app.Caller, id int64) (readmodel.Device, error) {
	cur, err := h.w.q.Devices.Get(ctx, c, id)
	if err != nil {
		return readmodel.Device{}, err
	}
	cmd := domain.UnbindDevice{AccountID: cur.Account, DeviceID: id}
	if _, err := execute(ctx, h.w, c, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd)); err != nil {
		return readmodel.Device{}, err
	}
	return cur, nil
}

// ErrBadDeviceCredentials is the answer to an unknown provider, an unknown
// login and a wrong password alike, so that logins cannot be probed.
var ErrBadDeviceCredentials = errors.New("invalid provider, login or password")

// DeviceLoginInput is a device's login (POST /api/device/login).
type DeviceLoginInput struct {
	Provider int64
	// Login and PasswordMD5 name the account. Both empty: the account
	// whose account network holds Address (TVIP's login by network).
	Login string
	// PasswordMD5 is the MD5 of the account's password in hex, compared
	// with the account's pin_md5 (case does not matter).
	PasswordMD5 string
	UniqueID    string
	Class       domain.DeviceClass
	Model       string
	// Firmware and OS are what the device reports of itself (optional):
	// its last_fw_ver and operation_system.
	Firmware, OS string
	// Address is the client's IP address, as the server saw the request.
	Address   string
	RequestID string
}

// Limits of what a device reports of itself at login.
const MaxDeviceReportLen = 128

// byNetwork reports whether the login names no account: the device is
// authorised by the account network its address lies in.
func (in DeviceLoginInput) byNetwork() bool { return in.Login == "" && in.PasswordMD5 == "" }

// LoginRecordInterval is how stale a device's last recorded login may be
// before a login that reports nothing new is recorded again: last_online
// moves at that grain, and a device that logs in again and again does not
// append an event each time.
const LoginRecordInterval = time.Minute

// DeviceSession is the answer to a successful login.
type DeviceSession struct {
	Token    string
	Expires  time.Time
	Account  int64
	Device   int64
	Provider int64
	// ServicesAvailable is false for a disabled account (or provider) and
	// for an account without an active subscription; Message then says so.
	ServicesAvailable bool
	Message           string
}

// pinLen is the length of a password digest: MD5 in hex.
const pinLen = 32

// Login authenticates a device and binds it to the account.
//
// A device already bound to the account logs in again without appending
// anything. A new one is bound within the device limit (the account's
// devices_per_account_limit, else the provider's, else the node's default,
// Config.DefaultDeviceLimit);
// over it the error is a *domain.DeviceLimitError listing the bound
// devices, and nothing changes. A unique id bound to another account is
// moved: bound to this account first (so a refusal by the limit leaves it
// where it was), then unbound from the other, as when a set-top box is
// handed to another subscriber. Unknown provider or login and a wrong
// password give ErrBadDeviceCredentials. A disabled account, or one without
// an active subscription, still logs in, with ServicesAvailable false and
// a Message. The answer comes once the read model shows the binding.
func (h *Devices) Login(ctx context.Context, in DeviceLoginInput) (DeviceSession, error) {
	w := h.w
	if w.cfg.DeviceTokens == nil {
		return DeviceSession{}, query.ErrNoDeviceTokens
	}
	if err := CheckDeviceLogin(in); err != nil {
		return DeviceSession{}, err
	}
	acc, err := h.credentials(in)
	if err != nil {
		return DeviceSession{}, err
	}
	device, pos, err := h.bind(ctx, in, acc)
	if err != nil {
		return DeviceSession{}, err
	}
	if err := w.written(ctx, pos); err != nil {
		return DeviceSession{}, err
	}
	if err := h.recordLogin(ctx, in, acc, device); err != nil {
		return DeviceSession{}, err
	}
	state, _ := w.model.AccountState(acc.ID)
	_, msg := w.q.Sessions.Services(state, device)
	token, claims := w.cfg.DeviceTokens.Issue(devauth.Claims{
		Device: device, Account: acc.ID, Provider: acc.Provider, Position: w.model.Position().Commit,
	})
	return DeviceSession{
		Token: token, Expires: claims.Expires, Account: acc.ID, Device: device, Provider: acc.Provider,
		ServicesAvailable: msg == "", Message: msg,
	}, nil
}

// ValidateLogin is CheckDeviceLogin. Login runs it first; the HTTP layer
// runs it too, to report these problems together with the body's type
// errors.
func (h *Devices) ValidateLogin(in DeviceLoginInput) error { return CheckDeviceLogin(in) }

// CheckDeviceLogin reports every bad field of a login at once, as a
// *domain.ValidationError naming them as on the wire (device.unique_id):
// the device's fields by the domain's own rules.
func CheckDeviceLogin(in DeviceLoginInput) error {
	fields := map[string]string{}
	if in.Provider <= 0 {
		fields["provider"] = "must be a positive integer"
	}
	if !in.byNetwork() {
		if in.Login == "" {
			fields["login"] = problemRequired
		}
		if !isHex(in.PasswordMD5, pinLen) {
			fields["password_md5"] = "must be 32 hexadecimal characters (an MD5 digest)"
		}
	}
	for name, v := range map[string]string{"device.firmware": in.Firmware, "device.os": in.OS} {
		if problem := checkReport(v); problem != "" {
			fields[name] = problem
		}
	}
	probe := domain.BindDevice{AccountID: 1, DeviceID: 1, UniqueID: in.UniqueID, Class: in.Class, Model: in.Model}
	_, err := domain.AccountDecider().Decide(domain.Account{ID: 1, Provider: 1}, probe, time.Time{})
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		for f, problem := range ve.Fields {
			fields["device."+f] = problem
		}
	} else if err != nil {
		return err
	}
	if len(fields) > 0 {
		return &domain.ValidationError{Fields: fields}
	}
	return nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// checkReport checks a text a device reports of itself.
func checkReport(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if utf8.RuneCountInString(s) > MaxDeviceReportLen {
		return fmt.Sprintf("must be at most %d characters", MaxDeviceReportLen)
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return "must not contain control characters"
		}
	}
	return ""
}

// dummyPin is compared for unknown logins, so they cost what a wrong
// password costs.
var dummyPin = strings.Repeat("0", pinLen)

// credentials returns the account the login names when the password
// digest matches — or, for a login by network, whose account network
// holds the client's address — else ErrBadDeviceCredentials.
func (h *Devices) credentials(in DeviceLoginInput) (readmodel.Account, error) {
	m := h.w.model
	if in.byNetwork() {
		addr, err := netip.ParseAddr(in.Address)
		if err != nil {
			return readmodel.Account{}, ErrBadDeviceCredentials
		}
		n, ok := m.NetworkByAddress(in.Provider, addr)
		if !ok {
			return readmodel.Account{}, ErrBadDeviceCredentials
		}
		acc, ok := m.Account(n.Account)
		if !ok {
			return readmodel.Account{}, ErrBadDeviceCredentials
		}
		return acc, nil
	}
	acc, found := readmodel.Account{}, false
	if _, ok := m.Provider(in.Provider); ok {
		acc, found = m.AccountByLogin(in.Provider, in.Login)
	}
	want := dummyPin
	if found {
		want = acc.PinMD5
	}
	// An account without a password (created with pin_md5 "") matches no
	// password, not even an empty one.
	match := subtle.ConstantTimeCompare([]byte(strings.ToLower(in.PasswordMD5)), []byte(want)) == 1 && want != ""
	if !found || !match {
		return readmodel.Account{}, ErrBadDeviceCredentials
	}
	return acc, nil
}

// bind returns the id of the login's device in acc, binding it when it is
// not bound yet, and the log position to wait for (zero when nothing was
// appended).
func (h *Devices) bind(ctx context.Context, in DeviceLoginInput, acc readmodel.Account) (int64, eventstore.Position, error) {
	w := h.w
	for _, d := range w.model.AccountDevices(acc.ID) {
		if d.UniqueID == in.UniqueID {
			return d.ID, eventstore.Position{}, nil // re-login
		}
	}
	id, err := w.x.NextID(ctx, "device")
	if err != nil {
		return 0, eventstore.Position{}, err
	}
	meta := deviceMeta(id, in.RequestID)
	cmd := domain.BindDevice{AccountID: acc.ID, DeviceID: id, UniqueID: in.UniqueID, Class: in.Class, Model: in.Model,
		ProviderLimit: w.providerDeviceLimit(acc.Provider)}
	res, err := app.Execute(ctx, w.x, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd), meta)
	if err != nil {
		return 0, eventstore.Position{}, err
	}
	d, ok := res.State.DeviceByUniqueID(in.UniqueID)
	if !ok { // unreachable: the decision bound it or found it bound
		return 0, eventstore.Position{}, fmt.Errorf("command: device %q not bound to account %d after binding", in.UniqueID, acc.ID)
	}
	pos, err := h.unbindElsewhere(ctx, in.UniqueID, acc.ID, deviceMeta(d.ID, in.RequestID))
	if err != nil {
		return 0, eventstore.Position{}, err
	}
	if pos.Compare(res.Position) < 0 {
		pos = res.Position
	}
	return d.ID, pos, nil
}

// recordLogin appends the device's login to its stream (domain.
// DeviceLoggedIn: address, firmware, operating system; last_online) unless
// the read model shows the same from a login less than
// LoginRecordInterval ago, and waits until the read model shows it.
func (h *Devices) recordLogin(ctx context.Context, in DeviceLoginInput, acc readmodel.Account, device int64) error {
	w := h.w
	now := w.now()
	if d, ok := w.model.Device(device); ok && now.Sub(d.LastOnline) < LoginRecordInterval &&
		sameReport(d.Address, in.Address) && sameReport(d.Firmware, in.Firmware) && sameReport(d.OS, in.OS) {
		return nil
	}
	e := domain.DeviceLoggedIn{DeviceID: device, Account: acc.ID, Provider: acc.Provider, Address: in.Address, Firmware: in.Firmware, OS: in.OS}
	meta := deviceMeta(device, in.RequestID)
	res, err := w.rec.Record(ctx, domain.DeviceStream(device), eventstore.Any, []domain.Event{e},
		domain.Metadata{OccurredAt: now, Actor: meta.Actor, RequestID: meta.RequestID}, record.Random())
	if err != nil {
		return fmt.Errorf("command: record login of device %d: %w", device, err)
	}
	return w.written(ctx, res.Position)
}

// sameReport reports whether a reported value adds nothing to what is
// known: it is empty, or equal to it.
func sameReport(known *string, v string) bool {
	return v == "" || known != nil && *known == v
}

// unbindElsewhere unbinds uniqueID from every other account of the same
// provider: the device moved. A unique id is scoped to its provider: a
// device with the same id under another provider is another device, and
// stays where it is. It returns the position of the last unbinding.
func (h *Devices) unbindElsewhere(ctx context.Context, uniqueID string, keep int64, meta app.RequestMeta) (eventstore.Position, error) {
	acc, ok := h.w.model.Account(keep)
	if !ok {
		return eventstore.Position{}, nil
	}
	l, err := h.w.model.ListDevices(readmodel.DeviceQuery{Scope: readmodel.ProviderScope(acc.Provider), UniqueID: uniqueID})
	if err != nil {
		return eventstore.Position{}, err
	}
	var last eventstore.Position
	for _, d := range l.Slice() {
		if d.Account == keep {
			continue
		}
		cmd := domain.UnbindDevice{AccountID: d.Account, DeviceID: d.ID}
		res, err := app.Execute(ctx, h.w.x, cmd.Stream(), domain.AccountDecider(), domain.AccountCommand(cmd), meta)
		switch {
		case errors.Is(err, domain.ErrNotFound): // unbound meanwhile
		case err != nil:
			return eventstore.Position{}, err
		case res.Position.After(last):
			last = res.Position
		}
	}
	return last, nil
}

// deviceMeta is the metadata of events a device causes.
func deviceMeta(device int64, requestID string) app.RequestMeta {
	if requestID == "" {
		requestID = "device-" + fmt.Sprint(device)
	}
	return app.RequestMeta{Actor: domain.DeviceActor(device), RequestID: requestID}
}

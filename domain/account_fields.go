package domain

import (
	"errors"
	"strings"
)

// Limits of account fields (the Provider API gives none; these fit what
// operators' billing systems hold and what a device screen can show).
const (
	MaxAccountLoginLen      = 128
	MaxFullnameLen          = 255
	MaxRemoteCustomFieldLen = 255
	MaxContractInfoLen      = 1000
	MaxMainAddressLen       = 500
	MaxAccountDescLen       = 1000
)

var (
	accountLoginRule      = textRule{max: MaxAccountLoginLen, required: true, trimmed: true}
	fullnameRule          = textRule{max: MaxFullnameLen, required: true}
	remoteCustomFieldRule = textRule{max: MaxRemoteCustomFieldLen}
	contractInfoRule      = textRule{max: MaxContractInfoLen, multiline: true}
	mainAddressRule       = textRule{max: MaxMainAddressLen, multiline: true}
	accountDescRule       = textRule{max: MaxAccountDescLen, multiline: true}
)

// ValidateAccountLogin reports whether login can be an account login: 1 to
// MaxAccountLoginLen characters of valid UTF-8, no control characters, no
// white space at either end. Logins are case-sensitive and never altered.
func ValidateAccountLogin(login string) error {
	if problem := accountLoginRule.check(login); problem != "" {
		return errors.New(problem)
	}
	return nil
}

// NormalizePinMD5 checks that pin is an MD5 digest in hex (exactly 32 hex
// digits, either case) and returns it in lowercase, the stored form.
func NormalizePinMD5(pin string) (string, error) {
	if pin == "" {
		return "", errors.New(problemRequired)
	}
	if len(pin) != 32 {
		return "", errors.New("must be 32 hex characters")
	}
	for i := 0; i < len(pin); i++ {
		c := pin[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", errors.New("must be 32 hex characters")
		}
	}
	return strings.ToLower(pin), nil
}

// CreateAccount creates account ID of Provider. Login, Fullname and
// Provider are required; an empty PinMD5 makes an account without a
// password, which no device can log in to by password until one is set
// (TVIP's SDKs send "" by default); Enabled defaults to true (the Provider API lists it
// among the create fields, and a new subscriber is expected to get
// service); nil pointers are null fields. That Provider exists and Login is
// reserved is checked outside the domain.
type CreateAccount struct {
	ID                     int64
	Provider               int64
	Login                  string
	PinMD5                 string
	Fullname               string
	Enabled                *bool
	RemoteCustomField      *string
	ContractInfo           *string
	MainAddress            *string
	AccountDesc            *string
	RegionTag              *int64
	DevicesPerAccountLimit *int
}

// UpdateAccount changes the fields present in it. Provider may be present
// (resync jobs re-send whole records) but must equal the account's. A null
// PinMD5, like an empty one, is ignored: the API returns pin_md5 as null,
// so a record read and posted back carries it, and TVIP's SDKs send "" for
// a password they were not given. A new Login must already be reserved.
type UpdateAccount struct {
	ID                     int64
	Enabled                Optional[bool]
	Login                  Optional[string]
	PinMD5                 Optional[string]
	Fullname               Optional[string]
	Provider               Optional[int64]
	RemoteCustomField      Optional[string]
	ContractInfo           Optional[string]
	MainAddress            Optional[string]
	AccountDesc            Optional[string]
	RegionTag              Optional[int64]
	DevicesPerAccountLimit Optional[int]
}

// DeleteAccount deletes account ID with its subscriptions and devices.
// Releasing its login reservation is the application's job.
type DeleteAccount struct{ ID int64 }

// Stream implements AccountCommand.
func (c CreateAccount) Stream() string { return AccountStream(c.ID) }

// Stream implements AccountCommand.
func (c UpdateAccount) Stream() string { return AccountStream(c.ID) }

// Stream implements AccountCommand.
func (c DeleteAccount) Stream() string { return AccountStream(c.ID) }

func (CreateAccount) accountCommand() {}
func (UpdateAccount) accountCommand() {}
func (DeleteAccount) accountCommand() {}

func createAccount(s Account, c CreateAccount) ([]Event, error) {
	var p problems
	p.add("id", checkID(c.ID))
	if c.Provider <= 0 {
		p.add("provider", problemRequired)
	}
	p.add("login", accountLoginRule.check(c.Login))
	var pin string
	if c.PinMD5 != "" {
		var err error
		pin, err = NormalizePinMD5(c.PinMD5)
		p.addErr("pin_md5", err)
	}
	p.add("fullname", fullnameRule.check(c.Fullname))
	p.add("remote_custom_field", remoteCustomFieldRule.checkPtr(c.RemoteCustomField))
	p.add("contract_info", contractInfoRule.checkPtr(c.ContractInfo))
	p.add("main_address", mainAddressRule.checkPtr(c.MainAddress))
	p.add("account_desc", accountDescRule.checkPtr(c.AccountDesc))
	p.add("region_tag", checkRefPtr(c.RegionTag))
	p.add("devices_per_account_limit", checkLimit(c.DevicesPerAccountLimit))
	if err := p.err(); err != nil {
		return nil, err
	}
	if s.ID != 0 {
		return nil, alreadyExists("account", c.ID)
	}
	return []Event{AccountCreated{
		AccountID:              c.ID,
		Provider:               c.Provider,
		Login:                  c.Login,
		PinMD5:                 pin,
		Fullname:               c.Fullname,
		Enabled:                c.Enabled == nil || *c.Enabled,
		RemoteCustomField:      c.RemoteCustomField,
		ContractInfo:           c.ContractInfo,
		MainAddress:            c.MainAddress,
		AccountDesc:            c.AccountDesc,
		RegionTag:              c.RegionTag,
		DevicesPerAccountLimit: c.DevicesPerAccountLimit,
	}}, nil
}

func updateAccount(s Account, c UpdateAccount) ([]Event, error) {
	var p problems
	if v, ok := c.Provider.Get(); c.Provider.Present && (!ok || v != s.Provider) {
		p.add("provider", problemImmutable)
	}
	e := AccountUpdated{AccountID: s.ID}
	e.Enabled = patchValue(&p, "enabled", c.Enabled, s.Enabled, nil)
	e.Login = patchValue(&p, "login", c.Login, s.Login, accountLoginRule.check)
	if v, ok := c.PinMD5.Get(); ok && v != "" {
		pin, err := NormalizePinMD5(v)
		p.addErr("pin_md5", err)
		if err == nil && pin != s.PinMD5 {
			e.PinMD5 = Some(pin)
		}
	}
	e.Fullname = patchValue(&p, "fullname", c.Fullname, s.Fullname, fullnameRule.check)
	e.RemoteCustomField = patchNullable(&p, "remote_custom_field", c.RemoteCustomField, s.RemoteCustomField, remoteCustomFieldRule.check)
	e.ContractInfo = patchNullable(&p, "contract_info", c.ContractInfo, s.ContractInfo, contractInfoRule.check)
	e.MainAddress = patchNullable(&p, "main_address", c.MainAddress, s.MainAddress, mainAddressRule.check)
	e.AccountDesc = patchNullable(&p, "account_desc", c.AccountDesc, s.AccountDesc, accountDescRule.check)
	e.RegionTag = patchNullable(&p, "region_tag", c.RegionTag, s.RegionTag, checkID)
	e.DevicesPerAccountLimit = patchNullable(&p, "devices_per_account_limit", c.DevicesPerAccountLimit, s.DevicesPerAccountLimit,
		func(n int) string { return checkLimit(&n) })
	if err := p.err(); err != nil {
		return nil, err
	}
	if !e.changed() {
		return nil, nil
	}
	return []Event{e}, nil
}

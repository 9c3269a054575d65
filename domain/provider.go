package domain

import (
	"errors"
	"net/url"
	"time"
)

// Provider is an operator: the owner of accounts and tariffs. Its id is
// allocated outside the domain. The zero Provider does not exist yet.
type Provider struct {
	ID      int64
	Name    string
	Enabled bool
	// DevicesPerAccountLimit applies to accounts without their own limit;
	// nil means unlimited.
	DevicesPerAccountLimit *int
	// FreeTariff is the tariff offered without a subscription; nil for none.
	FreeTariff *int64
	// RegionTag is the region the provider serves; nil for none.
	RegionTag *int64
	Comment   string // "" for none
	LogoURL   string // "" for none
	Billing   Billing
	Deleted   bool
}

// Billing is a provider's personal-account ("billing") settings. Token is
// the shared secret that signs forwarded calls: it is kept in state and in
// the log, and views must never show it.
type Billing struct {
	Resolve bool
	URL     string
	Token   string
}

// Exists reports whether the provider was created and not deleted.
func (p Provider) Exists() bool { return p.ID != 0 && !p.Deleted }

// Limits of provider fields.
const (
	MaxProviderNameLen    = 100
	MaxProviderCommentLen = 1000
	MaxBillingTokenLen    = 256
)

// Wire names of provider fields used in more than one place.
const (
	// RegionTagField names a provider's region, as TVIP spells it.
	RegionTagField      = "region_tag"
	providerNameField   = "name"
	billingURLField     = "billing.url"
	billingTokenField   = "billing.token"
	billingResolveField = "billing.resolve"
)

var (
	providerNameRule    = textRule{max: MaxProviderNameLen, required: true, trimmed: true}
	providerCommentRule = textRule{max: MaxProviderCommentLen, multiline: true}
	billingTokenRule    = textRule{max: MaxBillingTokenLen, trimmed: true}
	errProviderTarget   = errors.New("provider command decided on another provider's state")
)

// ProviderCommand is a command on a provider: CreateProvider,
// UpdateProvider or DeleteProvider.
type ProviderCommand interface {
	Stream() string
	providerCommand()
}

// CreateProvider creates provider ID. Enabled defaults to true. That the
// region exists is checked outside the domain.
type CreateProvider struct {
	ID                     int64
	Name                   string
	Enabled                *bool
	DevicesPerAccountLimit *int
	FreeTariff             *int64
	RegionTag              *int64
	Comment                string
	LogoURL                string
	Billing                Billing
}

// UpdateProvider changes the fields present in it. A null RegionTag,
// Comment or LogoURL clears it.
type UpdateProvider struct {
	ID                     int64
	Name                   Optional[string]
	Enabled                Optional[bool]
	DevicesPerAccountLimit Optional[int]
	FreeTariff             Optional[int64]
	RegionTag              Optional[int64]
	Comment                Optional[string]
	LogoURL                Optional[string]
	Billing                BillingPatch
}

// BillingPatch is the partial update of a provider's billing settings.
// A null URL or Token clears it (sets it to "").
type BillingPatch struct {
	Resolve Optional[bool]
	URL     Optional[string]
	Token   Optional[string]
}

// DeleteProvider deletes provider ID.
type DeleteProvider struct{ ID int64 }

// Stream implements ProviderCommand.
func (c CreateProvider) Stream() string { return ProviderStream(c.ID) }

// Stream implements ProviderCommand.
func (c UpdateProvider) Stream() string { return ProviderStream(c.ID) }

// Stream implements ProviderCommand.
func (c DeleteProvider) Stream() string { return ProviderStream(c.ID) }

func (CreateProvider) providerCommand() {}
func (UpdateProvider) providerCommand() {}
func (DeleteProvider) providerCommand() {}

// ProviderDecider returns the decider of the provider aggregate.
func ProviderDecider() Decider[Provider, ProviderCommand] {
	return Decider[Provider, ProviderCommand]{
		Initial: func() Provider { return Provider{} },
		Evolve:  evolveProvider,
		Decide:  decideProvider,
	}
}

func evolveProvider(s Provider, e Event) Provider {
	switch e := e.(type) {
	case ProviderCreated:
		return Provider{
			ID:                     e.ProviderID,
			Name:                   e.Name,
			Enabled:                e.Enabled,
			DevicesPerAccountLimit: e.DevicesPerAccountLimit,
			FreeTariff:             e.FreeTariff,
			RegionTag:              e.RegionTag,
			Comment:                e.Comment,
			LogoURL:                e.LogoURL,
			Billing:                Billing{Resolve: e.BillingResolve, URL: e.BillingURL, Token: e.BillingToken},
		}
	case ProviderUpdated:
		applyValue(&s.Name, e.Name)
		applyValue(&s.Enabled, e.Enabled)
		applyNullable(&s.DevicesPerAccountLimit, e.DevicesPerAccountLimit)
		applyNullable(&s.FreeTariff, e.FreeTariff)
		applyNullable(&s.RegionTag, e.RegionTag)
		applyValue(&s.Comment, e.Comment)
		applyValue(&s.LogoURL, e.LogoURL)
		applyValue(&s.Billing.Resolve, e.BillingResolve)
		applyValue(&s.Billing.URL, e.BillingURL)
		applyValue(&s.Billing.Token, e.BillingToken)
	case ProviderDeleted:
		s.Deleted = true
	}
	return s
}

func decideProvider(s Provider, c ProviderCommand, _ time.Time) ([]Event, error) {
	switch c := c.(type) {
	case CreateProvider:
		return createProvider(s, c)
	case UpdateProvider:
		if err := checkProviderTarget(s, c.ID); err != nil {
			return nil, err
		}
		return updateProvider(s, c)
	case DeleteProvider:
		if err := checkProviderTarget(s, c.ID); err != nil {
			return nil, err
		}
		return []Event{ProviderDeleted{ProviderID: s.ID}}, nil
	}
	return nil, errors.New("domain: unknown provider command")
}

// checkProviderTarget returns ErrNotFound unless provider id exists in s.
func checkProviderTarget(s Provider, id int64) error {
	switch {
	case !s.Exists():
		return notFound("provider", id)
	case s.ID != id:
		return errProviderTarget
	}
	return nil
}

func createProvider(s Provider, c CreateProvider) ([]Event, error) {
	var p problems
	p.add("id", checkID(c.ID))
	p.add(providerNameField, providerNameRule.check(c.Name))
	p.add("devices_per_account_limit", checkLimit(c.DevicesPerAccountLimit))
	if c.FreeTariff != nil {
		p.add("free_tariff", checkID(*c.FreeTariff))
	}
	if c.RegionTag != nil {
		p.add(RegionTagField, checkID(*c.RegionTag))
	}
	p.add("comment", providerCommentRule.check(c.Comment))
	p.add("logo_url", checkLogoURL(c.LogoURL))
	checkBilling(&p, c.Billing)
	if err := p.err(); err != nil {
		return nil, err
	}
	if s.ID != 0 {
		return nil, alreadyExists("provider", c.ID)
	}
	enabled := c.Enabled == nil || *c.Enabled
	return []Event{ProviderCreated{
		ProviderID:             c.ID,
		Name:                   c.Name,
		Enabled:                enabled,
		DevicesPerAccountLimit: c.DevicesPerAccountLimit,
		FreeTariff:             c.FreeTariff,
		RegionTag:              c.RegionTag,
		Comment:                c.Comment,
		LogoURL:                c.LogoURL,
		BillingResolve:         c.Billing.Resolve,
		BillingURL:             c.Billing.URL,
		BillingToken:           c.Billing.Token,
	}}, nil
}

// checkBilling validates billing settings as a whole: a stored URL is always
// a valid one, without user information (the proxy would send it to
// billing as Basic authorisation), and resolving needs both a URL and a
// token.
func checkBilling(p *problems, b Billing) {
	if b.URL != "" || b.Resolve {
		if err := ValidateHTTPURL(b.URL); err != nil {
			p.addErr(billingURLField, err)
		} else if u, _ := url.Parse(b.URL); u.User != nil {
			p.add(billingURLField, "must not contain user information (user:password@)")
		}
	}
	p.add(billingTokenField, billingTokenRule.check(b.Token))
	if b.Resolve && b.Token == "" {
		p.add(billingTokenField, "required when billing.resolve is true")
	}
}

func updateProvider(s Provider, c UpdateProvider) ([]Event, error) {
	var p problems
	e := ProviderUpdated{ProviderID: s.ID}
	e.Name = patchValue(&p, providerNameField, c.Name, s.Name, providerNameRule.check)
	e.Enabled = patchValue(&p, "enabled", c.Enabled, s.Enabled, nil)
	e.DevicesPerAccountLimit = patchNullable(&p, "devices_per_account_limit", c.DevicesPerAccountLimit, s.DevicesPerAccountLimit,
		func(n int) string { return checkLimit(&n) })
	e.FreeTariff = patchNullable(&p, "free_tariff", c.FreeTariff, s.FreeTariff, checkID)
	e.RegionTag = patchNullable(&p, RegionTagField, c.RegionTag, s.RegionTag, checkID)
	e.Comment = patchValue(&p, "comment", clearable(c.Comment), s.Comment, providerCommentRule.check)
	e.LogoURL = patchValue(&p, "logo_url", clearable(c.LogoURL), s.LogoURL, checkLogoURL)
	if b := c.Billing; b.Resolve.Present || b.URL.Present || b.Token.Present {
		next := s.Billing
		applyValue(&next.Resolve, b.Resolve)
		if b.Resolve.IsNull() {
			p.add(billingResolveField, problemNotNull)
		}
		// Null clears the URL or token: both are plain strings in state.
		if b.URL.Present {
			next.URL, _ = b.URL.Get()
		}
		if b.Token.Present {
			next.Token, _ = b.Token.Get()
		}
		checkBilling(&p, next)
		e.BillingResolve = someIf(next.Resolve, next.Resolve != s.Billing.Resolve)
		e.BillingURL = someIf(next.URL, next.URL != s.Billing.URL)
		e.BillingToken = someIf(next.Token, next.Token != s.Billing.Token)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if !e.changed() {
		return nil, nil
	}
	return []Event{e}, nil
}

// someIf returns Some(v) when cond holds and absent otherwise.
func someIf[T any](v T, cond bool) Optional[T] {
	if cond {
		return Some(v)
	}
	return Optional[T]{}
}

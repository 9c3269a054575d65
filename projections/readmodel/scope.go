package readmodel

// Scope limits a list to the rows of one provider: the provider-scoped
// administrators' view. Lists never return rows of providers outside their
// query's scope.
//
// The zero Scope matches no provider at all, so a handler that forgets to
// set one answers empty lists rather than another provider's rows; a
// superadmin's queries use AllProviders.
type Scope struct {
	all      bool
	provider int64
}

// AllProviders is the scope of a superadmin: every provider's rows.
var AllProviders = Scope{all: true}

// ProviderScope returns the scope of an administrator limited to provider p.
// A non-positive p gives a scope that matches nothing (provider ids are
// positive).
func ProviderScope(p int64) Scope {
	if p <= 0 {
		return Scope{}
	}
	return Scope{provider: p}
}

// ScopeOf returns ProviderScope(provider) when scoped, else AllProviders. It
// takes what httpapi.Principal.Scope returns.
func ScopeOf(provider int64, scoped bool) Scope {
	if scoped {
		return ProviderScope(provider)
	}
	return AllProviders
}

// Provider returns the provider s is limited to; ok is false for
// AllProviders and for the zero Scope.
func (s Scope) Provider() (p int64, ok bool) { return s.provider, s.provider > 0 }

// Allows reports whether rows of provider p are within s.
func (s Scope) Allows(p int64) bool { return s.all || (s.provider > 0 && s.provider == p) }

// narrow combines s with a provider filter (0: none). It returns the single
// provider the rows must belong to (0: any provider) and whether anything
// can match at all.
func (s Scope) narrow(filter int64) (provider int64, ok bool) {
	switch {
	case s.all:
		return filter, true
	case s.provider <= 0:
		return 0, false
	case filter != 0 && filter != s.provider:
		return 0, false
	}
	return s.provider, true
}

package readmodel

import (
	"cmp"
	"slices"
	"strings"
)

// AccountSortFields are the fields ListAccounts can sort by.
var AccountSortFields = []string{"id", "login", "fullname", "created", "updated"}

var accountFields = map[string]func(a, b *account) int{
	"id":       byAccountID,
	"login":    func(a, b *account) int { return strings.Compare(a.login(), b.login()) },
	"fullname": func(a, b *account) int { return strings.Compare(a.fullname(), b.fullname()) },
	"created":  func(a, b *account) int { return cmp.Compare(a.created, b.created) },
	"updated":  func(a, b *account) int { return cmp.Compare(a.updated, b.updated) },
}

func byAccountID(a, b *account) int { return cmp.Compare(a.id, b.id) }

// AccountQuery selects accounts. Zero-valued filters select everything.
type AccountQuery struct {
	// Scope limits the rows to one provider's; it must be set (see Scope).
	Scope Scope
	Page
	// Provider keeps the accounts of one provider (0: any).
	Provider int64
	// Enabled keeps enabled (true) or disabled (false) accounts.
	Enabled *bool
	// Login keeps the account with exactly this login ("": any).
	Login string
	// RemoteCustomField keeps accounts whose remote_custom_field equals it
	// exactly (null never matches).
	RemoteCustomField *string
	// RegionTag keeps the accounts of one region (0: any).
	RegionTag int64
	// QuickSearch keeps accounts whose login, fullname or contract_info
	// contains it, ignoring case (Unicode simple lower-casing, rune by
	// rune); "" or blank: no search. It is matched as given: trim it first.
	QuickSearch string
}

// matcher returns the predicate of the query's filters other than
// provider and login; nil when there are none.
func (q *AccountQuery) matcher() func(*account) bool {
	var preds []func(*account) bool
	if q.Enabled != nil {
		want := *q.Enabled
		preds = append(preds, func(a *account) bool { return a.enabled() == want })
	}
	if q.RemoteCustomField != nil {
		want := *q.RemoteCustomField
		bit := uint16(flagNotNull << (fRemoteCustomField - fRemoteCustomField))
		preds = append(preds, func(a *account) bool {
			return a.flags&bit != 0 && a.field(fRemoteCustomField) == want
		})
	}
	if q.RegionTag != 0 {
		preds = append(preds, func(a *account) bool { return a.region == q.RegionTag })
	}
	if strings.TrimSpace(q.QuickSearch) != "" {
		needle := foldNeedle(q.QuickSearch)
		preds = append(preds, func(a *account) bool {
			return containsFold(a.field(fLogin), needle) ||
				containsFold(a.field(fFullname), needle) ||
				containsFold(a.field(fContractInfo), needle)
		})
	}
	switch len(preds) {
	case 0:
		return nil
	case 1:
		return preds[0]
	}
	return func(a *account) bool {
		for _, p := range preds {
			if !p(a) {
				return false
			}
		}
		return true
	}
}

// ListAccounts returns the accounts q selects, in q's order, with the
// number that match.
//
// Cost, with n the accounts of the provider (or of all providers) in scope:
// a page in id order without filters is found by skipping, O(page +
// n/512), under the read lock; otherwise the n records are gathered under
// the lock (a copy of n pointers), then filtered in one pass and, for
// another order than id, sorted, O(n log n), without the lock. A Login
// filter is an index lookup.
func (m *Model) ListAccounts(q AccountQuery) (List[Account], error) {
	order, err := comparator(q.Sort, accountFields, byAccountID)
	if err != nil {
		return List[Account]{}, err
	}
	byID, desc := idOrder(q.Sort)
	provider, ok := q.Scope.narrow(q.Provider)
	if !ok {
		return emptyList[Account](), nil
	}
	match := q.matcher()
	// Under the read lock, only what must be: a page in id order without
	// filters, or the records in scope. Records are immutable, so
	// filtering and sorting them (up to a second for a million) happen
	// after the lock is released; the applier, and the readers a waiting
	// applier would hold up, never wait for them.
	var found []*account
	var total int
	var page []*account
	done := false
	m.read(func(s *state) {
		if q.Login != "" {
			found = s.accountsByLogin(provider, q.Login)
			return
		}
		l := s.accountList(provider)
		get := func(_ int64, a *account) (*account, bool) { return a, true }
		if byID && match == nil {
			total, page = walkPage(l, desc, q.Page, get, nil)
			done = true
			return
		}
		found = collect(l, get, nil)
	})
	if done {
		return listOf(total, page, accountView), nil
	}
	if match != nil {
		found = slices.DeleteFunc(found, func(a *account) bool { return !match(a) })
	}
	switch {
	case byID && desc:
		slices.Reverse(found)
	case !byID:
		sortAccounts(found, q.Sort, order)
	}
	total, page = sortPage(found, q.Page, nil)
	return listOf(total, page, accountView), nil
}

// textFields are the text fields accounts can be sorted by.
var textFields = map[string]int{"login": fLogin, "fullname": fFullname}

// sortAccounts sorts accounts by order, whose first key is keys[0]. When
// that is a text field, each account's value is extracted once, with its
// first 8 bytes as a number compared first, rather than decoded from two
// records for every comparison: sorting a million accounts touches far
// less memory.
func sortAccounts(accounts []*account, keys []SortKey, order func(a, b *account) int) {
	f, text := textFields[keys[0].Field]
	if !text {
		slices.SortFunc(accounts, order)
		return
	}
	type keyed struct {
		prefix uint64
		key    string
		a      *account
	}
	ks := make([]keyed, len(accounts))
	for i, a := range accounts {
		k := a.field(f)
		ks[i] = keyed{prefix8(k), k, a}
	}
	desc := keys[0].Desc
	slices.SortFunc(ks, func(x, y keyed) int {
		c := cmp.Compare(x.prefix, y.prefix)
		if c == 0 {
			c = strings.Compare(x.key, y.key)
		}
		if c == 0 {
			return order(x.a, y.a) // the further keys, then the id
		}
		if desc {
			return -c
		}
		return c
	})
	for i := range ks {
		accounts[i] = ks[i].a
	}
}

// prefix8 returns the first 8 bytes of s as a big-endian number (padded
// with zeros): comparing prefixes orders as comparing the strings does,
// up to ties.
func prefix8(s string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(s) {
			p |= uint64(s[i])
		}
	}
	return p
}

// accountList returns the ids of the accounts of provider (0: all); nil
// when the provider has none.
func (s *state) accountList(provider int64) *idList[*account] {
	if provider == 0 {
		return &s.all.accounts
	}
	if pi := s.byProv[provider]; pi != nil {
		return &pi.accounts
	}
	return nil
}

// accountsByLogin returns the live accounts with login, of provider (0:
// any), in id order.
func (s *state) accountsByLogin(provider int64, login string) []*account {
	var out []*account
	add := func(pi *provIndex) {
		if id, ok := pi.logins[login]; ok {
			if a := s.account(id); a != nil {
				out = append(out, a)
			}
		}
	}
	if provider != 0 {
		if pi := s.byProv[provider]; pi != nil {
			add(pi)
		}
		return out
	}
	for _, pi := range s.byProv {
		add(pi)
	}
	slices.SortFunc(out, byAccountID)
	return out
}

// walkPage returns the number of entries of l (in id order, descending
// when desc) that get resolves and match keeps (nil: all), and those of
// them on page p. Without match it skips to the page directly.
func walkPage[V, E any](l *idList[V], desc bool, p Page, get func(int64, V) (E, bool), match func(E) bool) (int, []E) {
	if l == nil {
		return 0, nil
	}
	if match == nil {
		total := l.Len()
		lo, hi := p.window(total)
		out := make([]E, 0, hi-lo)
		for id, v := range l.Walk(desc, lo) {
			if len(out) == hi-lo {
				break
			}
			if e, ok := get(id, v); ok {
				out = append(out, e)
			}
		}
		return total, out
	}
	start := max(p.Start, 0)
	var out []E
	n := 0
	for id, v := range l.Walk(desc, 0) {
		e, ok := get(id, v)
		if !ok || !match(e) {
			continue
		}
		if n >= start && (p.Limit <= 0 || n-start < p.Limit) {
			out = append(out, e)
		}
		n++
	}
	return n, out
}

// collect returns the entries of l, in id order, that get resolves and
// match keeps (nil: all).
func collect[V, E any](l *idList[V], get func(int64, V) (E, bool), match func(E) bool) []E {
	if l == nil {
		return nil
	}
	var out []E
	if match == nil {
		out = make([]E, 0, l.Len())
	}
	for id, v := range l.Walk(false, 0) {
		if e, ok := get(id, v); ok && (match == nil || match(e)) {
			out = append(out, e)
		}
	}
	return out
}

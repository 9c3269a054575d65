package readmodel

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"tvsm/domain"
)

// SubscriptionSortFields are the fields ListSubscriptions can sort by.
// An open-ended stop sorts after every date.
var SubscriptionSortFields = []string{"id", "account", "tarif", "start", "stop"}

// DeviceSubscriptionSortFields are the fields ListSubscriptions can sort
// device subscriptions by.
var DeviceSubscriptionSortFields = []string{"id", "device", "tarif", "start", "stop"}

var subFields = map[string]func(a, b subRef) int{
	"id":      bySubID,
	"account": func(a, b subRef) int { return cmp.Compare(a.a.id, b.a.id) },
	"device":  func(a, b subRef) int { return cmp.Compare(a.sub().device, b.sub().device) },
	"tarif":   func(a, b subRef) int { return cmp.Compare(a.sub().tariff, b.sub().tariff) },
	"start": func(a, b subRef) int {
		x, y := a.sub(), b.sub()
		return cmp.Or(cmp.Compare(x.start, y.start), cmp.Compare(x.startNs, y.startNs))
	},
	"stop": func(a, b subRef) int {
		x, y := a.sub(), b.sub()
		switch {
		case x.open() || y.open():
			return compareBool(x.open(), y.open())
		}
		return cmp.Or(cmp.Compare(x.stop, y.stop), cmp.Compare(x.stopNs, y.stopNs))
	},
}

func bySubID(a, b subRef) int   { return cmp.Compare(a.sub().id, b.sub().id) }
func (r subRef) sub() *sub      { return &r.a.subs[r.i] }
func (r devRef) dev() *dev      { return &r.a.devs[r.i] }
func byDevID(a, b devRef) int   { return cmp.Compare(a.dev().id, b.dev().id) }
func compareBool(a, b bool) int { return cmp.Compare(boolInt(a), boolInt(b)) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SubscriptionQuery selects subscriptions. Zero-valued filters select
// everything.
type SubscriptionQuery struct {
	// Scope limits the rows to one provider's; it must be set (see Scope).
	Scope Scope
	Page
	// Account keeps the subscriptions of one account (0: any).
	Account int64
	// Tariff keeps the subscriptions to one tariff (0: any); the API's
	// "tarif" filter.
	Tariff int64
	// Provider keeps the subscriptions of one provider's accounts (0: any).
	Provider int64
	// Devices selects the devices' own subscriptions (TVIP's device
	// subscriptions) instead of the accounts' own.
	Devices bool
	// Device keeps the subscriptions of one device (0: any); it implies
	// Devices.
	Device int64
	// QuickSearch keeps subscriptions whose id, account, tariff or device
	// id is the number it holds, or whose account's login contains it,
	// ignoring case.
	QuickSearch string
}

// matcher returns the predicate of the query's filters other than
// provider and account; nil when there are none.
func (q *SubscriptionQuery) matcher() func(subRef) bool {
	var preds []func(subRef) bool
	if q.Tariff != 0 {
		preds = append(preds, func(r subRef) bool { return r.sub().tariff == q.Tariff })
	}
	if q.Device != 0 {
		preds = append(preds, func(r subRef) bool { return r.sub().device == q.Device })
	}
	if needle := strings.TrimSpace(q.QuickSearch); needle != "" {
		n, numErr := strconv.ParseInt(needle, 10, 64)
		folded := foldNeedle(needle)
		preds = append(preds, func(r subRef) bool {
			x := r.sub()
			if numErr == nil && (x.id == n || r.a.id == n || x.tariff == n || x.device == n) {
				return true
			}
			return containsFold(r.a.login(), folded)
		})
	}
	return allOf(preds)
}

// allOf returns the conjunction of preds; nil when there are none.
func allOf[E any](preds []func(E) bool) func(E) bool {
	switch len(preds) {
	case 0:
		return nil
	case 1:
		return preds[0]
	}
	return func(e E) bool {
		for _, p := range preds {
			if !p(e) {
				return false
			}
		}
		return true
	}
}

// ListSubscriptions returns the subscriptions q selects, in q's order,
// with the number that match. With an Account filter it looks at that
// account only; otherwise it walks the provider's (or everyone's)
// subscriptions in id order, as ListAccounts does.
func (m *Model) ListSubscriptions(q SubscriptionQuery) (List[Subscription], error) {
	order, err := comparator(q.Sort, subFields, bySubID)
	if err != nil {
		return List[Subscription]{}, err
	}
	byID, desc := idOrder(q.Sort)
	provider, ok := q.Scope.narrow(q.Provider)
	if !ok {
		return emptyList[Subscription](), nil
	}
	devices := q.Devices || q.Device != 0
	match := q.matcher()
	// The matches are gathered under the read lock (resolving ids needs
	// the maps) and sorted after it (the records are immutable).
	var total int
	var page, found []subRef
	done := false
	m.read(func(s *state) {
		if q.Account != 0 {
			a := s.account(q.Account)
			if a == nil || (provider != 0 && a.provider != provider) {
				return
			}
			for i := range a.subs {
				if r := (subRef{a, i}); (a.subs[i].device != 0) == devices && (match == nil || match(r)) {
					found = append(found, r)
				}
			}
			return
		}
		l := s.itemList(provider, func(x *lists) *idList[struct{}] {
			if devices {
				return &x.dsubs
			}
			return &x.subs
		})
		get := func(id int64, _ struct{}) (subRef, bool) { return s.subRef(id) }
		if byID {
			total, page = walkPage(l, desc, q.Page, get, match)
			done = true
			return
		}
		found = collect(l, get, match)
	})
	if !done {
		total, page = sortAll(found, q.Page, order, bySubID, byID, desc)
	}
	return listOf(total, page, subView), nil
}

// DeviceSortFields are the fields ListDevices can sort by.
var DeviceSortFields = []string{"id", "account", "unique_id", "created", "last_online", "mac"}

var devFields = map[string]func(a, b devRef) int{
	"id":          byDevID,
	"account":     func(a, b devRef) int { return cmp.Compare(a.a.id, b.a.id) },
	"unique_id":   func(a, b devRef) int { return strings.Compare(a.dev().uniqueID(), b.dev().uniqueID()) },
	"created":     func(a, b devRef) int { return cmp.Compare(a.dev().created, b.dev().created) },
	"last_online": func(a, b devRef) int { return cmp.Compare(a.dev().last, b.dev().last) },
	"mac":         func(a, b devRef) int { return strings.Compare(a.dev().field(dMAC), b.dev().field(dMAC)) }, // bytes sort as the text does
}

// DeviceQuery selects bound devices. Zero-valued filters select
// everything.
type DeviceQuery struct {
	// Scope limits the rows to one provider's; it must be set (see Scope).
	Scope Scope
	Page
	// Account keeps the devices of one account (0: any).
	Account int64
	// Provider keeps the devices of one provider's accounts (0: any).
	Provider int64
	// UniqueID keeps the devices with exactly this unique id ("": any).
	UniqueID string
	// DeviceType keeps the devices of one device type (0: any).
	DeviceType int64
	// RemoteCustomField keeps devices whose remote_custom_field equals it
	// exactly (null never matches).
	RemoteCustomField *string
	// MAC keeps the devices with this MAC address, in the stored form
	// (domain.NormalizeMAC); "": any.
	MAC string
	// QuickSearch keeps devices whose unique id, MAC, address, comment,
	// remote_custom_field or model contains it, ignoring case; a MAC in
	// any notation finds its device.
	QuickSearch string
	// Enabled keeps the devices of enabled (true) or disabled (false)
	// accounts: a device has no switch of its own, its account's decides
	// whether it gets service.
	Enabled *bool
}

// matcher returns the predicate of the query's filters.
func (q *DeviceQuery) matcher(provider int64) func(devRef) bool {
	preds := []func(devRef) bool{func(r devRef) bool {
		return (provider == 0 || r.a.provider == provider) && (q.Account == 0 || r.a.id == q.Account)
	}}
	if q.UniqueID != "" {
		preds = append(preds, func(r devRef) bool { return r.dev().uniqueID() == q.UniqueID })
	}
	if q.DeviceType != 0 {
		preds = append(preds, func(r devRef) bool { return r.dev().deviceType == q.DeviceType })
	}
	if q.Enabled != nil {
		want := *q.Enabled
		preds = append(preds, func(r devRef) bool { return r.a.enabled() == want })
	}
	if q.RemoteCustomField != nil {
		want := *q.RemoteCustomField
		preds = append(preds, func(r devRef) bool {
			p := r.dev().fieldPtr(dRemoteCustomField)
			return p != nil && *p == want
		})
	}
	if q.MAC != "" {
		preds = append(preds, func(r devRef) bool { return sameMAC(r.dev().field(dMAC), q.MAC) })
	}
	if needle := strings.TrimSpace(q.QuickSearch); needle != "" {
		folded := foldNeedle(needle)
		mac, macErr := domain.NormalizeMAC(needle)
		preds = append(preds, func(r devRef) bool {
			d := r.dev()
			if macErr == nil && sameMAC(d.field(dMAC), mac) {
				return true
			}
			for _, f := range [...]int{dUniqueID, dMAC, dAddress, dComment, dRemoteCustomField, dModel} {
				if containsFold(d.value(f), folded) {
					return true
				}
			}
			return false
		})
	}
	return allOf(preds)
}

// ListDevices returns the devices q selects, in q's order, with the number
// that match. Account and UniqueID filters are index lookups; otherwise it
// walks the provider's (or everyone's) devices in id order.
func (m *Model) ListDevices(q DeviceQuery) (List[Device], error) {
	order, err := comparator(q.Sort, devFields, byDevID)
	if err != nil {
		return List[Device]{}, err
	}
	byID, desc := idOrder(q.Sort)
	provider, ok := q.Scope.narrow(q.Provider)
	if !ok {
		return emptyList[Device](), nil
	}
	match := q.matcher(provider)
	filtered := q.DeviceType != 0 || q.RemoteCustomField != nil || q.MAC != "" || strings.TrimSpace(q.QuickSearch) != "" || q.Enabled != nil
	var total int
	var page, found []devRef
	done := false
	m.read(func(s *state) {
		switch {
		case q.UniqueID != "":
			for _, id := range s.devicesByUID(q.UniqueID) {
				if r, ok := s.devRef(id); ok && match(r) {
					found = append(found, r)
				}
			}
		case q.Account != 0:
			if a := s.account(q.Account); a != nil {
				for i := range a.devs {
					if r := (devRef{a, i}); match(r) {
						found = append(found, r)
					}
				}
			}
		default:
			l := s.itemList(provider, func(x *lists) *idList[struct{}] { return &x.devs })
			get := func(id int64, _ struct{}) (devRef, bool) { return s.devRef(id) }
			var only func(devRef) bool
			if filtered {
				only = match
			}
			if byID {
				total, page = walkPage(l, desc, q.Page, get, only)
				done = true
				return
			}
			found = collect(l, get, only)
		}
	})
	if !done {
		total, page = sortAll(found, q.Page, order, byDevID, byID, desc)
	}
	return listOf(total, page, devView), nil
}

// itemList returns the id list that pick chooses among provider's lists
// (0: everyone's); nil when the provider has no accounts.
func (s *state) itemList(provider int64, pick func(*lists) *idList[struct{}]) *idList[struct{}] {
	if provider == 0 {
		return pick(&s.all)
	}
	if pi := s.byProv[provider]; pi != nil {
		return pick(&pi.lists)
	}
	return nil
}

// sortAll orders a small set of found items (by id, or by order) and
// returns the total and the page.
func sortAll[E any](found []E, p Page, order, byID func(a, b E) int, idOnly, desc bool) (int, []E) {
	if idOnly {
		slices.SortFunc(found, byID)
		if desc {
			slices.Reverse(found)
		}
		order = nil
	}
	return sortPage(found, p, order)
}

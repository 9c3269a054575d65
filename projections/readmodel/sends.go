package readmodel

import (
	"cmp"
	"slices"
)

// The command sends, by id: which exist and whose they are, so that past
// sends can be listed (GET /api/provider/commands); what each send holds,
// and what became of it, is read from its streams.

// sends are the send ids, all of them and by scope (the provider a send
// belongs to; 0 for sends spanning providers, which superadmins alone see).
type sends struct {
	all     idList[struct{}]
	byScope map[int64]*idList[struct{}]
}

// add records send id of scope (nil: spanning providers). Adding it again
// changes nothing.
func (s *sends) add(id int64, scope *int64) {
	s.all.Insert(id)
	var p int64
	if scope != nil {
		p = *scope
	}
	l := s.byScope[p]
	if l == nil {
		l = &idList[struct{}]{}
		s.byScope[p] = l
	}
	l.Insert(id)
}

// SendQuery selects sends.
type SendQuery struct {
	// Scope limits the sends to one provider's; AllProviders lists every
	// send.
	Scope Scope
	Page
}

// SendSortFields are the fields ListSends can sort by.
var SendSortFields = []string{"id"}

// ListSends returns the ids of the sends q selects, in q's order (id,
// ascending unless sorted by -id), and their number.
func (m *Model) ListSends(q SendQuery) (List[int64], error) {
	if _, err := comparator(q.Sort, map[string]func(a, b int64) int{"id": byInt}, byInt); err != nil {
		return List[int64]{}, err
	}
	_, desc := idOrder(q.Sort)
	var total int
	var page []int64
	m.read(func(s *state) {
		l := &s.sends.all
		if !q.Scope.all {
			p, scoped := q.Scope.Provider()
			if l = s.sends.byScope[p]; !scoped || l == nil {
				return
			}
		}
		total, page = walkPage(l, desc, q.Page, func(id int64, _ struct{}) (int64, bool) { return id, true }, nil)
	})
	return listOf(total, page, func(id int64) int64 { return id }), nil
}

func byInt(a, b int64) int { return cmp.Compare(a, b) }

// snapSends are the send ids of one scope in a snapshot, ascending.
type snapSends struct {
	Scope int64   `json:"scope"`
	IDs   []int64 `json:"ids"`
}

// capture returns the send ids by scope, scopes ascending.
func (s *sends) capture() []snapSends {
	out := make([]snapSends, 0, len(s.byScope))
	for p, l := range s.byScope {
		e := snapSends{Scope: p, IDs: make([]int64, 0, l.Len())}
		for id := range l.Walk(false, 0) {
			e.IDs = append(e.IDs, id)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b snapSends) int { return cmp.Compare(a.Scope, b.Scope) })
	return out
}

// restore adds the send ids of a snapshot.
func (s *sends) restore(from []snapSends) {
	for _, e := range from {
		for _, id := range e.IDs {
			scope := &e.Scope
			if e.Scope == 0 {
				scope = nil
			}
			s.add(id, scope)
		}
	}
}

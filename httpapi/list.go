package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
)

// FilterType is the type of a list filter's value.
type FilterType int

// The filter types. Values are parsed as the body getters parse them:
// integers as decimal strings, booleans as true/false or 1/0.
const (
	FilterString FilterType = iota + 1
	FilterInt
	FilterBool
)

// MaxQuickSearch is the longest quick_search accepted, in bytes.
const MaxQuickSearch = 1000

// ListSpec is what one list endpoint accepts beyond the paging
// (start, limit) and quick_search every list has: its sort keys and
// filters. The accounts list, for example:
//
//	httpapi.ListSpec{
//		Sort:    []string{"id", "login", "fullname", "created"},
//		Filters: map[string]httpapi.FilterType{"provider": httpapi.FilterInt, "enabled": httpapi.FilterBool,
//			"login": httpapi.FilterString, "remote_custom_field": httpapi.FilterString},
//	}
type ListSpec struct {
	// Sort names the fields the list can be sorted by.
	Sort []string
	// Filters maps filter parameter names to their types.
	Filters map[string]FilterType
	// Params names the other query parameters the route reads itself (an
	// as_of, say). Any parameter that is neither one of these, a filter,
	// nor one of the paging, sorting and search parameters every list
	// takes answers 400 naming it: a sync job that filters on something
	// the list does not know must not get the whole collection back.
	Params []string
	// DefaultLimit is the limit of a request without one; 0 means all.
	DefaultLimit int
}

// SortKey is one key of a list's order.
type SortKey struct {
	Field string
	Desc  bool
}

// ListQuery is a parsed list request.
type ListQuery struct {
	// Start is the number of items to skip (≥ 0).
	Start int
	// Limit is the page size; ≤ 0 means all items from Start on.
	Limit int
	// Sort is the requested order, most significant key first; empty means
	// the list's natural order (ascending id).
	Sort []SortKey
	// QuickSearch is the trimmed free-text search; "" means none.
	QuickSearch string

	filters map[string]any // int64, bool or string, by filter name
}

// ParseListQuery parses the list parameters of c's URL against spec. Bad
// values give a 400 validation_failed naming each bad parameter.
func ParseListQuery(c *gin.Context, spec ListSpec) (ListQuery, error) {
	return spec.Parse(c.Request.URL.Query())
}

// Parse parses list parameters:
//
//	start=40                 items to skip (default 0)
//	limit=20                 page size; 0: all (default spec.DefaultLimit); negative: refused
//	page=3                   ExtJS paging, used only without start: start = (page-1)*limit
//	sort=login               ascending; -login descending; login,-id several keys
//	sort=login&dir=DESC      ExtJS 3 style (dir applies to a single key)
//	sort=[{"property":"login","direction":"DESC"}]   ExtJS 4+ style
//	quick_search=anna        free text
//	provider=7&enabled=1     the list's filters; an empty value means no filter
//	filter=[{"property":"provider","value":7}]       ExtJS 4+ filters (operator eq, or none)
func (s ListSpec) Parse(values url.Values) (ListQuery, error) {
	q := ListQuery{Limit: s.DefaultLimit}
	bad := map[string]string{}

	if v, ok := single(values, "limit", bad); ok {
		switch n, err := wire.ParseInt(v); {
		case err != nil:
			bad["limit"] = err.Error()
		case n < 0:
			bad["limit"] = "must be a non-negative integer (0: every item)"
		default:
			q.Limit = clampInt(n)
		}
	}
	if v, ok := single(values, "start", bad); ok {
		if n, err := wire.ParseInt(v); err != nil || n < 0 {
			bad["start"] = "must be a non-negative integer"
		} else {
			q.Start = clampInt(n)
		}
	} else if v, ok := single(values, "page", bad); ok {
		if n, err := wire.ParseInt(v); err != nil || n < 1 {
			bad["page"] = "must be a positive integer"
		} else if q.Limit > 0 {
			if n-1 > math.MaxInt64/int64(q.Limit) {
				q.Start = math.MaxInt
			} else {
				q.Start = clampInt((n - 1) * int64(q.Limit))
			}
		}
	}
	if v, ok := single(values, "sort", bad); ok {
		dir, _ := single(values, "dir", bad)
		sortKeys, msg := s.parseSort(v, dir)
		if msg != "" {
			bad["sort"] = msg
		}
		q.Sort = sortKeys
	}
	if v, ok := single(values, "quick_search", bad); ok {
		if len(v) > MaxQuickSearch {
			bad["quick_search"] = fmt.Sprintf("must be at most %d bytes", MaxQuickSearch)
		} else {
			q.QuickSearch = strings.TrimSpace(v)
		}
	}

	q.filters = map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(s.Filters)) {
		if v, ok := single(values, name, bad); ok {
			s.setFilter(&q, name, v, bad)
		}
	}
	if v, ok := single(values, "filter", bad); ok {
		s.parseExtFilters(&q, v, bad)
	}

	s.checkUnknown(values, bad)

	if len(bad) > 0 {
		return ListQuery{}, ValidationFailed(bad)
	}
	return q, nil
}

// listParams are the query parameters every list takes; _dc is the
// cache-busting timestamp ExtJS stores add to every request.
var listParams = []string{"start", "limit", "page", "sort", "dir", "quick_search", "filter", "_dc"}

// checkUnknown records every query parameter the list does not know.
func (s ListSpec) checkUnknown(values url.Values, bad map[string]string) {
	for name := range values {
		if _, ok := s.Filters[name]; ok || slices.Contains(listParams, name) || slices.Contains(s.Params, name) {
			continue
		}
		bad[name] = "unknown parameter; this list takes " + strings.Join(s.known(), ", ")
	}
}

// known lists the parameter names the list takes, sorted.
func (s ListSpec) known() []string {
	names := append(slices.Collect(maps.Keys(s.Filters)), s.Params...)
	names = append(names, listParams[:len(listParams)-1]...) // _dc goes unmentioned
	slices.Sort(names)
	return names
}

// single returns the value of parameter name; present is false when it is
// absent or blank. Repeating it with different values is an error.
func single(values url.Values, name string, bad map[string]string) (v string, present bool) {
	vs := values[name]
	for _, x := range vs {
		if strings.TrimSpace(x) == "" {
			continue
		}
		if present && x != v {
			bad[name] = "given more than once with different values"
			return "", false
		}
		v, present = x, true
	}
	return v, present
}

func clampInt(n int64) int {
	return int(max(min(n, math.MaxInt), math.MinInt))
}

func (s ListSpec) parseSort(v, dir string) ([]SortKey, string) {
	v = strings.TrimSpace(v)
	var keys []SortKey
	if strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{") {
		var ext []struct {
			Property  string `json:"property"`
			Direction string `json:"direction"`
		}
		raw := v
		if strings.HasPrefix(v, "{") {
			raw = "[" + v + "]"
		}
		if err := json.Unmarshal([]byte(raw), &ext); err != nil {
			return nil, `must be a field name, -field for descending, or [{"property":"field","direction":"ASC|DESC"}]`
		}
		for _, e := range ext {
			desc, ok := parseDirection(e.Direction)
			if !ok {
				return nil, fmt.Sprintf("direction %q must be ASC or DESC", e.Direction)
			}
			keys = append(keys, SortKey{Field: e.Property, Desc: desc})
		}
	} else {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			key := SortKey{Field: part}
			switch {
			case strings.HasPrefix(part, "-"):
				key = SortKey{Field: part[1:], Desc: true}
			case strings.HasPrefix(part, "+"):
				key = SortKey{Field: part[1:]}
			}
			keys = append(keys, key)
		}
		if dir != "" {
			desc, ok := parseDirection(dir)
			switch {
			case !ok:
				return nil, fmt.Sprintf("dir %q must be ASC or DESC", dir)
			case len(keys) == 1:
				keys[0].Desc = keys[0].Desc != desc
			}
		}
	}
	for _, k := range keys {
		if !slices.Contains(s.Sort, k.Field) {
			if len(s.Sort) == 0 {
				return nil, "this list cannot be sorted"
			}
			return nil, fmt.Sprintf("unknown field %q; one of %s", k.Field, strings.Join(s.Sort, ", "))
		}
	}
	return keys, ""
}

func parseDirection(d string) (desc, ok bool) {
	switch strings.ToUpper(strings.TrimSpace(d)) {
	case "", "ASC":
		return false, true
	case "DESC":
		return true, true
	}
	return false, false
}

// setFilter parses filter name's value v by its type; a conflicting second
// value (query parameter and ExtJS filter) is an error.
func (s ListSpec) setFilter(q *ListQuery, name, v string, bad map[string]string) {
	var val any
	switch s.Filters[name] {
	case FilterInt:
		n, err := wire.ParseInt(v)
		if err != nil {
			bad[name] = err.Error()
			return
		}
		val = n
	case FilterBool:
		b, err := wire.ParseBool(v)
		if err != nil {
			bad[name] = err.Error()
			return
		}
		val = b
	default:
		val = v
	}
	if prev, dup := q.filters[name]; dup && prev != val {
		bad[name] = "given more than once with different values"
		return
	}
	q.filters[name] = val
}

func (s ListSpec) parseExtFilters(q *ListQuery, v string, bad map[string]string) {
	var ext []struct {
		Property string `json:"property"`
		Operator string `json:"operator"`
		Value    any    `json:"value"`
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&ext); err != nil {
		bad["filter"] = `must be [{"property":"name","value":...}]`
		return
	}
	for _, f := range ext {
		if _, ok := s.Filters[f.Property]; !ok {
			bad["filter"] = fmt.Sprintf("unknown property %q", f.Property)
			continue
		}
		switch f.Operator {
		case "", "eq", "=", "==":
		default:
			bad["filter"] = fmt.Sprintf("operator %q is not supported (only eq)", f.Operator)
			continue
		}
		switch val := f.Value.(type) {
		case nil:
		case string:
			if strings.TrimSpace(val) != "" {
				s.setFilter(q, f.Property, val, bad)
			}
		case json.Number:
			s.setFilter(q, f.Property, val.String(), bad)
		case bool:
			s.setFilter(q, f.Property, fmt.Sprint(val), bad)
		default:
			bad[f.Property] = "must be a single value"
		}
	}
}

// Has reports whether the request filters on name.
func (q ListQuery) Has(name string) bool {
	_, ok := q.filters[name]
	return ok
}

// Int64 returns the value of an integer filter, and whether it was given.
func (q ListQuery) Int64(name string) (int64, bool) {
	v, ok := q.filters[name].(int64)
	return v, ok
}

// Bool returns the value of a boolean filter, and whether it was given.
func (q ListQuery) Bool(name string) (v, ok bool) {
	v, ok = q.filters[name].(bool)
	return v, ok
}

// String returns the value of a string filter, and whether it was given.
func (q ListQuery) String(name string) (string, bool) {
	v, ok := q.filters[name].(string)
	return v, ok
}

// SetFilter sets (or overrides) filter name: handlers pin a provider-scoped
// admin's lists to their provider with it.
func (q *ListQuery) SetFilter(name string, value any) {
	if q.filters == nil {
		q.filters = map[string]any{}
	}
	q.filters[name] = value
}

// Window returns the slice bounds [lo, hi) of the page within total items.
func (q ListQuery) Window(total int) (lo, hi int) {
	lo = min(max(q.Start, 0), total)
	hi = total
	if q.Limit > 0 && q.Limit < total-lo {
		hi = lo + q.Limit
	}
	return lo, hi
}

// Page returns the page of all that q asks for.
func Page[T any](q ListQuery, all []T) []T {
	lo, hi := q.Window(len(all))
	return all[lo:hi]
}

// listFlushBytes is how much of a list is encoded before it is written out.
const listFlushBytes = 32 << 10

// jsonAppender is an item type that writes its own JSON, exactly as
// encoding/json would but without reflection.
type jsonAppender interface{ appendJSON(dst []byte) []byte }

// WriteList answers 200 with the list envelope
//
//	{"data":[...],"total":N,"start":S,"limit":L}
//
// encoding items one by one as they are yielded, so a list of any length
// (limit ≤ 0 means all) is streamed in 32 KiB writes without being held in
// memory, as JSON or as Go values. items must yield the page only (see
// Window and Page); WriteList stops after q.Limit items when it is > 0.
// It stops early when the client goes away.
//
// If an item cannot be encoded before anything was sent, the answer is a
// 500; after that the response is cut short (its JSON left unterminated, so
// no client mistakes it for a complete list) and the error is logged with
// the request.
func WriteList[T any](c *gin.Context, q ListQuery, total int, items iter.Seq[T]) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // HTML-escaped, like c.JSON
	buf.WriteString(`{"data":[`)
	sent := false
	write := func() error {
		if !sent {
			c.Header("Content-Type", "application/json; charset=utf-8")
			c.Status(http.StatusOK)
			sent = true
		}
		_, err := c.Writer.Write(buf.Bytes())
		buf.Reset()
		return err
	}

	var failed error
	n := 0
	ctx := c.Request.Context()
	for v := range items {
		if q.Limit > 0 && n == q.Limit {
			break
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		if ap, ok := any(v).(jsonAppender); ok {
			buf.Write(ap.appendJSON(buf.AvailableBuffer()))
		} else if err := enc.Encode(v); err != nil {
			failed = fmt.Errorf("encode list item %d: %w", n, err)
			break
		} else {
			buf.Truncate(buf.Len() - 1) // Encode's newline
		}
		n++
		if buf.Len() >= listFlushBytes {
			if err := write(); err != nil {
				failed = fmt.Errorf("write list: %w", err)
				break
			}
			if err := ctx.Err(); err != nil {
				failed = fmt.Errorf("write list: %w", err)
				break
			}
		}
	}
	switch {
	case failed != nil && !sent:
		WriteError(c, Internal(failed))
		return
	case failed != nil:
		_ = c.Error(failed)
		c.Abort()
		return
	}
	fmt.Fprintf(&buf, `],"total":%d,"start":%d,"limit":%d}`, total, q.Start, q.Limit)
	if err := write(); err != nil {
		_ = c.Error(fmt.Errorf("write list: %w", err))
	}
}

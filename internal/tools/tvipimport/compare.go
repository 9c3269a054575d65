package tvipimport

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// differing returns the fields of want that got does not hold alike, in
// the order of fields. A field want lacks altogether (not null: absent) is
// one the source does not answer, so nothing can be said of it.
func differing(fields []string, want, got object) []string {
	var out []string
	for _, f := range fields {
		w, ok := want[f]
		if !ok {
			continue
		}
		if !same(w, got[f]) {
			out = append(out, f)
		}
	}
	return out
}

// same reports whether two values of a field mean the same: numbers by
// value, 0/1 as booleans, "" as null, date-times by instant, lists of ids
// in any order.
func same(a, b any) bool {
	return canonical(a) == canonical(b)
}

// canonical renders a value so that values that mean the same render
// alike.
func canonical(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			switch f {
			case 0:
				return "false"
			case 1:
				return "true"
			}
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return string(x)
	case float64:
		return canonical(json.Number(strconv.FormatFloat(x, 'g', -1, 64)))
	case int:
		return canonical(json.Number(strconv.Itoa(x)))
	case int64:
		return canonical(json.Number(strconv.FormatInt(x, 10)))
	case string:
		if x == "" {
			return "null"
		}
		if t, ok := parseTime(x); ok {
			return "t" + strconv.FormatInt(t.Unix(), 10)
		}
		if _, err := strconv.ParseFloat(x, 64); err == nil {
			return canonical(json.Number(x))
		}
		return strconv.Quote(x)
	case []any:
		items := make([]string, len(x))
		for i, item := range x {
			items[i] = canonical(item)
		}
		sort.Strings(items)
		return "[" + strings.Join(items, ",") + "]"
	case map[string]any:
		keys := sortedKeys(x)
		var b strings.Builder
		b.WriteString("{")
		for _, k := range keys {
			fmt.Fprintf(&b, "%q:%s,", k, canonical(x[k]))
		}
		b.WriteString("}")
		return b.String()
	default:
		return fmt.Sprint(x)
	}
}

// timeLayouts are the date-time forms of TVIP's and tvsm's answers.
var timeLayouts = []string{
	"2006-01-02T15:04:05Z0700",
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z0700",
	"2006-01-02 15:04:05",
}

func parseTime(s string) (time.Time, bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// show renders a value for the report.
func show(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

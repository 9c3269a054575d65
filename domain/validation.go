package domain

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ValidationError reports the invalid fields of a command. Fields maps the
// wire name of each field (login, pin_md5, tarif, stop, billing.url, ...) to
// what is wrong with it. errors.Is(err, ErrValidation) holds.
type ValidationError struct {
	Fields map[string]string
}

// NewValidationError returns a *ValidationError for one field. The
// application layer uses it for checks the domain cannot make (a login that
// is already taken, a tariff that does not exist).
func NewValidationError(field, problem string) *ValidationError {
	return &ValidationError{Fields: map[string]string{field: problem}}
}

// Error lists the fields in name order: "login: required; pin_md5: must be
// 32 hex characters".
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(e.Fields)) {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(e.Fields[name])
	}
	return b.String()
}

// Unwrap returns ErrValidation.
func (e *ValidationError) Unwrap() error { return ErrValidation }

// problems collects field problems while a command is checked, so one error
// reports every bad field at once.
type problems map[string]string

// add records problem for field unless problem is empty or the field already
// has one (the first problem found is the most basic).
func (p *problems) add(field, problem string) {
	if problem == "" {
		return
	}
	if *p == nil {
		*p = make(problems)
	}
	if _, ok := (*p)[field]; !ok {
		(*p)[field] = problem
	}
}

// addErr is add with an error's text.
func (p *problems) addErr(field string, err error) {
	if err != nil {
		p.add(field, err.Error())
	}
}

// err returns the *ValidationError, or nil when there are no problems.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Fields: p}
}

// notFound wraps ErrNotFound with what was looked for: "account 42: not found".
func notFound(what string, id any) error {
	return fmt.Errorf("%s %v: %w", what, id, ErrNotFound)
}

// alreadyExists wraps ErrAlreadyExists: "account 42: already exists".
func alreadyExists(what string, id any) error {
	return fmt.Errorf("%s %v: %w", what, id, ErrAlreadyExists)
}

// Problem texts shared by the aggregates; the HTTP layer passes them on in
// its "fields" member, so they read as plain English.
const (
	problemRequired  = "required"
	problemImmutable = "cannot be changed"
	problemNotNull   = "must not be null"
	problemPositive  = "must be a positive integer"
)

// textRule says what a free-text field may hold. Lengths count characters
// (runes), not bytes, because the limits are about text shown to people.
type textRule struct {
	max       int
	required  bool
	multiline bool // tabs and line breaks allowed (descriptions, addresses)
	trimmed   bool // no white space at either end (logins, names)
}

// check returns what is wrong with s, or "".
func (r textRule) check(s string) string {
	if s == "" {
		if r.required {
			return problemRequired
		}
		return ""
	}
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if n := utf8.RuneCountInString(s); n > r.max {
		return fmt.Sprintf("must be at most %d characters", r.max)
	}
	for _, c := range s {
		if unicode.IsControl(c) && !(r.multiline && (c == '\t' || c == '\n' || c == '\r')) {
			return "must not contain control characters"
		}
	}
	if r.trimmed {
		first, _ := utf8.DecodeRuneInString(s)
		last, _ := utf8.DecodeLastRuneInString(s)
		if unicode.IsSpace(first) || unicode.IsSpace(last) {
			return "must not start or end with white space"
		}
	}
	return ""
}

// checkPtr is check for the pointer of a nullable field: nil is fine.
func (r textRule) checkPtr(s *string) string {
	if s == nil {
		return ""
	}
	return r.check(*s)
}

// MaxDeviceLimit is the largest devices_per_account_limit accepted; it keeps
// the value inside 32 bits for every store that counts devices.
const MaxDeviceLimit = math.MaxInt32

// checkLimit validates a devices_per_account_limit value.
func checkLimit(n *int) string {
	if n == nil {
		return ""
	}
	if *n < 0 || *n > MaxDeviceLimit {
		return fmt.Sprintf("must be between 0 and %d", MaxDeviceLimit)
	}
	return ""
}

// checkID validates an id allocated outside the domain.
func checkID(id int64) string {
	if id <= 0 {
		return problemPositive
	}
	return ""
}

// checkRefPtr validates a nullable reference to another entity by id.
func checkRefPtr(id *int64) string {
	if id == nil {
		return ""
	}
	return checkID(*id)
}

// checkTime validates a date-time of a command: set, and within years
// 1–9999 so that it can be stored as RFC 3339.
func checkTime(t time.Time) string {
	if t.IsZero() {
		return problemRequired
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return "year must be between 1 and 9999"
	}
	return ""
}

// normTime returns t in UTC without a monotonic clock reading, the form
// events carry (so a decoded event equals the decided one).
func normTime(t time.Time) time.Time { return t.Round(0).UTC() }

// MaxURLLen is the maximum length of a stored URL (billing url, logo url).
const MaxURLLen = 2048

// ValidateHTTPURL reports whether s is an absolute http or https URL with a
// host, at most MaxURLLen bytes.
func ValidateHTTPURL(s string) error {
	if s == "" {
		return errors.New(problemRequired)
	}
	if len(s) > MaxURLLen {
		return fmt.Errorf("must be at most %d characters", MaxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

// cloneIDs returns a copy of ids without repeats, in first-seen order, and
// the problem with them (too many, or an id that is not positive). The result
// is never nil, so an empty list survives a JSON round trip unchanged. The
// length is checked before deduplicating so a huge input costs nothing.
func cloneIDs(ids []int64, max int) ([]int64, string) {
	if len(ids) > max {
		return nil, fmt.Sprintf("must hold at most %d ids", max)
	}
	out := make([]int64, 0, len(ids))
	seen := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		if id <= 0 {
			return nil, "ids must be positive integers"
		}
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out, ""
}

package billing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Severity grades a deviation from the billing models.
type Severity string

// The severities. Errors break a rule of the billing interface; warnings
// break a recommendation (the "recommended" tariff name and description
// lengths) or make the applications guess.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Deviation is one place where a billing answer departs from the billing
// models.
type Deviation struct {
	// Path is the JSON path of the offending value:
	// $.services[0].groups[1].offers[0].tariff.tms_id
	Path     string
	Severity Severity
	Problem  string
}

func (d Deviation) String() string { return fmt.Sprintf("%s %s: %s", d.Severity, d.Path, d.Problem) }

// ModelOptions adjust the validators.
type ModelOptions struct {
	// ServiceIDField is the wire name of the tariff's id in the service
	// (mandatory since the 2025-03-04 model update); default
	// DefaultServiceIDField.
	ServiceIDField string
}

// DefaultServiceIDField is the wire name of the tariff's service id:
// tms_id, as TVIP's billing interface change log of 2025-03-04 names it
// ("added mandatory field tms_id").
const DefaultServiceIDField = "tms_id"

func (o ModelOptions) withDefaults() ModelOptions {
	if o.ServiceIDField == "" {
		o.ServiceIDField = DefaultServiceIDField
	}
	return o
}

// ValidateCabinet checks a GET /api/cabinet answer: a Cabinet with its
// account, services, SINGLE and MULTI groups, offers, subscriptions and
// tariffs. It returns every deviation, in document order; none for a
// conforming cabinet. Properties the models do not name are ignored.
func ValidateCabinet(data []byte, opts ModelOptions) []Deviation {
	return validate(data, opts, checkCabinet)
}

// ValidateTariffDetail checks a GET /api/tariff/{id} answer: {tariff,
// channels, categories}.
func ValidateTariffDetail(data []byte, opts ModelOptions) []Deviation {
	return validate(data, opts, checkTariffDetail)
}

// ValidateResult checks the Result object of switch, subscribe and
// unsubscribe: {status, message, subscription}.
func ValidateResult(data []byte, opts ModelOptions) []Deviation {
	return validate(data, opts, objectOf(resultProps))
}

// ValidatePasswordResult checks the answer of POST /api/cabinet/password:
// {status, message}.
func ValidatePasswordResult(data []byte) []Deviation {
	return validate(data, ModelOptions{}, objectOf(passwordResultProps))
}

// validator collects deviations.
type validator struct {
	opts ModelOptions
	out  []Deviation
}

func (v *validator) errorf(path, format string, args ...any) {
	v.out = append(v.out, Deviation{Path: path, Severity: SeverityError, Problem: fmt.Sprintf(format, args...)})
}

func (v *validator) warnf(path, format string, args ...any) {
	v.out = append(v.out, Deviation{Path: path, Severity: SeverityWarning, Problem: fmt.Sprintf(format, args...)})
}

// check validates value x, never nil (null is handled by the property or
// element that holds it), found at path.
type check func(v *validator, path string, x any)

func validate(data []byte, opts ModelOptions, root check) []Deviation {
	v := &validator{opts: opts.withDefaults()}
	x, err := decodeJSON(data)
	switch {
	case err != nil:
		v.errorf("$", "not valid JSON: %v", err)
	case x == nil:
		v.errorf("$", "must be an object, got null")
	default:
		root(v, "$", x)
	}
	return v.out
}

// decodeJSON decodes exactly one JSON value, numbers kept as written.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more data after the JSON value")
	}
	return x, nil
}

// kindOf names the JSON type of x.
func kindOf(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", x)
}

// prop is a property of an object model.
type prop struct {
	name     string
	nullable bool
	check    check
	// alias is a wrong name a billing may use instead (tarif for tariff);
	// when found, the "required" deviation says so.
	alias string
}

// objectOf checks an object against props.
func objectOf(props []prop) check {
	return func(v *validator, path string, x any) {
		if obj, ok := v.object(path, x); ok {
			v.props(path, obj, props)
		}
	}
}

func (v *validator) object(path string, x any) (map[string]any, bool) {
	obj, ok := x.(map[string]any)
	if !ok {
		v.errorf(path, "must be an object, got %s", kindOf(x))
	}
	return obj, ok
}

// props checks each property of obj: a missing one is an error (a warning
// when it may be null: billing is asked to send null when unused), a null
// one an error unless nullable.
func (v *validator) props(path string, obj map[string]any, props []prop) {
	for _, p := range props {
		name := p.name
		if name == serviceIDPlaceholder {
			name = v.opts.ServiceIDField
		}
		x, present := obj[name]
		at := path + "." + name
		switch {
		case !present && p.alias != "" && obj[p.alias] != nil:
			v.errorf(at, "required (found %q: the property is named %s)", p.alias, name)
		case !present && p.nullable:
			v.warnf(at, "missing; send null when unused")
		case !present:
			v.errorf(at, "required")
		case x == nil && !p.nullable:
			v.errorf(at, "must not be null")
		case x != nil:
			p.check(v, at, x)
		}
	}
}

// arrayOf checks an array whose elements pass elem (null elements are
// errors).
func arrayOf(elem check) check {
	return func(v *validator, path string, x any) {
		a, ok := x.([]any)
		if !ok {
			v.errorf(path, "must be an array, got %s", kindOf(x))
			return
		}
		for i, e := range a {
			at := path + "[" + strconv.Itoa(i) + "]"
			if e == nil {
				v.errorf(at, "must not be null")
				continue
			}
			elem(v, at, e)
		}
	}
}

func (v *validator) str(path string, x any) (string, bool) {
	s, ok := x.(string)
	if !ok {
		v.errorf(path, "must be a string, got %s", kindOf(x))
	}
	return s, ok
}

func checkString(v *validator, path string, x any) { v.str(path, x) }

func (v *validator) integer(path string, x any) (int64, bool) {
	n, ok := x.(json.Number)
	if !ok {
		v.errorf(path, "must be an integer, got %s", kindOf(x))
		return 0, false
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		v.errorf(path, "must be an integer, got %s", n)
		return 0, false
	}
	return i, true
}

func checkInteger(v *validator, path string, x any) { v.integer(path, x) }

func checkBoolean(v *validator, path string, x any) {
	if _, ok := x.(bool); !ok {
		v.errorf(path, "must be a boolean, got %s", kindOf(x))
	}
}

// DateTimeLayout is the date-time shape of the billing interface:
// YYYY-MM-DDThh:mm:ss+hhmm, offset without a colon.
const DateTimeLayout = "2006-01-02T15:04:05-0700"

func checkDateTime(v *validator, path string, x any) {
	s, ok := v.str(path, x)
	if !ok {
		return
	}
	if _, err := time.Parse(DateTimeLayout, s); err == nil && len(s) == len(DateTimeLayout) {
		return
	}
	hint := ""
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		hint = " (the offset is written +hhmm, without a colon, and never Z)"
	}
	v.errorf(path, "must be a date-time YYYY-MM-DDThh:mm:ss+hhmm, got %q%s", s, hint)
}

// constant checks a string that must be want.
func constant(want, why string) check {
	return func(v *validator, path string, x any) {
		if s, ok := v.str(path, x); ok && s != want {
			v.errorf(path, "must be %q, got %q%s", want, s, why)
		}
	}
}

package sealed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"tvsm/domain"
)

// sealedKey is the member a sealed event's data gains: the personal values
// it held, as a JSON array in member order, encrypted under the subject's
// key and base64-encoded. Each of those members keeps its key with
// placeholder in place of its value, so the event's shape (which fields a
// change touched) stays readable. null values are not personal and stay.
const (
	sealedKey   = "$sealed"
	placeholder = `"sealed"`
	version     = "v1:"
)

var (
	sealedMember = []byte(`"` + sealedKey + `"`)
	erasedValue  = []byte(strconv.Quote(domain.ErasedValue))
)

// erasedAs is what stands for an erased value of p's fields.
func erasedAs(p domain.PersonalData) []byte {
	if p.ErasedAs != "" {
		return []byte(p.ErasedAs)
	}
	return erasedValue
}

// seal returns data with the personal values of an event of typ in
// stream encrypted; data itself when the type carries none, or the event
// holds none.
func (k *Keyring) seal(ctx context.Context, stream, typ string, data []byte) ([]byte, error) {
	p, ok := domain.PersonalDataOf(typ)
	if !ok {
		return data, nil
	}
	var buf [16]member
	ms, err := members(data, buf[:0])
	if err != nil {
		return nil, err
	}
	subject, personal, err := locate(data, ms, p)
	if err != nil || personal == 0 || subject <= 0 && p.SubjectOptional {
		return data, err
	}
	if subject <= 0 {
		return nil, fmt.Errorf("sealed: %s carries personal data but no subject in %q", typ, p.Subject)
	}
	c, err := k.cipher(ctx, subject, true)
	if err != nil {
		return nil, fmt.Errorf("sealed: subject %d: %w", subject, err)
	}
	values := make([]byte, 0, len(data))
	out := make([]byte, 0, len(data)+len(data)/2+64)
	values = append(values, '[')
	last := 0
	for _, m := range ms {
		if !isPersonal(data, m, p) {
			continue
		}
		if len(values) > 1 {
			values = append(values, ',')
		}
		values = append(values, data[m.valStart:m.end]...)
		out = append(append(out, data[last:m.valStart]...), placeholder...)
		last = m.end
	}
	values = append(values, ']')
	nonce := make([]byte, c.NonceSize(), c.NonceSize()+len(values)+c.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	box := c.Seal(nonce, nonce, values, aad(stream, typ, subject))
	end := ms[len(ms)-1].end
	out = append(out, data[last:end]...)
	out = append(out, `,"`+sealedKey+`":"`+version...)
	out = base64.StdEncoding.AppendEncode(out, box)
	out = append(out, '"')
	return append(out, data[end:]...), nil
}

// open returns data with the personal values of a sealed event restored,
// or, when its subject was erased, each replaced by domain.ErasedValue;
// data itself when it holds nothing sealed. erased reports the latter.
func (k *Keyring) open(ctx context.Context, stream, typ string, data []byte) (out []byte, erased bool, err error) {
	if !mayBeSealed(data) {
		return k.redactPlain(typ, data)
	}
	p, ok := domain.PersonalDataOf(typ)
	if !ok {
		return nil, false, fmt.Errorf("sealed: %s holds sealed values but carries no personal data", typ)
	}
	var buf [16]member
	ms, err := members(data, buf[:0])
	if err != nil {
		return nil, false, err
	}
	box := -1
	for i, m := range ms {
		if string(data[m.keyStart:m.keyEnd]) == sealedKey {
			box = i
		}
	}
	if box < 0 {
		return data, false, nil // the name appeared inside a value
	}
	if box == 0 {
		return nil, false, fmt.Errorf("sealed: %s: %s is the first member", typ, sealedKey)
	}
	subject, personal, err := locate(data, ms, p)
	if err != nil {
		return nil, false, err
	}
	boxed := ms[box]
	text, err := strconv.Unquote(string(data[boxed.valStart:boxed.end]))
	if err != nil || len(text) < len(version) || text[:len(version)] != version {
		return nil, false, fmt.Errorf("sealed: %s: malformed %s", typ, sealedKey)
	}
	raw, err := base64.StdEncoding.DecodeString(text[len(version):])
	if err != nil {
		return nil, false, fmt.Errorf("sealed: %s: malformed %s: %w", typ, sealedKey, err)
	}
	var values []byte
	var spans [][2]int
	c, err := k.cipher(ctx, subject, false)
	switch {
	case errors.Is(err, ErrErased), errors.Is(err, ErrNoKey):
		erased = true
	case err != nil:
		return nil, false, fmt.Errorf("sealed: subject %d: %w", subject, err)
	default:
		if len(raw) < c.NonceSize() {
			return nil, false, fmt.Errorf("sealed: %s: %s too short", typ, sealedKey)
		}
		values, err = c.Open(nil, raw[:c.NonceSize()], raw[c.NonceSize():], aad(stream, typ, subject))
		if err != nil {
			return nil, false, fmt.Errorf("sealed: %s of subject %d in %s does not open: %w", typ, subject, stream, err)
		}
		if spans, err = elements(values); err != nil {
			return nil, false, err
		}
		if len(spans) != personal {
			return nil, false, fmt.Errorf("sealed: %s holds %d sealed values for %d fields", typ, len(spans), personal)
		}
	}
	out = make([]byte, 0, len(data)+len(values))
	last, n := 0, 0
	for i, m := range ms {
		switch {
		case i == box:
			// Drop the member with the separator before it.
			cut := m.start
			for cut > last && data[cut-1] != ',' {
				cut--
			}
			out = append(out, data[last:cut-1]...)
			last = m.end
		case isPersonal(data, m, p):
			out = append(out, data[last:m.valStart]...)
			if erased {
				out = append(out, erasedAs(p)...)
			} else {
				out = append(out, values[spans[n][0]:spans[n][1]]...)
			}
			n++
			last = m.end
		}
	}
	return append(out, data[last:]...), erased, nil
}

// redactPlain returns the data of an event written before sealing (its
// personal values in plain text) with those values replaced as an erased
// subject's are, when its subject is known to be erased: the log still
// holds them, but nothing read through the seal shows them.
func (k *Keyring) redactPlain(typ string, data []byte) ([]byte, bool, error) {
	if !k.anyErased.Load() {
		return data, false, nil
	}
	p, ok := domain.PersonalDataOf(typ)
	if !ok {
		return data, false, nil
	}
	var buf [16]member
	ms, err := members(data, buf[:0])
	if err != nil {
		return data, false, nil // not ours to judge: the registry reports it
	}
	subject, personal, err := locate(data, ms, p)
	if err != nil || personal == 0 || !k.isErased(subject) {
		return data, false, nil
	}
	return redact(data, ms, p), true, nil
}

// redact returns data, whose members are ms, with every personal value
// replaced as an erased subject's values read.
func redact(data []byte, ms []member, p domain.PersonalData) []byte {
	out := make([]byte, 0, len(data))
	last := 0
	for _, m := range ms {
		if isPersonal(data, m, p) {
			out = append(append(out, data[last:m.valStart]...), erasedAs(p)...)
			last = m.end
		}
	}
	return append(out, data[last:]...)
}

// mayBeSealed reports whether data may hold sealed values: whether it
// names the sealed member anywhere.
func mayBeSealed(data []byte) bool { return bytes.Contains(data, sealedMember) }

// locate returns the subject of an event (the number in p.Subject; 0 when
// absent) and how many of its members hold personal values.
func locate(data []byte, ms []member, p domain.PersonalData) (subject int64, personal int, err error) {
	for _, m := range ms {
		key := string(data[m.keyStart:m.keyEnd])
		if key == p.Subject {
			if subject, err = strconv.ParseInt(string(data[m.valStart:m.end]), 10, 64); err != nil {
				return 0, 0, fmt.Errorf("sealed: subject %s is not an id", p.Subject)
			}
		}
		if isPersonal(data, m, p) {
			personal++
		}
	}
	return subject, personal, nil
}

// isPersonal reports whether m is one of p's fields and holds a value
// (null is not personal).
func isPersonal(data []byte, m member, p domain.PersonalData) bool {
	if string(data[m.valStart:m.end]) == "null" {
		return false
	}
	key := data[m.keyStart:m.keyEnd]
	for _, f := range p.Fields {
		if string(key) == f {
			return true
		}
	}
	return false
}

// aad binds a sealed value to its event: moved to another stream, type or
// subject it no longer opens.
func aad(stream, typ string, subject int64) []byte {
	b := make([]byte, 0, len(stream)+len(typ)+32)
	b = append(b, "tvsm sealed v1\x00"...)
	b = append(b, stream...)
	b = append(b, 0)
	b = append(b, typ...)
	b = append(b, 0)
	return strconv.AppendInt(b, subject, 10)
}

package tvipimport

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ReadPins reads passwords for accounts from CSV lines "login,pin_md5" (as
// a billing system exports them): pin_md5 is the MD5 of the password in
// hex. A first line that is a header (its second column is not a digest)
// is skipped. A bad line is an error naming it: an import with a wrong
// password for some accounts is worse than one that stops first.
func ReadPins(r io.Reader) (map[string]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	pins := map[string]string{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return pins, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != 2 {
			return nil, fmt.Errorf("line %d: want login,pin_md5, got %d columns", line, len(rec))
		}
		login, pin := rec[0], strings.ToLower(strings.TrimSpace(rec[1]))
		if !isDigest(pin) {
			if line == 1 {
				continue // a header
			}
			return nil, fmt.Errorf("line %d: pin_md5 of %q: want 32 hex digits", line, login)
		}
		if login == "" {
			return nil, fmt.Errorf("line %d: no login", line)
		}
		if old, ok := pins[login]; ok && old != pin {
			return nil, fmt.Errorf("line %d: login %q has two different pins", line, login)
		}
		pins[login] = pin
	}
}

func isDigest(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

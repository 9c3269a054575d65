// Package billing is tvsm's side of the operator billing interface (TVIP's
// personal account): the six routes a device may reach, the signed request
// the service sends for each (identifying headers and X-AUTH-TOKEN), a
// bounded HTTP client, the asynchronous journal of proxied calls, and
// validators of the billing models (Cabinet, Tariff and their parts, as of
// the 2025-03-04 model update) used by `tvsm billing-check`.
//
// All business logic lives on the billing side: this package forwards and
// checks, it never interprets a billing answer beyond its status code.
package billing

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Header names and defaults of the requests the service sends to billing.
const (
	// DefaultHeaderPrefix starts the identifying headers: X-TMS-ACCOUNT-ID
	// and X-TMS-PROVIDER-ID, as TVIP's billing interface documentation names
	// them, so that billing written to it works unchanged. Operators whose
	// billing checks other names set their own prefix.
	DefaultHeaderPrefix = "X-TMS-"
	// HeaderAuthToken carries the signature.
	HeaderAuthToken = "X-AUTH-TOKEN"
	// HeaderAcceptLanguage carries the locale of the client application.
	HeaderAcceptLanguage = "Accept-Language"

	accountIDSuffix  = "ACCOUNT-ID"
	providerIDSuffix = "PROVIDER-ID"
)

// AccountHeader returns the account id header for prefix.
func AccountHeader(prefix string) string { return prefix + accountIDSuffix }

// ProviderHeader returns the provider id header for prefix.
func ProviderHeader(prefix string) string { return prefix + providerIDSuffix }

// Sign returns the X-AUTH-TOKEN of a request: the lowercase hexadecimal MD5
// digest of path, then token, then the decimal Content-Length when it is
// greater than 0. path is the path of the request as sent, in its escaped
// form and without the query.
//
// MD5 is what the operators' billing systems verify; it is a legacy
// signature scheme, not a choice.
func Sign(path, token string, contentLength int64) string {
	h := md5.New()
	_, _ = io.WriteString(h, path)
	_, _ = io.WriteString(h, token)
	if contentLength > 0 {
		_, _ = io.WriteString(h, strconv.FormatInt(contentLength, 10))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ValidateHeaderPrefix accepts a prefix that makes valid header names: one
// or more token characters of RFC 9110 (letters, digits, and !#$%&'*+-.^_`|~).
func ValidateHeaderPrefix(prefix string) error {
	if prefix == "" {
		return errors.New("billing: header prefix must not be empty")
	}
	for i := 0; i < len(prefix); i++ {
		if !isTokenChar(prefix[i]) {
			return fmt.Errorf("billing: header prefix %q: byte %#02x at %d is not allowed in a header name", prefix, prefix[i], i)
		}
	}
	return nil
}

func isTokenChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// headerValue returns v when it can be forwarded as a header value: at
// most 256 bytes of printable ASCII (and spaces and tabs, not at the ends).
// Anything else, from an untrusted client, is dropped: "".
func headerValue(v string) string {
	if len(v) > 256 {
		return ""
	}
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b > 0x7e {
			return ""
		}
	}
	return trimSpaceTab(v)
}

func trimSpaceTab(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

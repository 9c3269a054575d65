package readmodel

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// foldNeedle prepares a quick_search text for containsFold: lower-cased
// rune by rune (unicode.ToLower, the rule containsFold applies to the
// searched text).
func foldNeedle(s string) string {
	return strings.Map(unicode.ToLower, s)
}

// containsFold reports whether s contains needle, ignoring case: each rune
// of s is compared by unicode.ToLower with the runes of needle, which
// foldNeedle has lower-cased. Unlike strings.Contains(strings.ToLower(s),
// needle) it allocates nothing, which matters when a search scans a
// million accounts. When needle starts with an ASCII byte, only positions
// holding that byte in either case (or a non-ASCII rune, which may fold to
// it, as KELVIN SIGN does to k) are tried.
func containsFold(s, needle string) bool {
	if needle == "" {
		return true
	}
	if c := needle[0]; c < utf8.RuneSelf {
		upper := c
		if 'a' <= c && c <= 'z' {
			upper -= 'a' - 'A'
		}
		for i := 0; i < len(s); i++ {
			if b := s[i]; (b == c || b == upper || b >= 0xc0) && matchFoldAt(s[i:], needle) {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(s); {
		if matchFoldAt(s[i:], needle) {
			return true
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
	}
	return false
}

// matchFoldAt reports whether s starts with needle, ignoring case.
func matchFoldAt(s, needle string) bool {
	for len(needle) > 0 {
		if len(s) == 0 {
			return false
		}
		c, n := s[0], needle[0]
		if c < utf8.RuneSelf && n < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != n {
				return false
			}
			s, needle = s[1:], needle[1:]
			continue
		}
		r, rs := utf8.DecodeRuneInString(s)
		nr, ns := utf8.DecodeRuneInString(needle)
		if unicode.ToLower(r) != nr {
			return false
		}
		s, needle = s[rs:], needle[ns:]
	}
	return true
}

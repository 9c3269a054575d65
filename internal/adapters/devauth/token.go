// Package devauth issues and verifies device tokens: stateless, signed with
// HMAC-SHA256 under a key every node shares through the event store (see
// LoadKey). A token names the device, its account and provider, the read
// model's log position when it was issued, and when it expires. Verify
// checks the signature and the expiry; whether the device is still bound to
// the account and its authorisation was not dropped after the token's
// position is for the caller to check against the read model.
package devauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// DefaultTTL is how long a token is valid when Options.TTL is zero.
const DefaultTTL = 30 * 24 * time.Hour

// MinKeyLen is the shortest signing key accepted, in bytes.
const MinKeyLen = 32

// Errors of Verify. Both mean "log in again"; they are told apart only for
// logs.
var (
	ErrInvalidToken = errors.New("devauth: invalid token")
	ErrExpiredToken = errors.New("devauth: token expired")
)

// Claims are what a token says.
type Claims struct {
	Device   int64
	Account  int64
	Provider int64
	// Position is the commit position of the read model when the token was
	// issued: an authorisation dropped after it revokes the token.
	Position uint64
	// Expires is when the token stops being valid (UTC, whole seconds).
	Expires time.Time
}

// Options configure a Signer. Zero fields take the defaults.
type Options struct {
	// TTL is the lifetime of issued tokens (default DefaultTTL).
	TTL time.Duration
	// Clock is the time source (default time.Now).
	Clock func() time.Time
}

// Signer issues and verifies tokens with one key. It is safe for concurrent
// use.
type Signer struct {
	key   []byte
	ttl   time.Duration
	clock func() time.Time
}

// NewSigner returns a signer using key, which must be at least MinKeyLen
// bytes (LoadKey gives such a key).
func NewSigner(key []byte, o Options) (*Signer, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("devauth: key of %d bytes, want at least %d", len(key), MinKeyLen)
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return &Signer{key: append([]byte(nil), key...), ttl: o.TTL, clock: o.Clock}, nil
}

// TTL returns the lifetime of the tokens the signer issues.
func (s *Signer) TTL() time.Duration { return s.ttl }

// Issue returns a token for c, valid for the signer's TTL from now (c's own
// Expires is ignored), and the claims it carries.
func (s *Signer) Issue(c Claims) (string, Claims) {
	c.Expires = s.clock().Add(s.ttl).UTC().Truncate(time.Second)
	payload := encodeClaims(c)
	raw := append(payload, s.mac(payload)...)
	return base64.RawURLEncoding.EncodeToString(raw), c
}

// Verify checks token's signature and expiry and returns its claims. It
// fails with ErrInvalidToken or ErrExpiredToken.
func (s *Signer) Verify(token string) (Claims, error) {
	payload, mac, err := split(token)
	if err != nil {
		return Claims{}, err
	}
	if !hmac.Equal(mac, s.mac(payload)) {
		return Claims{}, fmt.Errorf("%w: bad signature", ErrInvalidToken)
	}
	c, err := parseClaims(payload)
	if err != nil {
		return Claims{}, err
	}
	if !s.clock().Before(c.Expires) {
		return Claims{}, fmt.Errorf("%w at %s", ErrExpiredToken, c.Expires.Format(time.RFC3339))
	}
	return c, nil
}

func (s *Signer) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write(payload)
	return h.Sum(nil)
}

// Token layout, before base64url without padding:
//
//	version byte (1) | device, account, provider, position (uvarint) | expires, unix seconds (varint) | HMAC-SHA256 of all before (32 bytes)
const (
	tokenVersion = 1
	macLen       = sha256.Size
	// maxTokenLen bounds the text decoded: five varints of at most ten
	// bytes, the version and the MAC, in base64.
	maxTokenLen = (1 + 5*binary.MaxVarintLen64 + macLen + 2) * 4 / 3
)

func encodeClaims(c Claims) []byte {
	b := make([]byte, 0, 1+5*binary.MaxVarintLen64+macLen)
	b = append(b, tokenVersion)
	b = binary.AppendUvarint(b, uint64(c.Device))
	b = binary.AppendUvarint(b, uint64(c.Account))
	b = binary.AppendUvarint(b, uint64(c.Provider))
	b = binary.AppendUvarint(b, c.Position)
	return binary.AppendVarint(b, c.Expires.Unix())
}

// split decodes a token into its payload and MAC.
func split(token string) (payload, mac []byte, err error) {
	if len(token) == 0 || len(token) > maxTokenLen {
		return nil, nil, fmt.Errorf("%w: length %d", ErrInvalidToken, len(token))
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: not base64url", ErrInvalidToken)
	}
	if len(raw) <= macLen {
		return nil, nil, fmt.Errorf("%w: too short", ErrInvalidToken)
	}
	n := len(raw) - macLen
	return raw[:n], raw[n:], nil
}

// parseClaims reads a payload written by encodeClaims; it rejects anything
// else (other versions, ids that are not positive, trailing bytes).
func parseClaims(b []byte) (Claims, error) {
	bad := func(what string) (Claims, error) { return Claims{}, fmt.Errorf("%w: %s", ErrInvalidToken, what) }
	if len(b) == 0 || b[0] != tokenVersion {
		return bad("unknown version")
	}
	b = b[1:]
	var ids [3]int64
	for i := range ids {
		v, n := binary.Uvarint(b)
		if n <= 0 || v == 0 || v > 1<<63-1 {
			return bad("malformed id")
		}
		ids[i], b = int64(v), b[n:]
	}
	pos, n := binary.Uvarint(b)
	if n <= 0 {
		return bad("malformed position")
	}
	b = b[n:]
	exp, n := binary.Varint(b)
	if n <= 0 || n != len(b) {
		return bad("malformed expiry")
	}
	return Claims{Device: ids[0], Account: ids[1], Provider: ids[2], Position: pos, Expires: time.Unix(exp, 0).UTC()}, nil
}

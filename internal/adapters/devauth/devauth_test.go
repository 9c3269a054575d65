package devauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/memory"
	"tvsm/internal/testkit/testutil"
)

var t0 = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, MinKeyLen) }

func newSigner(t testing.TB, key []byte, clock *testutil.Clock, ttl time.Duration) *Signer {
	t.Helper()
	s, err := NewSigner(key, Options{TTL: ttl, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIssueVerify(t *testing.T) {
	clock := testutil.NewClock(t0.Add(500 * time.Millisecond))
	s := newSigner(t, testKey(7), clock, 0)
	want := Claims{Device: 42, Account: 7, Provider: 3, Position: 1 << 40}
	token, issued := s.Issue(want)
	want.Expires = t0.Add(DefaultTTL)
	if issued != want {
		t.Fatalf("issued %+v, want %+v", issued, want)
	}
	got, err := s.Verify(token)
	if err != nil || got != want {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, want)
	}
	if strings.ContainsAny(token, "+/=.") {
		t.Errorf("token %q is not plain base64url (it goes in a query string)", token)
	}

	clock.Advance(DefaultTTL - time.Second)
	if _, err := s.Verify(token); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	clock.Advance(time.Second)
	if _, err := s.Verify(token); !errors.Is(err, ErrExpiredToken) {
		t.Fatalf("at expiry: %v, want ErrExpiredToken", err)
	}
}

// Every single-bit change of a token, another key, and junk are refused.
func TestVerifyRefusesForgeries(t *testing.T) {
	clock := testutil.NewClock(t0)
	s := newSigner(t, testKey(1), clock, time.Hour)
	token, _ := s.Issue(Claims{Device: 1, Account: 2, Provider: 3, Position: 4})
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for bit := range 8 {
			forged := bytes.Clone(raw)
			forged[i] ^= 1 << bit
			if _, err := s.Verify(base64.RawURLEncoding.EncodeToString(forged)); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("byte %d bit %d flipped: %v, want ErrInvalidToken", i, bit, err)
			}
		}
	}
	other := newSigner(t, testKey(2), clock, time.Hour)
	if _, err := other.Verify(token); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("token of another key: %v", err)
	}
	for _, junk := range []string{"", "x", "!!!!", token + "A", strings.Repeat("A", 500), token[:len(token)-1]} {
		if _, err := s.Verify(junk); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("Verify(%q) = %v, want ErrInvalidToken", junk, err)
		}
	}
	if _, err := NewSigner([]byte("short"), Options{}); err == nil {
		t.Fatal("a 5-byte key was accepted")
	}
}

// openStore returns an in-memory store: the signer's tests need the
// store's contract, not its disk.
func openStore(t testing.TB) *memory.Store {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	return store
}

func registry() *domain.Registry {
	reg := domain.NewRegistry()
	RegisterEvents(reg)
	return reg
}

// Nodes starting together on one store all end up with the same key, and
// the stream holds exactly one event.
func TestLoadKeySharedByNodes(t *testing.T) {
	store := openStore(t)
	reg := registry()
	ctx := context.Background()
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKey(ctx, store, reg, t0)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for i, k := range keys {
		if len(k) != keyLen || !bytes.Equal(k, keys[0]) {
			t.Fatalf("node %d key %x, node 0 %x", i, k, keys[0])
		}
	}
	again, err := LoadKey(ctx, store, reg, t0.Add(time.Hour))
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Fatalf("restart: %x, %v", again, err)
	}
	recs, err := store.ReadStream(ctx, KeyStream, eventstore.Start, 0)
	if err != nil || len(recs) != 1 || recs[0].Type != KeyCreatedType {
		t.Fatalf("key stream: %d events, %v", len(recs), err)
	}
}

// A node whose append lost to another node's, which it cannot read yet
// (a server that decides appends before they are readable), waits for
// that key instead of failing its start.
func TestLoadKeyWaitsForTheWinningKey(t *testing.T) {
	store := openStore(t)
	reg := registry()
	ctx := context.Background()
	winner, err := LoadKey(ctx, store, reg, t0)
	if err != nil {
		t.Fatal(err)
	}
	lagging := &laggingReads{Store: store, misses: 4}
	got, err := LoadKey(ctx, lagging, reg, t0)
	if err != nil || !bytes.Equal(got, winner) {
		t.Fatalf("LoadKey with lagging reads: %x, %v; want the winner's %x", got, err, winner)
	}
	if lagging.misses != 0 {
		t.Fatalf("%d lagging reads left", lagging.misses)
	}
}

// laggingReads answers the first misses reads of a stream as missing.
type laggingReads struct {
	*memory.Store
	mu     sync.Mutex
	misses int
}

func (l *laggingReads) ReadStream(ctx context.Context, stream string, from eventstore.Revision, max int) ([]eventstore.RecordedEvent, error) {
	l.mu.Lock()
	lag := l.misses > 0
	if lag {
		l.misses--
	}
	l.mu.Unlock()
	if lag {
		return nil, eventstore.ErrStreamNotFound
	}
	return l.Store.ReadStream(ctx, stream, from, max)
}

func TestLoadKeyRefusesUnusableEvent(t *testing.T) {
	store := openStore(t)
	reg := registry()
	if err := appendKey(context.Background(), store, reg, []byte("too short"), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(context.Background(), store, reg, t0); err == nil {
		t.Fatal("a short stored key was accepted")
	}
}

// FuzzVerify feeds arbitrary tokens to Verify: it must never panic, and no
// token but one the signer issued may pass.
func FuzzVerify(f *testing.F) {
	clock := testutil.NewClock(t0)
	s := newSigner(f, testKey(9), clock, time.Hour)
	valid, claims := s.Issue(Claims{Device: 5, Account: 6, Provider: 7, Position: 8})
	for _, seed := range []string{valid, valid[:20], "", "AQ", strings.Repeat("_", 111), valid + "x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.Verify(token)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) && !errors.Is(err, ErrExpiredToken) {
				t.Fatalf("Verify(%q): unexpected error %v", token, err)
			}
			return
		}
		if got != claims {
			t.Fatalf("Verify(%q) accepted claims %+v the signer never issued", token, got)
		}
	})
}

// FuzzParseClaims feeds arbitrary payloads to the claims decoder (which
// Verify reaches only after the MAC): it must never panic, and what it
// accepts must encode back to the same bytes' meaning.
func FuzzParseClaims(f *testing.F) {
	f.Add(encodeClaims(Claims{Device: 1, Account: 2, Provider: 3, Position: 4, Expires: t0}))
	f.Add([]byte{tokenVersion, 0x80, 0x80, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := parseClaims(payload)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if c.Device <= 0 || c.Account <= 0 || c.Provider <= 0 {
			t.Fatalf("accepted non-positive ids: %+v", c)
		}
		again, err := parseClaims(encodeClaims(c))
		if err != nil || again != c {
			t.Fatalf("round trip of %+v: %+v, %v", c, again, err)
		}
	})
}

package readmodel

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/projections"
)

// testSealer seals with AES-GCM under a key per subject (derived, for the
// test) and forgets the subjects it is told were erased.
type testSealer struct {
	mu     sync.Mutex
	erased map[int64]bool
}

func (s *testSealer) aead(subject int64) cipher.AEAD {
	key := sha256.Sum256([]byte("test key " + strconv.FormatInt(subject, 10)))
	block, _ := aes.NewCipher(key[:])
	c, _ := cipher.NewGCM(block)
	return c
}

func (s *testSealer) isErased(subject int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.erased[subject]
}

func (s *testSealer) SealText(subject int64, what string, plain []byte) ([]byte, error) {
	if s.isErased(subject) {
		return nil, nil
	}
	c := s.aead(subject)
	nonce := make([]byte, c.NonceSize())
	return c.Seal(nonce, nonce, plain, []byte(what)), nil
}

func (s *testSealer) OpenText(subject int64, what string, sealed []byte) ([]byte, bool, error) {
	if s.isErased(subject) {
		return nil, true, nil
	}
	c := s.aead(subject)
	plain, err := c.Open(nil, sealed[:c.NonceSize()], sealed[c.NonceSize():], []byte(what))
	return plain, false, err
}

// TestSealedSnapshot: a snapshot written with a sealer holds none of the
// accounts' personal text, devices' or networks', loads back to the same
// answers, shows an erased subscriber's text as "erased", and cannot be
// read without the sealer.
func TestSealedSnapshot(t *testing.T) {
	sealer := &testSealer{erased: map[int64]bool{}}
	m := New(nil)
	m.SealSnapshots(sealer)
	f := newFeed()
	applyTypical(t, m, f, 200, 3)
	desc := "office of user00000005"
	apply := func(stream string, e domain.Event) {
		t.Helper()
		if err := m.Apply(t.Context(), decoded(m, []eventstore.RecordedEvent{f.record(stream, e, base)}), projections.Live); err != nil {
			t.Fatal(err)
		}
	}
	apply(domain.NetworksStream(3), domain.AccountNetworkAdded{Provider: 3, NetworkID: 1, Network: "198.51.100.0/24", Account: 5, Description: &desc})
	before := dump(t, m)

	path := filepath.Join(t.TempDir(), "rm.snap")
	if _, err := m.WriteSnapshot(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range []string{"user00000005", "Ivan Petrovich Sidorov", "contract 00000007/26", "crm-14", "living room", "10.20.30.40", "198.51.100.0/24", desc} {
		if bytes.Contains(raw, []byte(plain)) {
			t.Errorf("the sealed snapshot holds %q in plain text", plain)
		}
	}

	loaded := New(nil)
	loaded.SealSnapshots(sealer)
	if _, err := loaded.LoadSnapshot(path); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, before, dump(t, loaded))

	// Erased since the snapshot: the text reads as "erased" until the log's
	// tail (its AccountErased) removes the account and its network.
	sealer.mu.Lock()
	sealer.erased[5] = true
	sealer.mu.Unlock()
	later := New(nil)
	later.SealSnapshots(sealer)
	if _, err := later.LoadSnapshot(path); err != nil {
		t.Fatal(err)
	}
	if a, ok := later.Account(5); !ok || a.Login != domain.ErasedValue || a.Fullname != domain.ErasedValue {
		t.Errorf("erased account after loading: %+v, %v", a, ok)
	}
	if a, ok := later.Account(6); !ok || a.Login != "user00000006" {
		t.Errorf("another account after loading: %+v, %v", a, ok)
	}
	if nets, _, _ := later.AccountNetworks(3); len(nets.Networks) != 0 {
		t.Errorf("an erased subscriber's network came back: %+v", nets)
	}
	if nets, _, _ := loaded.AccountNetworks(3); len(nets.Networks) != 1 || nets.Networks[0].Network.String() != "198.51.100.0/24" {
		t.Errorf("the network after a sealed round trip: %+v", nets)
	}

	// And without the sealer the snapshot is refused (the node replays).
	if _, err := New(nil).LoadSnapshot(path); !errors.Is(err, projections.ErrCorruptSnapshot) {
		t.Errorf("sealed snapshot without a sealer: %v", err)
	}
}

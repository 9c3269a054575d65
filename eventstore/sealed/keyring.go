package sealed

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Keyring hands out the ciphers of subjects' keys: loaded from the key
// store, unwrapped with the master key, created on a subject's first
// personal value and kept in a bounded cache. Erase destroys a key and
// forgets it; Forget drops a key another node erased.
type Keyring struct {
	store   KeyStore
	masters map[[4]byte]*MasterKey
	current *MasterKey

	mu sync.RWMutex
	// cache holds the ciphers of up to limit subjects, keys those of up to
	// keyLimit. A cipher takes about 800 bytes and a few microseconds to
	// make, an unwrapped key about 60 bytes with its map entry; a load from
	// a key store shared by nodes (EventStoreDB) is a read over the
	// network. So a cipher evicted is made again from its key, and the key
	// store is read only for subjects beyond keyLimit: with more subjects
	// than the cipher cache holds, most values opened would otherwise read
	// a key stream.
	cache    map[int64]cipher.AEAD
	limit    int
	keys     map[int64][]byte
	keyLimit int
	erased   map[int64]bool // known erased: never cached again

	// erasures counts Forget calls: caches of opened values keep nothing
	// across one. anyErased is set by the first.
	erasures  atomic.Uint64
	anyErased atomic.Bool

	// createMu makes one caller create a batch of keys while the callers
	// whose keys it makes wait for it, rather than each making its own.
	createMu sync.Mutex
}

// NewKeyring returns the keyring of store. Keys are wrapped with master;
// previous (optional) are master keys being rotated away from, still
// accepted for keys not yet rewrapped.
func NewKeyring(store KeyStore, master *MasterKey, previous ...*MasterKey) *Keyring {
	k := &Keyring{store: store, current: master, masters: map[[4]byte]*MasterKey{master.fingerprint: master},
		cache: make(map[int64]cipher.AEAD), limit: 1 << 16, keys: make(map[int64][]byte), keyLimit: 1 << 21,
		erased: make(map[int64]bool)}
	for _, p := range previous {
		k.masters[p.fingerprint] = p
	}
	return k
}

// Master is the master key new keys are wrapped with.
func (k *Keyring) Master() *MasterKey { return k.current }

// Store is the key store the keyring reads.
func (k *Keyring) Store() KeyStore { return k.store }

// cipher returns subject's cipher, creating its key when create is set
// and it has none. ErrNoKey, ErrErased as the store says.
func (k *Keyring) cipher(ctx context.Context, subject int64, create bool) (cipher.AEAD, error) {
	k.mu.RLock()
	c, ok := k.cache[subject]
	raw := k.keys[subject]
	k.mu.RUnlock()
	if ok {
		return c, nil
	}
	if raw == nil {
		w, err := k.store.Load(ctx, subject)
		if errors.Is(err, ErrNoKey) && create {
			w, err = k.create(ctx, subject)
		}
		if err != nil {
			return nil, err
		}
		m, ok := k.masters[w.Master]
		if !ok {
			return nil, fmt.Errorf("sealed: the key of subject %d is wrapped by a master key not configured (fingerprint %x)", subject, w.Master)
		}
		if raw, err = m.unwrap(subject, w.Data); err != nil {
			return nil, err
		}
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	if c, err = cipher.NewGCM(block); err != nil {
		return nil, err
	}
	k.mu.Lock()
	if k.erased[subject] { // erased while the key was being read
		k.mu.Unlock()
		return nil, ErrErased
	}
	putBounded(k.cache, k.limit, subject, c)
	putBounded(k.keys, k.keyLimit, subject, raw)
	k.mu.Unlock()
	return c, nil
}

// putBounded sets m[key], first dropping an arbitrary half of m when it
// holds limit entries: cheap, and rare.
func putBounded[V any](m map[int64]V, limit int, key int64, v V) {
	if _, ok := m[key]; !ok && len(m) >= limit {
		for s := range m {
			if len(m) < limit/2 {
				break
			}
			delete(m, s)
		}
	}
	m[key] = v
}

// batchCreator is a KeyStore that creates many keys in one durable
// write (FileKeys).
type batchCreator interface {
	CreateMany(ctx context.Context, subjects []int64, keys []WrappedKey) error
}

// createAhead is how many keys a batch-creating store gets at once: the
// subject's and those of the ids after it that have none. Account ids are
// handed out in increasing blocks, so the next creates find their keys
// made, and share one sync instead of paying one each. A key made for an
// id that never gets an account is 80 bytes of random data.
const createAhead = 2048

func (k *Keyring) create(ctx context.Context, subject int64) (WrappedKey, error) {
	bc, ok := k.store.(batchCreator)
	if !ok || subject <= nameSubject {
		w, err := k.newKey(subject)
		if err != nil {
			return WrappedKey{}, err
		}
		return k.store.Create(ctx, subject, w)
	}
	k.createMu.Lock()
	defer k.createMu.Unlock()
	if w, err := k.store.Load(ctx, subject); !errors.Is(err, ErrNoKey) {
		return w, err // made by the batch this caller waited for
	}
	subjects := make([]int64, 0, createAhead)
	keys := make([]WrappedKey, 0, createAhead)
	for s := subject; s < subject+createAhead; s++ {
		if _, err := k.store.Load(ctx, s); !errors.Is(err, ErrNoKey) {
			if s == subject {
				return k.store.Load(ctx, s) // made meanwhile, or erased
			}
			continue
		}
		w, err := k.newKey(s)
		if err != nil {
			return WrappedKey{}, err
		}
		subjects, keys = append(subjects, s), append(keys, w)
	}
	if err := bc.CreateMany(ctx, subjects, keys); err != nil {
		return WrappedKey{}, err
	}
	return k.store.Load(ctx, subject)
}

// newKey returns a new random key for subject, wrapped.
func (k *Keyring) newKey(subject int64) (WrappedKey, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return WrappedKey{}, err
	}
	data, err := k.current.wrap(subject, raw)
	if err != nil {
		return WrappedKey{}, err
	}
	return WrappedKey{Master: k.current.fingerprint, Data: data}, nil
}

// nameSubject holds the node's name key (NameKey), never a data subject's.
const nameSubject = 0

// NameKey returns the secret that keys the hashes of personal names in
// stream names (a provider's logins): created once, kept in the key store
// under the master key like a subject's key, and never erased, so that
// names hash alike on every node and across master key rotations.
func (k *Keyring) NameKey(ctx context.Context) ([]byte, error) {
	w, err := k.store.Load(ctx, nameSubject)
	if errors.Is(err, ErrNoKey) {
		w, err = k.create(ctx, nameSubject)
	}
	if err != nil {
		return nil, fmt.Errorf("sealed: name key: %w", err)
	}
	m, ok := k.masters[w.Master]
	if !ok {
		return nil, fmt.Errorf("sealed: the name key is wrapped by a master key not configured (fingerprint %x)", w.Master)
	}
	return m.unwrap(nameSubject, w.Data)
}

// Erase destroys subject's key for good.
func (k *Keyring) Erase(ctx context.Context, subject int64) error {
	if subject <= nameSubject {
		return fmt.Errorf("sealed: %d is no data subject", subject)
	}
	k.Forget(subject)
	return k.store.Erase(ctx, subject)
}

// Forget drops subject's key from the cache for good: the subject was
// erased, here or by another node.
func (k *Keyring) Forget(subject int64) {
	k.mu.Lock()
	delete(k.cache, subject)
	delete(k.keys, subject)
	k.erased[subject] = true
	k.mu.Unlock()
	k.anyErased.Store(true)
	k.erasures.Add(1)
}

// isErased reports whether subject is known to be erased: erased here, or
// its erasure seen in the log, or named by Forget at start.
func (k *Keyring) isErased(subject int64) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.erased[subject]
}

// Erased reports whether subject's key was erased.
func (k *Keyring) Erased(ctx context.Context, subject int64) (bool, error) {
	_, err := k.store.Load(ctx, subject)
	switch {
	case errors.Is(err, ErrErased):
		return true, nil
	case err == nil, errors.Is(err, ErrNoKey):
		return false, nil
	}
	return false, err
}

// textTimeout bounds the key store reads of SealText and OpenText, which
// run without a caller's context (snapshots).
const textTimeout = 30 * time.Second

// SealText encrypts plain under subject's key, bound to what: the sealed
// text of a snapshot record. It returns nil when the subject was erased.
func (k *Keyring) SealText(subject int64, what string, plain []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), textTimeout)
	defer cancel()
	c, err := k.cipher(ctx, subject, true)
	if errors.Is(err, ErrErased) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]byte, c.NonceSize(), c.NonceSize()+len(plain)+c.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, err
	}
	return c.Seal(out, out, plain, textAAD(subject, what)), nil
}

// OpenText decrypts what SealText wrote for subject and what; erased is
// set when the subject's key was erased since.
func (k *Keyring) OpenText(subject int64, what string, sealed []byte) (plain []byte, erased bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), textTimeout)
	defer cancel()
	c, err := k.cipher(ctx, subject, false)
	switch {
	case errors.Is(err, ErrErased), errors.Is(err, ErrNoKey):
		return nil, true, nil
	case err != nil:
		return nil, false, err
	case len(sealed) < c.NonceSize():
		return nil, false, errors.New("sealed: text too short")
	}
	plain, err = c.Open(nil, sealed[:c.NonceSize()], sealed[c.NonceSize():], textAAD(subject, what))
	if err != nil {
		return nil, false, fmt.Errorf("sealed: %s of subject %d does not open: %w", what, subject, err)
	}
	return plain, false, nil
}

func textAAD(subject int64, what string) []byte {
	b := append([]byte("tvsm sealed text v1\x00"), what...)
	return strconv.AppendInt(append(b, 0), subject, 10)
}

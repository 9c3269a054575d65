package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tvsm/internal/platform/fsutil"
)

// MasterKey wraps the subjects' keys: a key store copied without it reads
// as random bytes. It is 32 random bytes, kept outside the data directory
// in production, given as a file holding them in standard base64.
type MasterKey struct {
	aead        cipher.AEAD
	fingerprint [4]byte // which master key wrapped a key, for rotation
}

// NewMasterKey returns a master key of the 32 bytes raw.
func NewMasterKey(raw []byte) (*MasterKey, error) {
	if len(raw) != 32 {
		return nil, fmt.Errorf("sealed: a master key is 32 bytes, got %d", len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte("tvsm master key fingerprint\x00"), raw...))
	m := &MasterKey{aead: aead}
	copy(m.fingerprint[:], sum[:])
	return m, nil
}

// ParseMasterKey reads a master key written by EncodeMasterKey: 32 bytes
// in standard base64, surrounding space ignored.
func ParseMasterKey(text []byte) (*MasterKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(text)))
	if err != nil {
		return nil, errors.New("sealed: a master key is 32 bytes in standard base64")
	}
	return NewMasterKey(raw)
}

// EncodeMasterKey returns the file form of raw.
func EncodeMasterKey(raw []byte) []byte {
	return []byte(base64.StdEncoding.EncodeToString(raw) + "\n")
}

// LoadMasterKey reads the master key file at path.
func LoadMasterKey(path string) (*MasterKey, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sealed: master key: %w", err)
	}
	m, err := ParseMasterKey(text)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return m, nil
}

// GenerateMasterKeyFile writes a new random master key to path, which
// must not exist, readable by its owner only, and syncs it and its
// directory: a key lost after the first sealed write would lose every
// subject's data.
func GenerateMasterKeyFile(path string) (*MasterKey, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sealed: master key: %w", err)
	}
	_, err = f.Write(EncodeMasterKey(raw))
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = fsutil.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("sealed: master key: %w", err)
	}
	return NewMasterKey(raw)
}

// Fingerprint identifies the master key without revealing it.
func (m *MasterKey) Fingerprint() [4]byte { return m.fingerprint }

// wrappedLen is the length of a wrapped subject key: nonce, key, tag.
const wrappedLen = 12 + 32 + 16

// wrap encrypts a subject's key, bound to the subject.
func (m *MasterKey) wrap(subject int64, key []byte) ([]byte, error) {
	out := make([]byte, 12, wrappedLen)
	if _, err := rand.Read(out); err != nil {
		return nil, err
	}
	return m.aead.Seal(out, out[:12], key, wrapAAD(subject)), nil
}

// unwrap decrypts a key wrap made for subject.
func (m *MasterKey) unwrap(subject int64, wrapped []byte) ([]byte, error) {
	if len(wrapped) != wrappedLen {
		return nil, errors.New("sealed: a wrapped key has the wrong length")
	}
	key, err := m.aead.Open(nil, wrapped[:12], wrapped[12:], wrapAAD(subject))
	if err != nil {
		return nil, fmt.Errorf("sealed: the key of subject %d does not open with this master key", subject)
	}
	return key, nil
}

func wrapAAD(subject int64) []byte {
	return binary.BigEndian.AppendUint64([]byte("tvsm subject key\x00"), uint64(subject))
}

// rewrap returns k, a key of subject wrapped by from, wrapped by to.
func rewrap(from, to *MasterKey, subject int64, k WrappedKey) (WrappedKey, error) {
	raw, err := from.unwrap(subject, k.Data)
	if err != nil {
		return WrappedKey{}, err
	}
	data, err := to.wrap(subject, raw)
	if err != nil {
		return WrappedKey{}, err
	}
	return WrappedKey{Master: to.fingerprint, Data: data}, nil
}

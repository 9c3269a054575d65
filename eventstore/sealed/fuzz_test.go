package sealed

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tvsm/domain"
)

// FuzzMembers checks the member scanner against encoding/json: on every
// valid JSON object it finds exactly the members json.Unmarshal sees, and
// on any input it never panics.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"x\"}","b":[1,{"c":"]"}],"d":null}`, ` { "a" : true } `, `{"a":`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := members(data, nil)
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil || !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
			return
		}
		if err != nil {
			t.Fatalf("valid object %q: %v", data, err)
		}
		for _, m := range ms {
			var key string
			if err := json.Unmarshal(data[m.keyStart-1:m.keyEnd+1], &key); err != nil {
				t.Fatalf("key %q: %v", data[m.keyStart-1:m.keyEnd+1], err)
			}
			if _, ok := obj[key]; !ok {
				t.Fatalf("member %q not in %q", key, data)
			}
			if !json.Valid(data[m.valStart:m.end]) {
				t.Fatalf("value %q of %q is not a JSON value", data[m.valStart:m.end], key)
			}
		}
	})
}

// FuzzOpen feeds stored data of any form to open: it returns data or an
// error, never panics, and what it returns for sealed data holds no
// "$sealed" member.
func FuzzOpen(f *testing.F) {
	ring := NewKeyring(newMemKeys(), mustMaster(f))
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	typ, data, _ := reg.Encode(domain.AccountCreated{AccountID: 7, Provider: 1, Login: "a", Fullname: "b"})
	sealedData, err := ring.seal(context.Background(), "account-7", typ, data)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealedData, uint8(0))
	f.Add(data, uint8(0))
	f.Add([]byte(`{"account_id":7,"login":"sealed","$sealed":"v1:AAAA"}`), uint8(0))
	f.Add([]byte(`{"$sealed":"v1:","account_id":1}`), uint8(1))
	types := []string{domain.AccountCreatedType, domain.DeviceConnectedType, domain.AccountNetworkChangedType, domain.ProviderCreatedType}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		typ := types[int(which)%len(types)]
		out, _, err := ring.open(context.Background(), "account-7", typ, data)
		if err == nil && !same(out, data) {
			if ms, err := members(out, nil); err != nil {
				t.Fatalf("opened data is no object: %q", out)
			} else {
				for _, m := range ms {
					if string(out[m.keyStart:m.keyEnd]) == sealedKey {
						t.Fatalf("opened data still sealed: %q", out)
					}
				}
			}
		}
	})
}

func mustMaster(tb testing.TB) *MasterKey {
	m, err := NewMasterKey(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// FuzzParseMasterKey: a master key file or TVSM_MASTER_KEY of any content
// gives a key or an error, never a panic, and a key only from 32 bytes.
func FuzzParseMasterKey(f *testing.F) {
	f.Add([]byte(" dHZzbSB0ZXN0IG1hc3RlciBrZXksIDMyIGJ5dGVzISE=\n"))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, text []byte) {
		m, err := ParseMasterKey(text)
		if err == nil && m == nil {
			t.Fatal("no key and no error")
		}
	})
}

// FuzzOpenFileKeys: a key file damaged in any way opens (a torn tail is
// dropped, a damaged record counts as an erasure or is passed over as a
// torn create) or fails, never panics, every key it hands out has the
// wrapped length, and a subject reads as erased only where the file holds
// an erasure of it: a whole one, or a damaged record with its mark and
// checksum written.
func FuzzOpenFileKeys(f *testing.F) {
	good := append(record(stateKey, 7, WrappedKey{Data: bytes.Repeat([]byte{1}, wrappedLen)}), record(stateErase, 8, WrappedKey{})...)
	f.Add(good)
	f.Add(good[:100])
	f.Add(append(append(slices.Clone(good[:recordLen]), make([]byte, recordLen)...), good...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileKeysName), data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := OpenFileKeys(dir)
		if err != nil {
			return
		}
		defer s.Close()
		for subject := range s.index {
			k, err := s.Load(context.Background(), subject)
			if err == nil && len(k.Data) != wrappedLen {
				t.Fatalf("subject %d: a key of %d bytes", subject, len(k.Data))
			}
			if errors.Is(err, ErrErased) && !holdsErasure(data, subject) {
				t.Fatalf("subject %d reads as erased; the file holds no erasure of it", subject)
			}
		}
	})
}

// holdsErasure reports whether data holds a record that erases subject: a
// whole record not of a key, or a damaged one with its mark and checksum.
func holdsErasure(data []byte, subject int64) bool {
	for off := 0; off+recordLen <= len(data); off += recordLen {
		rec := data[off : off+recordLen]
		if int64(binary.BigEndian.Uint64(rec[1:9])) != subject {
			continue
		}
		whole := crc32.Checksum(rec[:76], crcTable) == binary.BigEndian.Uint32(rec[76:])
		if whole && rec[0] != stateKey || !whole && rec[0] != 0 && binary.BigEndian.Uint32(rec[76:]) != 0 {
			return true
		}
	}
	return false
}

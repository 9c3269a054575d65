package sealed_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/eventstore/memory"
	"tvsm/eventstore/sealed"
)

func ptr[T any](v T) *T { return &v }

func registry() *domain.Registry {
	r := domain.NewRegistry()
	domain.RegisterEvents(r)
	return r
}

func testMaster(t testing.TB, b byte) *sealed.MasterKey {
	t.Helper()
	m, err := sealed.NewMasterKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fileKeys(t testing.TB, dir string) *sealed.FileKeys {
	t.Helper()
	k, err := sealed.OpenFileKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// canary values: each must never reach the backend in plain text.
const (
	canaryLogin   = "canary-login-5f1d"
	canaryName    = "Canary Fullname 5f1d"
	canaryAddress = "5f1d Canary Street"
	canaryUID     = "canary-uid-5f1d"
	canaryIP      = "198.51.100.77"
)

var canaries = []string{canaryLogin, canaryName, canaryAddress, canaryUID, canaryIP}

// personalEvents are one event of every type that carries personal data,
// with the stream each belongs in.
func personalEvents() []struct {
	stream string
	event  domain.Event
} {
	return []struct {
		stream string
		event  domain.Event
	}{
		{"account-7", domain.AccountCreated{AccountID: 7, Provider: 1, Login: canaryLogin, PinMD5: "0123456789abcdef0123456789abcdef",
			Fullname: canaryName, Enabled: true, MainAddress: ptr(canaryAddress), ContractInfo: ptr("c-5f1d"), RegionTag: ptr[int64](2)}},
		{"account-7", domain.AccountUpdated{AccountID: 7, Fullname: domain.Some(canaryName + " II"), ContractInfo: domain.Null[string](), Enabled: domain.Some(false)}},
		{"account-7", domain.DeviceBound{AccountID: 7, DeviceID: 9, UniqueID: canaryUID, Class: domain.DeviceSTB, MAC: ptr("00:1a:79:5f:1d:00"), Comment: ptr("x")}},
		{"account-7", domain.DeviceChanged{AccountID: 7, DeviceID: 9, Comment: domain.Some(canaryAddress), MAC: domain.Null[string]()}},
		{"account-7", domain.DeviceUnbound{AccountID: 7, DeviceID: 9, UniqueID: canaryUID}},
		{"device-9", domain.DeviceConnected{DeviceID: 9, Account: 7, Provider: 1, Node: "n1", Address: canaryIP}},
		{"device-9", domain.DeviceLoggedIn{DeviceID: 9, Account: 7, Provider: 1, Address: canaryIP, Firmware: "1.0"}},
		{"networks-1", domain.AccountNetworkAdded{Provider: 1, NetworkID: 3, Network: canaryIP + "/32", Account: 7, Description: ptr(canaryName)}},
		{"networks-1", domain.AccountNetworkChanged{Provider: 1, NetworkID: 3, Description: domain.Some(canaryAddress), Owner: 7}},
	}
}

func appendAll(t *testing.T, store eventstore.Store, reg *domain.Registry) []eventstore.EventData {
	t.Helper()
	var all []eventstore.EventData
	for i, pe := range personalEvents() {
		typ, data, err := reg.Encode(pe.event)
		if err != nil {
			t.Fatal(err)
		}
		e := eventstore.EventData{ID: eventstore.EventID{byte(i + 1)}, Type: typ, Data: data, Metadata: []byte(`{}`)}
		if _, err := store.Append(context.Background(), pe.stream, eventstore.Any, e); err != nil {
			t.Fatalf("append %s: %v", typ, err)
		}
		all = append(all, e)
	}
	return all
}

func readAll(t *testing.T, store eventstore.Store) []eventstore.RecordedEvent {
	t.Helper()
	recs, err := readAllErr(store)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// hits counts the canaries found in b, raw or base64-encoded.
func hits(b []byte) (n int, found []string) {
	for _, c := range canaries {
		for _, form := range []string{c, base64.StdEncoding.EncodeToString([]byte(c)), base64.StdEncoding.EncodeToString([]byte(`"` + c))} {
			if bytes.Contains(b, []byte(form)) {
				n++
				found = append(found, form)
			}
		}
	}
	return n, found
}

func TestSealedStoreRoundTripsAndHoldsNoPlainText(t *testing.T) {
	reg := registry()
	backend := memory.New()
	keys := sealed.NewKeyring(fileKeys(t, t.TempDir()), testMaster(t, 1))
	store := sealed.Wrap(backend, keys)
	written := appendAll(t, store, reg)

	// Given every personal event appended through the sealed store, the
	// backend holds none of the canaries...
	raw := readAll(t, backend)
	for _, rec := range raw {
		if n, found := hits(rec.Data); n > 0 {
			t.Errorf("%s in the backend holds %v: %s", rec.Type, found, rec.Data)
		}
	}
	// ...and reads through the store give back exactly what was written,
	// so the registry decodes the events it encoded.
	opened := readAll(t, store)
	if len(opened) != len(written) {
		t.Fatalf("read %d events, wrote %d", len(opened), len(written))
	}
	for i, rec := range opened {
		if !bytes.Equal(rec.Data, written[i].Data) {
			t.Errorf("%s: read\n%s\nwrote\n%s", rec.Type, rec.Data, written[i].Data)
		}
		if !bytes.Contains(raw[i].Data, []byte(`"$sealed":"v1:`)) {
			t.Errorf("%s was not sealed: %s", rec.Type, raw[i].Data)
		}
	}
	recs, err := store.ReadStream(context.Background(), "account-7", eventstore.Start, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(recs[0].Data, written[0].Data) {
		t.Errorf("ReadStream: %s", recs[0].Data)
	}
	// The shape stays readable: which fields an update touched, and nulls.
	if !bytes.Contains(raw[1].Data, []byte(`"fullname":"sealed","contract_info":null`)) {
		t.Errorf("update's shape lost: %s", raw[1].Data)
	}
}

func TestErasedSubjectReadsAsErased(t *testing.T) {
	reg := registry()
	backend := memory.New()
	keys := sealed.NewKeyring(fileKeys(t, t.TempDir()), testMaster(t, 1))
	store := sealed.Wrap(backend, keys)
	appendAll(t, store, reg)
	// Read once: the store keeps what it opened last...
	for _, rec := range readAll(t, store) {
		if bytes.Contains(rec.Data, []byte(`"sealed"`)) {
			t.Fatalf("not opened: %s", rec.Data)
		}
	}

	// When subject 7 is erased (...and serves none of it afterwards)...
	if err := keys.Erase(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
	// ...every personal value of its events reads as "erased", and the
	// events still decode, with every other field intact.
	for _, rec := range readAll(t, store) {
		if n, found := hits(rec.Data); n > 0 {
			t.Errorf("%s still shows %v", rec.Type, found)
		}
		e, err := reg.Decode(rec.Type, rec.Data)
		if err != nil {
			t.Fatalf("%s: %v: %s", rec.Type, err, rec.Data)
		}
		switch e := e.(type) {
		case domain.AccountCreated:
			if e.Login != domain.ErasedValue || e.Fullname != domain.ErasedValue || *e.MainAddress != domain.ErasedValue ||
				e.AccountID != 7 || *e.RegionTag != 2 || !e.Enabled || e.AccountDesc != nil {
				t.Errorf("erased create: %+v", e)
			}
		case domain.DeviceBound:
			if e.UniqueID != domain.ErasedValue || e.Class != domain.DeviceSTB || e.DeviceID != 9 {
				t.Errorf("erased bind: %+v", e)
			}
		case domain.DeviceConnected:
			if e.Address != domain.ErasedValue || e.Node != "n1" {
				t.Errorf("erased connection: %+v", e)
			}
		}
	}
	// No new personal data of the subject can be written.
	typ, data, _ := reg.Encode(domain.AccountUpdated{AccountID: 7, Fullname: domain.Some("back")})
	_, err := store.Append(context.Background(), "account-7", eventstore.Any, eventstore.EventData{ID: eventstore.EventID{99}, Type: typ, Data: data})
	if !errors.Is(err, sealed.ErrErased) {
		t.Errorf("append for an erased subject: %v, want ErrErased", err)
	}
}

func TestSealedValuesAreBoundToTheirEvent(t *testing.T) {
	reg := registry()
	backend := memory.New()
	keys := sealed.NewKeyring(fileKeys(t, t.TempDir()), testMaster(t, 1))
	store := sealed.Wrap(backend, keys)
	appendAll(t, store, reg)
	raw := readAll(t, backend)
	// The create's sealed data copied into another account's stream (or
	// passed off as another type) does not open.
	for _, moved := range []eventstore.EventData{
		{ID: eventstore.EventID{50}, Type: raw[0].Type, Data: raw[0].Data},
		{ID: eventstore.EventID{51}, Type: domain.AccountUpdatedType, Data: raw[0].Data},
	} {
		stream := "account-8"
		if moved.Type != raw[0].Type {
			stream = "account-7"
		}
		if _, err := backend.Append(context.Background(), stream, eventstore.Any, moved); err != nil {
			t.Fatal(err)
		}
		_, err := store.ReadStream(context.Background(), stream, eventstore.Start, 0)
		var oe *sealed.OpenError
		if stream == "account-8" && !errors.As(err, &oe) {
			t.Errorf("moved to %s: %v, want an OpenError", stream, err)
		}
	}
	if _, err := readAllErr(store); err == nil {
		t.Error("reading the log with a forged event succeeded")
	}
}

func readAllErr(store eventstore.Store) ([]eventstore.RecordedEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := store.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	var out []eventstore.RecordedEvent
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, b.Events...)
		if b.CaughtUp {
			return out, nil
		}
	}
}

func TestAnotherMasterKeyReadsNothing(t *testing.T) {
	reg := registry()
	backend := memory.New()
	dir := t.TempDir()
	keys := sealed.NewKeyring(fileKeys(t, dir), testMaster(t, 1))
	appendAll(t, sealed.Wrap(backend, keys), reg)

	// A copy of the data (log and key file) opened with another master key
	// fails loudly rather than showing anything, or calling it erased.
	other := sealed.NewKeyring(fileKeys(t, dir), testMaster(t, 2))
	_, err := readAllErr(sealed.Wrap(backend, other))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("master key")) {
		t.Errorf("read with another master key: %v", err)
	}
}

func TestFileKeysEraseDestroysTheKeyBytes(t *testing.T) {
	dir := t.TempDir()
	master := testMaster(t, 1)
	keys := fileKeys(t, dir)
	ring := sealed.NewKeyring(keys, master)
	store := sealed.Wrap(memory.New(), ring)
	appendAll(t, store, registry())
	k7, err := keys.Load(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, sealed.FileKeysName)
	before, _ := os.ReadFile(file)
	if !bytes.Contains(before, k7.Data) {
		t.Fatal("the wrapped key is not in the key file")
	}
	if err := ring.Erase(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(file)
	if bytes.Contains(after, k7.Data) || bytes.Contains(after, k7.Data[12:28]) {
		t.Error("the wrapped key's bytes are still in the key file after erasure")
	}
	if len(after) != len(before) {
		t.Errorf("erasing an existing key changed the file's size: %d → %d", len(before), len(after))
	}
	// Reopened, the store still knows the subject was erased, and a
	// subject never seen can be erased ahead (a legacy account).
	_ = keys.Close()
	again := fileKeys(t, dir)
	if _, err := again.Load(context.Background(), 7); !errors.Is(err, sealed.ErrErased) {
		t.Errorf("after reopen: %v, want ErrErased", err)
	}
	if err := again.Erase(context.Background(), 8); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Create(context.Background(), 8, k7); !errors.Is(err, sealed.ErrErased) {
		t.Errorf("create for an erased subject: %v, want ErrErased", err)
	}
	if err := again.Erase(context.Background(), 8); err != nil {
		t.Errorf("erasing twice: %v", err)
	}
}

func TestFileKeysDropsATornCreate(t *testing.T) {
	dir := t.TempDir()
	keys := fileKeys(t, dir)
	ring := sealed.NewKeyring(keys, testMaster(t, 1))
	appendAll(t, sealed.Wrap(memory.New(), ring), registry())
	want, _ := keys.Load(context.Background(), 7)
	_ = keys.Close()
	file := filepath.Join(dir, sealed.FileKeysName)
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("K\x00\x00\x00\x00\x00\x01\x00\x00partial")); err != nil { // subject 65536
		t.Fatal(err)
	}
	_ = f.Close()
	again := fileKeys(t, dir)
	got, err := again.Load(context.Background(), 7)
	if err != nil || !bytes.Equal(got.Data, want.Data) {
		t.Errorf("key of 7 after a torn tail: %v", err)
	}
	if _, err := again.Load(context.Background(), 65536); !errors.Is(err, sealed.ErrNoKey) {
		t.Errorf("the torn create: %v, want ErrNoKey", err)
	}
}

// A power loss while creates were unsynced can leave their records as
// zeros (the file grew, its data was never written) or torn where a
// sector or page ends (16-byte multiples: the mark or the checksum left
// zeros), with whole records after them. Such records are passed over: the
// name key stays readable (the node could not start without it), a key
// whose create was torn can be created again, and the keys the damage does
// not touch read as before. An erasure torn the same way still counts.
func TestFileKeysPassOverCreatesAPowerLossDamaged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	keys := fileKeys(t, dir)
	ring := sealed.NewKeyring(keys, testMaster(t, 1))
	name, err := ring.NameKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, sealed.Wrap(memory.New(), ring), registry())
	want, err := keys.Load(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Erase(ctx, 4242); err != nil { // a whole record to copy the layout of
		t.Fatal(err)
	}
	_ = keys.Close()
	// Given, after the synced records: a record of zeros; the name key's
	// record again, its second half zeros; one of subject 4243 with its
	// first 16 bytes zeros; one of 4244 with its last 16 bytes zeros; then
	// a whole record.
	file := filepath.Join(dir, sealed.FileKeysName)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const recordLen = 80
	last := slices.Clone(data[len(data)-recordLen:])
	torn := slices.Clone(data[:recordLen]) // the name key's record, the first
	if !bytes.Equal(torn[1:9], make([]byte, 8)) {
		t.Fatalf("the first record is not the name key's: %x", torn[:9])
	}
	clear(torn[48:])
	headless := slices.Clone(last)
	binary.BigEndian.PutUint64(headless[1:9], 4243)
	clear(headless[:16])
	tailless := slices.Clone(data[bytes.Index(data, want.Data)-13:][:recordLen]) // 7's record
	binary.BigEndian.PutUint64(tailless[1:9], 4244)
	clear(tailless[64:])
	damaged := slices.Concat(data, make([]byte, recordLen), torn, headless, tailless, last)
	if err := os.WriteFile(file, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	// When the key file is opened again.
	again := fileKeys(t, dir)
	ring = sealed.NewKeyring(again, testMaster(t, 1))
	// Then the name key and subject 7's key read as before, and 4243 and
	// 4244 have no key and can get one.
	got, err := ring.NameKey(ctx)
	if err != nil || !bytes.Equal(got, name) {
		t.Errorf("the name key after the loss: %v", err)
	}
	if k, err := again.Load(ctx, 7); err != nil || !bytes.Equal(k.Data, want.Data) {
		t.Errorf("key of 7 after the loss: %v", err)
	}
	for _, subject := range []int64{4243, 4244} {
		if _, err := again.Load(ctx, subject); !errors.Is(err, sealed.ErrNoKey) {
			t.Errorf("the torn create of %d: %v, want ErrNoKey", subject, err)
		}
		if _, err := again.Create(ctx, subject, want); err != nil {
			t.Errorf("create %d again: %v", subject, err)
		}
	}
	// And an erasure of 7 torn over its record, either half old, counts.
	_ = again.Close()
	data, _ = os.ReadFile(file)
	at := bytes.Index(data, want.Data) - 13 // the record of 7: mark, subject, fingerprint, key
	erasure := slices.Clone(data[at : at+recordLen])
	erasure[0] = 'E'
	clear(erasure[9:76])
	binary.BigEndian.PutUint32(erasure[76:], crc32.Checksum(erasure[:76], crc32.MakeTable(crc32.Castagnoli)))
	for _, half := range []int{0, 1} {
		tornErase := slices.Clone(data)
		if half == 0 {
			copy(tornErase[at+48:at+recordLen], erasure[48:]) // new tail
		} else {
			copy(tornErase[at:at+48], erasure[:48]) // new head
		}
		if err := os.WriteFile(file, tornErase, 0o600); err != nil {
			t.Fatal(err)
		}
		k := fileKeys(t, dir)
		if _, err := k.Load(ctx, 7); !errors.Is(err, sealed.ErrErased) {
			t.Errorf("key of 7 after an erasure torn (new half %d): %v, want ErrErased", half, err)
		}
		_ = k.Close()
	}
}

func TestConcurrentCreatesShareOneKeyEach(t *testing.T) {
	keys := fileKeys(t, t.TempDir())
	ring := sealed.NewKeyring(keys, testMaster(t, 1))
	store := sealed.Wrap(memory.New(), ring)
	reg := registry()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 16 {
		wg.Go(func() {
			for i := range 4 {
				id := int64(1 + (w*4+i)%8) // 8 subjects, each written by several
				typ, data, _ := reg.Encode(domain.DeviceConnected{DeviceID: 1, Account: id, Provider: 1, Address: canaryIP})
				_, err := store.Append(context.Background(), "device-1", eventstore.Any,
					eventstore.EventData{ID: eventstore.EventID{byte(w), byte(i), 1}, Type: typ, Data: data})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, rec := range readAll(t, store) {
		if !bytes.Contains(rec.Data, []byte(canaryIP)) {
			t.Errorf("did not open: %s", rec.Data)
		}
	}
}

func TestRewrapMovesKeysToANewMasterKey(t *testing.T) {
	dir := t.TempDir()
	old, next := testMaster(t, 1), testMaster(t, 2)
	keys := fileKeys(t, dir)
	backend := memory.New()
	appendAll(t, sealed.Wrap(backend, sealed.NewKeyring(keys, old)), registry())
	n, err := keys.Rewrap(context.Background(), old, next)
	if err != nil || n < 1 {
		t.Fatalf("rewrap: %d keys, %v", n, err)
	}
	for _, rec := range readAll(t, sealed.Wrap(backend, sealed.NewKeyring(keys, next))) {
		if bytes.Contains(rec.Data, []byte(`"sealed"`)) {
			t.Errorf("not opened after rotation: %s", rec.Data)
		}
	}
	if _, err := readAllErr(sealed.Wrap(backend, sealed.NewKeyring(keys, old))); err == nil {
		t.Error("the old master key still opens the keys after rotation")
	}
}

// An event written before sealing holds its personal values in plain
// text: once its subject is known to be erased, reads through the seal
// show them as erased (the log still holds them).
func TestPlainEventsOfAnErasedSubjectReadAsErased(t *testing.T) {
	reg := registry()
	backend := memory.New()
	typ, data, err := reg.Encode(domain.AccountCreated{AccountID: 7, Provider: 1, Login: canaryLogin, Fullname: canaryName, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backend.Append(context.Background(), "account-7", eventstore.NoStream, eventstore.EventData{ID: eventstore.EventID{1}, Type: typ, Data: data}); err != nil {
		t.Fatal(err)
	}
	keys := sealed.NewKeyring(fileKeys(t, t.TempDir()), testMaster(t, 1))
	store := sealed.Wrap(backend, keys)
	if recs := readAll(t, store); !bytes.Contains(recs[0].Data, []byte(canaryLogin)) {
		t.Fatalf("a plain event of a subject not erased: %s", recs[0].Data)
	}
	keys.Forget(7)
	recs, err := store.ReadStream(context.Background(), "account-7", eventstore.Start, 0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := reg.Decode(recs[0].Type, recs[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	if a := e.(domain.AccountCreated); a.Login != domain.ErasedValue || a.Fullname != domain.ErasedValue || a.AccountID != 7 || !a.Enabled {
		t.Errorf("a plain event of an erased subject: %+v", a)
	}
}

// Copy seals a plain log into an empty store with every event at its
// position; VerifyCopy accepts it, and refuses a copy that lost or changed
// an event.
func TestCopyAndVerify(t *testing.T) {
	reg := registry()
	from := memory.New()
	for i, pe := range personalEvents() {
		typ, data, err := reg.Encode(pe.event)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := from.Append(context.Background(), pe.stream, eventstore.Any,
			eventstore.EventData{ID: eventstore.EventID{byte(i + 1)}, Type: typ, Data: data, Metadata: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	keys := sealed.NewKeyring(fileKeys(t, t.TempDir()), testMaster(t, 1))
	same := func(s string) string { return s }
	to := memory.New()
	n, err := keys.Copy(context.Background(), from, to, same, nil)
	if err != nil || n != uint64(len(personalEvents())) {
		t.Fatalf("copy: %d events, %v", n, err)
	}
	for _, rec := range readAll(t, to) {
		if found, what := hits(rec.Data); found > 0 {
			t.Errorf("%s in the copy holds %v", rec.Type, what)
		}
	}
	if m, err := keys.VerifyCopy(context.Background(), from, to, same); err != nil || m != n {
		t.Fatalf("verify: %d, %v", m, err)
	}
	// A copy short of its last event, and one with another stream name.
	short := memory.New()
	recs := readAll(t, from)
	if _, err := keys.Copy(context.Background(), from, short, same, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := short.Append(context.Background(), "account-99", eventstore.NoStream, eventstore.EventData{ID: eventstore.EventID{99}, Type: recs[0].Type, Data: recs[0].Data}); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.VerifyCopy(context.Background(), from, short, same); err == nil {
		t.Error("a copy with an extra event passed the check")
	}
	if _, err := keys.VerifyCopy(context.Background(), from, to, func(s string) string { return s + "-x" }); err == nil {
		t.Error("a copy under other stream names passed the check")
	}
}

package httpapi

import (
	"testing"

	"tvsm/httpapi/wire"
)

// FuzzBackupDecode feeds arbitrary bodies to the decoder of POST
// /api/admin/backups. It must never panic, and a body it refuses names
// each bad field.
func FuzzBackupDecode(f *testing.F) {
	const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	for _, seed := range []string{
		`{}`, `{"include_master_key":true}`, `{"include_master_key":"yes"}`, `{"include_master_key":null}`,
		`{"include_masterkey":true}`, `{"":1}`, `[]`, `null`, ``, `{"include_master_key":`,
		`{"since":{"id":"a","position":3,"last_event_id":"x","manifest_sha256":"` + sha + `","files":[{"path":"events/000004.sst","size":10,"sha256":"` + sha + `"}]}}`,
		`{"since":{"id":"a","position":-1,"manifest_sha256":"zz","files":[{"path":"../x","size":-1,"sha256":"","more":1}]}}`,
		`{"since":{"files":[1,null,{}]}}`, `{"since":[]}`, `{"since":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, "backup", data, func(o *wire.Object) any { return decodeBackupObject(o) })
	})
}

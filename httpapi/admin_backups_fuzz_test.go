package httpapi

import (
	"testing"

	"tvsm/httpapi/wire"
)

// FuzzBackupDecode feeds arbitrary bodies to the decoder of POST
// /api/admin/backups. It must never panic, and a body it refuses names
// each bad field.
func FuzzBackupDecode(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"include_master_key":true}`, `{"include_master_key":"yes"}`, `{"include_master_key":null}`,
		`{"include_masterkey":true}`, `{"":1}`, `[]`, `null`, ``, `{"include_master_key":`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, "backup", data, func(o *wire.Object) any { return decodeBackupObject(o) })
	})
}

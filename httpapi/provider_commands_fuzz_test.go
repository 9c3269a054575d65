package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/httpapi/wire"
)

// FuzzDecodeSendBody feeds arbitrary bodies to the command send decoder
// and the domain's check after it. Neither may panic; a refused body names
// each bad field; an accepted one keeps every command object as a compact
// JSON object; and a send the domain accepts encodes as an event (so a bad
// body can never become a 500 at append time).
func FuzzDecodeSendBody(f *testing.F) {
	for _, seed := range []string{
		`{"ids":[1,"2",3.0],"commands":[{"command":"user_message","type":"notify","text":"hi","delay":"5","use_as_push":1}]}`,
		`{"ids":[7],"commands":[{"command":"switch_to_channel","channel":"3","post_time":"2026-01-02T04:00:00Z","ttl":"1767333845"}]}`,
		`{"ids":[7],"commands":[{"command":"restart","ttl":9223372036854775807},{"command":"reinit","ttl":-9223372036854775808}]}`,
		`{"ids":[7],"commands":[{"command":"user_message","type":"confirm","title":"T","text":"<b>","post_time":"9999-12-31T23:59:59-01:00"}]}`,
		`{"ids":[0,-1,null,"x",1e400],"commands":[1,{"command":null}]}`,
		`{"ids":"1","commands":{"command":"update"}}`,
		`{"ids":[1], "commands" : [ { "command" : "update" , "x" : [ 1 , { } ] } ] , "commands":[{"command":"reinit"}]}`,
		`[]`, `null`, ``, `{"ids":`,
	} {
		f.Add([]byte(seed))
	}
	reg := domain.NewRegistry()
	domain.RegisterEvents(reg)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := decodeSendBody(data)
		if err != nil {
			checkSendDecodeError(t, err)
			return
		}
		for i, c := range in.Commands {
			var compact bytes.Buffer
			if len(c.Object) == 0 || c.Object[0] != '{' || json.Compact(&compact, c.Object) != nil || !bytes.Equal(compact.Bytes(), c.Object) {
				t.Fatalf("commands[%d]: object %q is not a compact JSON object", i, c.Object)
			}
		}
		send := domain.SendCommands{SendID: 1, Recipients: domain.RecipientAccounts, IDs: in.IDs, Commands: in.Commands}
		issued, err := domain.IssueCommands(send, now)
		if err != nil {
			if !errors.Is(err, domain.ErrValidation) {
				t.Fatalf("IssueCommands: %v is not a validation error", err)
			}
			return
		}
		if _, _, err := reg.Encode(issued); err != nil {
			t.Fatalf("accepted send does not encode: %v\n%+v", err, issued)
		}
	})
}

// checkSendDecodeError checks that a refused body is answered 400 (or
// 413) and names each bad field.
func checkSendDecodeError(t *testing.T, err error) {
	t.Helper()
	var (
		fe       wire.FieldErrors
		bodyErr  *wire.BodyError
		tooLarge *wire.TooLargeError
	)
	switch {
	case errors.As(err, &bodyErr), errors.As(err, &tooLarge):
		return
	case !errors.As(err, &fe) || len(fe) == 0:
		t.Fatalf("error %T %v is neither a body error nor field errors", err, err)
	}
	for field, problem := range fe {
		if field == "" || problem == "" {
			t.Fatalf("unnamed field or empty problem in %v", fe)
		}
	}
	if s := AsError(err).Status; s != 400 {
		t.Fatalf("%v answers %d, want 400", err, s)
	}
}

package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app/command"
)

// fuzzNow is the time the viewing fuzz validates against.
var fuzzNow = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// checkDecodeOutcome fails unless err is nil or a 400/413 naming what is
// wrong: bad input never makes a 500.
func checkDecodeOutcome(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	e := AsError(err)
	if e.Status != http.StatusBadRequest && e.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("error %v answered %d", err, e.Status)
	}
	if e.Code == CodeValidationFailed {
		if len(e.Fields) == 0 {
			t.Fatalf("validation error %v names no field", err)
		}
		for f := range e.Fields {
			if f == "" || strings.HasPrefix(f, ".") {
				t.Fatalf("unnamed field in %v", e.Fields)
			}
		}
	}
}

// FuzzDeviceLoginBody feeds arbitrary bodies to the login decoder and the
// checks the handler runs: never a panic or a 500, and an accepted body is
// a usable login.
func FuzzDeviceLoginBody(f *testing.F) {
	for _, seed := range []string{
		`{"provider":1,"login":"alice","password_md5":"0123456789abcdef0123456789ABCDEF","device":{"unique_id":"00:1A","class":"stb","model":"MAG"}}`,
		`{"provider":"2","login":42,"password_md5":"x","device":{"unique_id":" ","class":"TV"}}`,
		`{"provider":null,"device":null}`, `{"device":[1]}`, `{"device":{"class":7}}`,
		`[]`, `null`, ``, `{"a":`, `{"provider":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := wire.DecodeObject(data, wire.DecodeOptions{MaxBytes: deviceLoginMaxBytes})
		if err != nil {
			checkDecodeOutcome(t, err)
			return
		}
		in := decodeDeviceLogin(obj)
		err = validated(obj, command.CheckDeviceLogin(in))
		checkDecodeOutcome(t, err)
		if err != nil {
			return
		}
		// Login and password name the account, or both are absent: the
		// login by the account network of the device's address.
		byNetwork := in.Login == "" && in.PasswordMD5 == ""
		if in.Provider <= 0 || (!byNetwork && (in.Login == "" || len(in.PasswordMD5) != 32)) || strings.TrimSpace(in.UniqueID) == "" {
			t.Fatalf("accepted %+v", in)
		}
		if _, err := domain.ParseDeviceClass(string(in.Class)); err != nil {
			t.Fatalf("accepted class %q", in.Class)
		}
	})
}

// FuzzDeviceViewingBody feeds arbitrary bodies to the viewing decoder and
// checks: never a panic or a 500, and accepted sessions are sane.
func FuzzDeviceViewingBody(f *testing.F) {
	for _, seed := range []string{
		`{"sessions":[{"channel_id":1,"mode":"live","start":"2026-03-01T10:00:00Z","seconds":600}]}`,
		`{"sessions":[{"channel_id":"2","mode":"DVR","start":"2026-03-01T10:00:00+0300","seconds":"60"},{}]}`,
		`{"sessions":[{"channel_id":-1,"mode":"x","start":"yesterday","seconds":0}]}`,
		`{"sessions":"x"}`, `{"sessions":[1]}`, `{"sessions":[]}`, `{}`, `[]`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := wire.DecodeObject(data, wire.DecodeOptions{MaxBytes: deviceViewingMaxBytes})
		if err != nil {
			checkDecodeOutcome(t, err)
			return
		}
		sessions := decodeViewing(obj)
		_, verdict := command.CheckViewing(sessions, fuzzNow)
		err = validated(obj, verdict)
		checkDecodeOutcome(t, err)
		if err != nil {
			return
		}
		checked, err := command.CheckViewing(sessions, fuzzNow)
		if err != nil || len(checked) > command.MaxViewingSessions {
			t.Fatalf("accepted then refused: %v", err)
		}
		for _, s := range checked {
			if s.Channel <= 0 || s.Seconds < 1 || s.Seconds > command.MaxViewingSeconds ||
				(s.Mode != domain.ViewingLive && s.Mode != domain.ViewingDVR) || s.Start.After(fuzzNow.Add(command.ViewingClockSkew)) {
				t.Fatalf("accepted session %+v", s)
			}
		}
	})
}

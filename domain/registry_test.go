package domain_test

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tvsm/domain"
)

func TestRegistryAddRejects(t *testing.T) {
	shared := new(accountRenamed)
	tests := []struct {
		name    string
		event   string
		factory func() domain.Event
		want    error
	}{
		{"bad name", "accountCreated", func() domain.Event { return accountCreated{} }, domain.ErrInvalidEventType},
		{"duplicate name", accountCreatedType, func() domain.Event { return accountCreated{} }, domain.ErrDuplicateEventType},
		{"Go type under a second name", "AccountCreated.v9", func() domain.Event { return accountCreated{} }, domain.ErrEventTypeMismatch},
		{"name mismatch", "AccountRenamed.v2", func() domain.Event { return accountRenamed{} }, domain.ErrEventTypeMismatch},
		{"nil factory", "Nil.v1", nil, domain.ErrInvalidEventFactory},
		{"factory returns nil", "Nil.v1", func() domain.Event { return nil }, domain.ErrInvalidEventFactory},
		{"nil pointer", accountRenamedType + "x", func() domain.Event { return (*accountRenamed)(nil) }, domain.ErrInvalidEventType},
		{"nil pointer valid name", "Other.v1", func() domain.Event { return (*accountRenamed)(nil) }, domain.ErrInvalidEventFactory},
		{"shared pointer", "Other.v1", func() domain.Event { return shared }, domain.ErrInvalidEventFactory},
		{"pointer receiver", "PtrEvent.v1", func() domain.Event { return new(ptrEvent) }, domain.ErrInvalidEventFactory},
		{"not a struct", "IntEvent.v1", func() domain.Event { return intEvent(0) }, domain.ErrInvalidEventFactory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRegistry()
			err := r.Add(tt.event, tt.factory)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Add = %v, want %v", err, tt.want)
			}
			var ee *domain.EventError
			if !errors.As(err, &ee) || ee.Op != "register" || ee.EventType != tt.event {
				t.Errorf("Add error = %#v, want *EventError{Op: register, EventType: %q}", err, tt.event)
			}
		})
	}
}

func TestRegistryRegisterPanics(t *testing.T) {
	r := newTestRegistry()
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, domain.ErrDuplicateEventType) {
			t.Errorf("recovered %v, want ErrDuplicateEventType", err)
		}
	}()
	r.Register(accountCreatedType, func() domain.Event { return accountCreated{} })
}

func TestRegistryTypes(t *testing.T) {
	got := newTestRegistry().Types()
	want := []string{accountCreatedType, accountDisabledType, accountRenamedType}
	if !slices.Equal(got, want) {
		t.Errorf("Types() = %q, want %q", got, want)
	}
}

func TestRegistryRoundTrip(t *testing.T) {
	r := newTestRegistry()
	at := time.Date(2026, 11, 22, 17, 59, 41, 123456789, time.UTC)
	events := []domain.Event{
		accountCreated{AccountID: 7, Login: "alice", Enabled: true, At: at},
		&accountCreated{AccountID: 8, Login: "bob"}, // pointers encode; decoding gives values
		accountRenamed{AccountID: 7, Name: "Alice"},
		accountDisabled{},
	}
	for _, e := range events {
		name, data, err := r.Encode(e)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", e, err)
		}
		if name != e.EventType() {
			t.Errorf("Encode name = %q, want %q", name, e.EventType())
		}
		got, err := r.Decode(name, data)
		if err != nil {
			t.Fatalf("Decode(%s, %s): %v", name, data, err)
		}
		want := e
		if v := reflect.ValueOf(e); v.Kind() == reflect.Pointer {
			want = v.Elem().Interface().(domain.Event)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %s: got %#v, want %#v", name, got, want)
		}
	}
	_, data, _ := r.Encode(events[0])
	if want := `{"account_id":7,"login":"alice","enabled":true,"at":"2026-11-22T17:59:41.123456789Z"}`; string(data) != want {
		t.Errorf("Encode data = %s, want %s", data, want)
	}
}

func TestRegistryDecodeUnknownType(t *testing.T) {
	_, err := newTestRegistry().Decode("AccountDeleted.v1", []byte(`{}`))
	if !errors.Is(err, domain.ErrUnknownEventType) {
		t.Fatalf("Decode = %v, want ErrUnknownEventType", err)
	}
	var ee *domain.EventError
	if !errors.As(err, &ee) || ee.Op != "decode" || ee.EventType != "AccountDeleted.v1" {
		t.Errorf("error = %#v", err)
	}
	if want := "domain: decode AccountDeleted.v1: unknown event type"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}

func TestRegistryDecodeRejectsNonObjects(t *testing.T) {
	r := newTestRegistry()
	for _, data := range []string{"", " ", "null", "[]", `"x"`, "1", "true", `{"account_id":`, `{} {}`, `{"account_id":"seven"}`, `{"at":"yesterday"}`} {
		_, err := r.Decode(accountCreatedType, []byte(data))
		if !errors.Is(err, domain.ErrInvalidEventData) {
			t.Errorf("Decode(%q) = %v, want ErrInvalidEventData", data, err)
			continue
		}
		if !strings.Contains(err.Error(), accountCreatedType) {
			t.Errorf("Decode(%q) error %q does not name the event type", data, err)
		}
	}
}

func TestRegistryDecodeIgnoresUnknownFields(t *testing.T) {
	got, err := newTestRegistry().Decode(accountRenamedType, []byte(` {"account_id":3,"name":"x","added_later":{"a":[1]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (accountRenamed{AccountID: 3, Name: "x"}); got != want {
		t.Errorf("Decode = %#v, want %#v", got, want)
	}
}

func TestRegistryDecodeKeepsFactoryDefaults(t *testing.T) {
	r := domain.NewRegistry()
	r.Register(accountCreatedType, func() domain.Event { return &accountCreated{Enabled: true} })
	got, err := r.Decode(accountCreatedType, []byte(`{"account_id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (accountCreated{AccountID: 1, Enabled: true}); got != want {
		t.Errorf("Decode = %#v, want %#v", got, want)
	}
}

func TestRegistryEncodeRejects(t *testing.T) {
	r := newTestRegistry()
	r.Register("FloatEvent.v1", func() domain.Event { return floatEvent{} })
	tests := []struct {
		name  string
		event domain.Event
		want  error
	}{
		{"nil", nil, domain.ErrInvalidEventData},
		{"nil pointer", (*accountCreated)(nil), domain.ErrInvalidEventData},
		{"unregistered", floatEventV2{}, domain.ErrUnknownEventType},
		{"other Go type", impostor{X: 1}, domain.ErrEventTypeMismatch},
		{"unencodable", floatEvent{F: math.NaN()}, domain.ErrInvalidEventData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := r.Encode(tt.event)
			if !errors.Is(err, tt.want) {
				t.Errorf("Encode = %v, want %v", err, tt.want)
			}
		})
	}
}

type floatEventV2 struct{}

func (floatEventV2) EventType() string { return "FloatEvent.v2" }

func TestRegistryConcurrentUse(t *testing.T) {
	r := newTestRegistry()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				e := accountRenamed{AccountID: int64(i*1000 + j), Name: "n"}
				name, data, err := r.Encode(e)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := r.Decode(name, data)
				if err != nil || got != e {
					t.Errorf("Decode = %v, %v", got, err)
					return
				}
				_ = r.Types()
			}
		})
	}
	wg.Wait()
}

func FuzzRegistryDecode(f *testing.F) {
	r := newTestRegistry()
	r.RegisterUpcaster("AccountTitled.v1", accountRenamedType, renameV0)
	for _, s := range []struct{ name, data string }{
		{accountCreatedType, `{"account_id":7,"login":"alice","enabled":true,"at":"2026-11-22T17:59:41.123456789Z"}`},
		{accountRenamedType, `{"account_id":1,"name":"x","extra":[1,2]}`},
		{"AccountTitled.v1", `{"account_id":1,"title":"x"}`},
		{accountDisabledType, `{}`},
		{accountCreatedType, `null`},
		{"Unknown.v1", `{}`},
		{"", ""},
	} {
		f.Add(s.name, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		e, err := r.Decode(name, data)
		if err != nil {
			var ee *domain.EventError
			if !errors.As(err, &ee) {
				t.Fatalf("Decode error %v is not an *EventError", err)
			}
			return
		}
		// Whatever decodes must encode, and encoding must be stable.
		name2, data2, err := r.Encode(e)
		if err != nil {
			t.Fatalf("Encode(%#v) after Decode: %v", e, err)
		}
		e2, err := r.Decode(name2, data2)
		if err != nil {
			t.Fatalf("Decode(%s, %s) of own encoding: %v", name2, data2, err)
		}
		_, data3, err := r.Encode(e2)
		if err != nil || string(data3) != string(data2) {
			t.Fatalf("encoding not stable: %s then %s (%v)", data2, data3, err)
		}
	})
}

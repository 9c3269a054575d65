package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"tvsm/domain"
)

// Stored history of a renamed-account event:
// v1 {"account_id","title"} → v2 {"account_id","name"} → v3 {"account_id","name","source"}.

type accountRenamedV3 struct {
	AccountID int64  `json:"account_id"`
	Name      string `json:"name"`
	Source    string `json:"source"`
}

func (accountRenamedV3) EventType() string { return "AccountRenamed.v3" }

// renameV0 maps {"title"} to {"name"}.
func renameV0(data []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if title, ok := m["title"]; ok {
		m["name"] = title
		delete(m, "title")
	}
	return json.Marshal(m)
}

// addSource adds {"source":"legacy"}.
func addSource(data []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	m["source"] = "legacy"
	return json.Marshal(m)
}

func TestUpcasterChain(t *testing.T) {
	r := domain.NewRegistry()
	// Upcasters may be registered before the type they lead to.
	r.RegisterUpcaster("AccountRenamed.v1", "AccountRenamed.v2", renameV0)
	r.RegisterUpcaster("AccountRenamed.v2", "AccountRenamed.v3", addSource)
	r.Register("AccountRenamed.v3", func() domain.Event { return new(accountRenamedV3) })
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct{ name, data string }{
		{"AccountRenamed.v1", `{"account_id":5,"title":"Alice"}`},
		{"AccountRenamed.v2", `{"account_id":5,"name":"Alice"}`},
	} {
		got, err := r.Decode(tt.name, []byte(tt.data))
		if err != nil {
			t.Fatalf("Decode(%s): %v", tt.name, err)
		}
		if want := (accountRenamedV3{AccountID: 5, Name: "Alice", Source: "legacy"}); got != want {
			t.Errorf("Decode(%s) = %#v, want %#v", tt.name, got, want)
		}
	}
	got, err := r.Decode("AccountRenamed.v3", []byte(`{"account_id":5,"name":"A","source":"api"}`))
	if err != nil || got != (accountRenamedV3{AccountID: 5, Name: "A", Source: "api"}) {
		t.Errorf("Decode(v3) = %#v, %v", got, err)
	}
	if types := r.Types(); len(types) != 1 || types[0] != "AccountRenamed.v3" {
		t.Errorf("Types() = %q, want only the registered type", types)
	}
}

func TestUpcasterErrors(t *testing.T) {
	boom := errors.New("boom")
	r := domain.NewRegistry()
	r.Register("AccountRenamed.v3", func() domain.Event { return accountRenamedV3{} })
	r.RegisterUpcaster("AccountRenamed.v2", "AccountRenamed.v3", func([]byte) ([]byte, error) { return nil, boom })
	r.RegisterUpcaster("AccountRenamed.v1", "AccountRenamed.v2", func([]byte) ([]byte, error) { return []byte(`[]`), nil })
	r.RegisterUpcaster("Orphan.v1", "Orphan.v2", addSource)

	_, err := r.Decode("AccountRenamed.v2", []byte(`{}`))
	var ee *domain.EventError
	if !errors.Is(err, boom) || !errors.As(err, &ee) || ee.Op != "upcast" || ee.EventType != "AccountRenamed.v2" {
		t.Errorf("failing upcaster: %v", err)
	}
	if _, err := r.Decode("AccountRenamed.v1", []byte(`{}`)); !errors.Is(err, domain.ErrInvalidEventData) {
		t.Errorf("upcaster returning an array: %v, want ErrInvalidEventData", err)
	}
	if _, err := r.Decode("AccountRenamed.v1", []byte(`7`)); !errors.Is(err, domain.ErrInvalidEventData) {
		t.Errorf("non-object stored data: %v, want ErrInvalidEventData", err)
	}
	_, err = r.Decode("Orphan.v1", []byte(`{}`))
	if !errors.Is(err, domain.ErrUnknownEventType) || !strings.Contains(err.Error(), "Orphan.v2") {
		t.Errorf("chain to nowhere: %v, want ErrUnknownEventType naming Orphan.v2", err)
	}
	if err := r.Validate(); !errors.Is(err, domain.ErrUnknownEventType) {
		t.Errorf("Validate = %v, want ErrUnknownEventType", err)
	}
}

func TestUpcasterDecodeErrorNamesBothTypes(t *testing.T) {
	r := domain.NewRegistry()
	r.Register("AccountRenamed.v3", func() domain.Event { return accountRenamedV3{} })
	r.RegisterUpcaster("AccountRenamed.v2", "AccountRenamed.v3", func([]byte) ([]byte, error) {
		return []byte(`{"account_id":"x"}`), nil
	})
	_, err := r.Decode("AccountRenamed.v2", []byte(`{}`))
	if !errors.Is(err, domain.ErrInvalidEventData) || !strings.Contains(err.Error(), "AccountRenamed.v3") || !strings.Contains(err.Error(), "AccountRenamed.v2") {
		t.Errorf("Decode = %v", err)
	}
}

func TestAddUpcasterRejects(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		fn       func([]byte) ([]byte, error)
		want     error
	}{
		{"bad from", "x.v1", "X.v2", addSource, domain.ErrInvalidEventType},
		{"bad to", "X.v1", "X.v0", addSource, domain.ErrInvalidEventType},
		{"self", "X.v1", "X.v1", addSource, domain.ErrInvalidUpcaster},
		{"nil fn", "X.v1", "X.v2", nil, domain.ErrInvalidUpcaster},
		{"from registered", accountRenamedType, "AccountRenamed.v2", addSource, domain.ErrInvalidUpcaster},
		{"duplicate", "Old.v1", "Other.v1", addSource, domain.ErrInvalidUpcaster},
		{"cycle", "Old.v3", "Old.v1", addSource, domain.ErrInvalidUpcaster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRegistry()
			r.RegisterUpcaster("Old.v1", "Old.v2", addSource)
			r.RegisterUpcaster("Old.v2", "Old.v3", addSource)
			if err := r.AddUpcaster(tt.from, tt.to, tt.fn); !errors.Is(err, tt.want) {
				t.Errorf("AddUpcaster(%s, %s) = %v, want %v", tt.from, tt.to, err, tt.want)
			}
		})
	}
}

func TestRegisterUpcastSourceRejected(t *testing.T) {
	r := domain.NewRegistry()
	r.RegisterUpcaster(accountRenamedType, "AccountRenamed.v3", addSource)
	err := r.Add(accountRenamedType, func() domain.Event { return accountRenamed{} })
	if !errors.Is(err, domain.ErrDuplicateEventType) {
		t.Errorf("Add of an upcaster source = %v, want ErrDuplicateEventType", err)
	}
}

func TestRegisterUpcasterPanics(t *testing.T) {
	defer func() {
		if err, _ := recover().(error); !errors.Is(err, domain.ErrInvalidUpcaster) {
			t.Errorf("recovered %v, want ErrInvalidUpcaster", err)
		}
	}()
	domain.NewRegistry().RegisterUpcaster("X.v1", "X.v1", addSource)
}

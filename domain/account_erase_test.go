package domain_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

func TestEraseAccount(t *testing.T) {
	now := domaintest.Now()
	ended := domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 1, Tariff: 5, Start: now.Add(-48 * time.Hour), Stop: ptr(now.Add(-time.Hour))}
	open := domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 2, Tariff: 5, Start: now.Add(-48 * time.Hour)}
	future := domain.SubscriptionAdded{AccountID: 42, SubscriptionID: 3, Tariff: 5, Start: now.Add(24 * time.Hour), Stop: ptr(now.Add(48 * time.Hour))}
	deleted := domain.AccountDeleted{AccountID: 42}
	erased := domain.AccountErased{AccountID: 42}

	t.Run("an account whose subscriptions ended is erased", func(t *testing.T) {
		accountSpec().Given(created, ended).When(domain.EraseAccount{ID: 42}).Then(t, erased)
	})
	t.Run("a deleted account is erased, and the event says it was deleted", func(t *testing.T) {
		accountSpec().Given(created, open, deleted).When(domain.EraseAccount{ID: 42}).
			Then(t, domain.AccountErased{AccountID: 42, WasDeleted: true})
	})
	t.Run("an open subscription refuses the erasure", func(t *testing.T) {
		accountSpec().Given(created, ended, open).When(domain.EraseAccount{ID: 42}).ThenError(t, domain.ErrStillSubscribed)
	})
	t.Run("so does one that has not started yet", func(t *testing.T) {
		accountSpec().Given(created, future).When(domain.EraseAccount{ID: 42}).ThenError(t, domain.ErrStillSubscribed)
	})
	t.Run("force erases a subscribed account", func(t *testing.T) {
		accountSpec().Given(created, open).When(domain.EraseAccount{ID: 42, Force: true}).Then(t, erased)
	})
	t.Run("an account never created is not found", func(t *testing.T) {
		accountSpec().When(domain.EraseAccount{ID: 42}).ThenError(t, domain.ErrNotFound)
	})
	t.Run("an erased account is not found, for erasure and every other command", func(t *testing.T) {
		spec := accountSpec().Given(created, erased)
		spec.When(domain.EraseAccount{ID: 42, Force: true}).ThenError(t, domain.ErrNotFound)
		spec.When(domain.UpdateAccount{ID: 42, Fullname: domain.Some("Back")}).ThenError(t, domain.ErrNotFound)
		spec.When(domain.DeleteAccount{ID: 42}).ThenError(t, domain.ErrNotFound)
		spec.When(domain.CreateAccount{ID: 42, Provider: 7, Login: "alice", PinMD5: pin, Fullname: "A"}).ThenError(t, domain.ErrAlreadyExists)
	})
	t.Run("the erased state keeps nothing personal, nor subscriptions or devices", func(t *testing.T) {
		dev := domain.DeviceBound{AccountID: 42, DeviceID: 9, UniqueID: "stb-9", Class: domain.DeviceSTB}
		accountSpec().Given(created, open, dev, erased).
			ThenState(t, domain.Account{ID: 42, Provider: 7, Deleted: true, Erased: true})
	})
}

// TestPersonalDataNamesRealStringFields keeps the one list of personal data
// honest: every field it names is a member of its event's JSON form that
// holds a string (or null), and every subject is a number member.
func TestPersonalDataNamesRealStringFields(t *testing.T) {
	reg := eventRegistry()
	types := domain.PersonalEventTypes()
	slices.Sort(types)
	if len(types) == 0 {
		t.Fatal("no event type carries personal data")
	}
	for _, typ := range types {
		p, _ := domain.PersonalDataOf(typ)
		e, err := reg.Decode(typ, []byte(`{}`))
		if errors.Is(err, domain.ErrUnknownEventType) {
			continue // another package's event; its own test checks it
		}
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		members := jsonMembers(reflect.TypeOf(e))
		if k, ok := members[p.Subject]; !ok || (k != reflect.Int64) {
			t.Errorf("%s: subject %q is not an int64 member (have %v)", typ, p.Subject, members)
		}
		for _, f := range p.Fields {
			if k, ok := members[f]; !ok || k != reflect.String {
				t.Errorf("%s: personal field %q is not a string member (kind %v, present %v)", typ, f, k, ok)
			}
		}
	}
	for _, typ := range []string{domain.AccountErasedType, domain.AccountDeletedType, domain.SubscriptionAddedType, domain.ViewingReportedType} {
		if _, ok := domain.PersonalDataOf(typ); ok {
			t.Errorf("%s is listed as carrying personal data; it carries none", typ)
		}
	}
}

// jsonMembers maps the JSON keys of struct type t to the kind of value they
// hold: pointers, Optional and named string types count as what they hold.
func jsonMembers(t reflect.Type) map[string]reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]reflect.Kind{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			if v, ok := ft.FieldByName("Value"); ok {
				ft = v.Type
			}
		}
		out[name] = ft.Kind()
	}
	return out
}

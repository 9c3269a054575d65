package domain_test

import (
	"fmt"
	"time"

	"tvsm/domain"
)

func ExampleRegistry() {
	r := domain.NewRegistry()
	r.Register(accountRenamedType, func() domain.Event { return new(accountRenamed) })
	// Stored AccountTitled.v1 events are read as AccountRenamed.v1.
	r.RegisterUpcaster("AccountTitled.v1", accountRenamedType, renameV0)

	name, data, _ := r.Encode(accountRenamed{AccountID: 7, Name: "Alice"})
	fmt.Println(name, string(data))

	e, _ := r.Decode("AccountTitled.v1", []byte(`{"account_id":7,"title":"Old"}`))
	fmt.Printf("%s %+v\n", e.EventType(), e)

	_, err := r.Decode("AccountDeleted.v1", []byte(`{}`))
	fmt.Println(err)
	// Output:
	// AccountRenamed.v1 {"account_id":7,"name":"Alice"}
	// AccountRenamed.v1 {AccountID:7 Name:Old}
	// domain: decode AccountDeleted.v1: unknown event type
}

func ExampleEncodeMetadata() {
	at := time.Date(2026, 11, 22, 20, 59, 41, 123456789, time.FixedZone("MSK", 3*3600))
	data, _ := domain.EncodeMetadata(domain.Envelope{
		Event:      accountDisabled{},
		OccurredAt: at,
		Actor:      domain.AdminActor("alice"),
		RequestID:  "req-1",
	})
	fmt.Println(string(data))
	// Output:
	// {"occurred_at":"2026-11-22T17:59:41.123456789Z","actor":"admin:alice","request_id":"req-1"}
}

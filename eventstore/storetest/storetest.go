// Package storetest is the conformance suite that every eventstore backend
// passes. A backend's tests call Run with a factory for fresh stores and the
// Features that say where the backend may differ from the others:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, newStore, storetest.Features{DensePositions: true, MultiAppend: true, Reopen: reopen})
//	}
//
// Every test writes to streams whose names start with a random prefix of its
// own, so the suite can also run against a shared server (see Features.Shared).
// Every wait is bounded: a test that does not get what it expects within a few
// seconds fails instead of hanging.
package storetest

import (
	"testing"
	"time"

	"tvsm/eventstore"
)

// Factory returns a fresh, empty store. It registers the store's Close with
// t.Cleanup.
type Factory func(t *testing.T) eventstore.Store

// Features describes where a backend may differ from the others.
type Features struct {
	// DensePositions: positions are 1, 2, 3, ... in log order, with
	// Commit == Prepare == the sequence number. The embedded backend has it;
	// EventStoreDB (byte offsets) does not.
	DensePositions bool

	// Reopen, when non-nil, closes s and opens the store again on the same
	// data, registering the new store's Close with t.Cleanup. s is closed
	// before Reopen returns, so the factory's own cleanup must tolerate a store
	// that is already closed. Nil skips the durability tests.
	Reopen func(t *testing.T, s eventstore.Store) eventstore.Store

	// Shared: the store may hold events written by others (a real server
	// reused across runs). Unfiltered subscriptions then ignore events outside
	// the test's streams, and checks that need an empty store are skipped.
	Shared bool

	// StreamScopedIDs: the store recognises an event ID only as part of a
	// retried append at the same place in the same stream, and accepts the
	// same ID elsewhere (a real EventStoreDB). The tests that expect
	// ErrDuplicateEventID for an ID reused in another stream are skipped.
	StreamScopedIDs bool

	// MultiAppend: the store implements eventstore.MultiAppender, which the
	// suite then requires and checks (the MultiAppend group; not run when
	// unset).
	MultiAppend bool

	// ClockSkew is how far RecordedEvent.Created may be from the test's clock.
	// Zero means 2s (a store in this process).
	ClockSkew time.Duration
}

// Bounds of every wait in the suite.
const (
	// waitTimeout bounds the delivery of a bulk of events (catch-up).
	waitTimeout = 15 * time.Second
	// liveTimeout bounds the delivery of a live event appended after the
	// subscription caught up, and the reaction to ctx cancellation or Close.
	liveTimeout = 5 * time.Second
)

type test struct {
	name string
	run  func(e *env)
}

type group struct {
	name  string
	tests []test
}

// Run runs the conformance suite. Each test gets a fresh store from newStore.
func Run(t *testing.T, newStore Factory, f Features) {
	if f.ClockSkew <= 0 {
		f.ClockSkew = 2 * time.Second
	}
	groups := []group{
		{"AppendRead", appendReadTests},
		{"ExpectedRevision", expectedRevisionTests},
		{"InvalidAppend", invalidAppendTests()},
		{"GlobalOrder", globalOrderTests},
		{"Concurrency", concurrencyTests},
		{"Idempotency", idempotencyTests},
		{"Subscribe", subscribeTests},
		{"Filter", filterTests},
		{"SubscriptionLifecycle", lifecycleTests},
		{"Reopen", reopenTests},
		{"Tombstone", tombstoneTests},
	}
	if f.MultiAppend {
		groups = append(groups, group{"MultiAppend", multiAppendTests(f)})
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.run(newEnv(t, newStore, f))
				})
			}
		})
	}
}

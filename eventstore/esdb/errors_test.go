package esdb

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"tvsm/eventstore"
)

func TestParseCurrentRevision(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want eventstore.Revision
		ok   bool
	}{
		{"[ErrorCodeWrongExpectedVersion] an append request failed the optimistic concurrency on the server: wrong expected version: expecting '3' but got '7'", eventstore.Exact(7), true},
		{"wrong expected version: expecting 'no_stream' but got '0'", eventstore.Exact(0), true},
		{"wrong expected version: expecting 'stream_exists' but got 'no_stream'", eventstore.NoStream, true},
		{"wrong expected version: expecting 'any' but got '18446744073709551615'", eventstore.Exact(18446744073709551615), true},
		{"wrong expected version", eventstore.Revision{}, false},
		{"expecting '1' but got 'x'", eventstore.Revision{}, false},
		{"expecting '1' but got '-1'", eventstore.Revision{}, false},
		{"expecting '1' but got '12", eventstore.Revision{}, false},
	} {
		got, ok := parseCurrentRevision(tc.msg)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseCurrentRevision(%q) = %v, %v; want %v, %v", tc.msg, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseCurrentRevision: the server's answer is outside input; the
// parser must never panic, and reads back any revision it is given.
func FuzzParseCurrentRevision(f *testing.F) {
	f.Add("wrong expected version: expecting '3' but got '7'", uint64(7))
	f.Add("' but got '", uint64(0))
	f.Add("' but got 'no_stream'", uint64(1))
	f.Fuzz(func(t *testing.T, msg string, n uint64) {
		parseCurrentRevision(msg)
		if strings.Contains(msg, "' but got '") {
			return
		}
		got, ok := parseCurrentRevision(fmt.Sprintf("%s: expecting 'any' but got '%d'", msg, n))
		if !ok || got != eventstore.Exact(n) {
			t.Fatalf("revision %d read back as %v, %v", n, got, ok)
		}
	})
}

func TestConnectionLost(t *testing.T) {
	if connectionLost(nil) || connectionLost(errors.New("boom")) || connectionLost(eventstore.ErrWrongExpectedRevision) {
		t.Fatal("ordinary errors taken for a lost connection")
	}
	if connectionLost(io.EOF) {
		t.Fatal("a read's end taken for a lost connection")
	}
	// How the client reports an append whose stream the server ended
	// while the request was sent (seen when the server restarts).
	sendEOF, _ := client.FromError(io.EOF)
	if err := fmt.Errorf("could not send append request header. Reason: %w", sendEOF); !connectionLost(err) {
		t.Fatalf("%v not taken for a lost connection", err)
	}
	if err := classify(fmt.Errorf("could not send append request header. Reason: %w", sendEOF)); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("classify: %v, want ErrUnavailable", err)
	}
}

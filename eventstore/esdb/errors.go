package esdb

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"tvsm/eventstore"
)

// appendError maps the client's answer to a failed append onto the port's
// errors. A wrong expected version has two causes on EventStoreDB: the
// stream is elsewhere than expected, or the append repeats only some of
// the events of an earlier one ("corrupted idempotency"). With Any, and
// with StreamExists on an existing stream, only the second is possible, so
// it is ErrDuplicateEventID; otherwise it is a *WrongRevisionError with the
// revision the server reported.
func appendError(err error, stream string, expect eventstore.Revision) error {
	if streamDeleted(err) {
		return fmt.Errorf("esdb: append to %q: %w", stream, eventstore.ErrStreamDeleted)
	}
	var e *client.Error
	if !errors.As(err, &e) || e.Code() != client.ErrorCodeWrongExpectedVersion {
		return fmt.Errorf("esdb: append to %q: %w", stream, classify(err))
	}
	actual, ok := parseCurrentRevision(e.Error())
	if !ok {
		return fmt.Errorf("esdb: append to %q: unreadable wrong-expected-version answer %q: %w", stream, e.Error(), eventstore.ErrWrongExpectedRevision)
	}
	if expect.IsAny() || expect.IsStreamExists() && !actual.IsNoStream() {
		return fmt.Errorf("esdb: append to %q: some of the event ids are stored, not all: %w", stream, eventstore.ErrDuplicateEventID)
	}
	return &eventstore.WrongRevisionError{Stream: stream, Expected: expect, Actual: actual}
}

// parseCurrentRevision reads the stream's revision out of the client's
// wrong-expected-version error, which carries it only in its text:
// "wrong expected version: expecting '<e>' but got '<current>'", where
// current is "no_stream" or a revision (AppendToStream in
// https://github.com/EventStore/EventStore-Client-Go/blob/v4.2.0/esdb/client.go).
func parseCurrentRevision(msg string) (eventstore.Revision, bool) {
	const marker = "' but got '"
	i := strings.LastIndex(msg, marker)
	if i < 0 {
		return eventstore.Revision{}, false
	}
	rest := msg[i+len(marker):]
	end := strings.IndexByte(rest, '\'')
	if end < 0 {
		return eventstore.Revision{}, false
	}
	current := rest[:end]
	if current == "no_stream" {
		return eventstore.NoStream, true
	}
	n, err := strconv.ParseUint(current, 10, 64)
	if err != nil {
		return eventstore.Revision{}, false
	}
	return eventstore.Exact(n), true
}

// classify wraps errors that mean the server could not be reached in
// eventstore.ErrUnavailable, so that callers can tell them from refusals.
func classify(err error) error {
	if connectionLost(err) && !errors.Is(err, eventstore.ErrUnavailable) {
		return fmt.Errorf("%w: %w", eventstore.ErrUnavailable, err)
	}
	return err
}

// notFound reports whether err is the client's "stream not found" (which
// is also how a soft-deleted stream reads).
func notFound(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code() == client.ErrorCodeResourceNotFound
}

// streamDeleted reports whether err is the client's "stream deleted": the
// server's answer to a read of, an append to, or a tombstone of a
// tombstoned stream (a gRPC error whose "exception" trailer is
// "stream-deleted").
func streamDeleted(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code() == client.ErrorCodeStreamDeleted
}

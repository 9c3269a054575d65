package eventstore_test

import (
	"errors"
	"strings"
	"testing"

	"tvsm/eventstore"
)

// An expectation places an append's first event where the stream would
// have been when the append was first made: a repeat elsewhere is no retry.
func TestRevisionPlaces(t *testing.T) {
	cases := []struct {
		expect eventstore.Revision
		first  uint64
		want   bool
	}{
		{eventstore.Any, 0, true},
		{eventstore.Any, 7, true},
		{eventstore.NoStream, 0, true},
		{eventstore.NoStream, 1, false},
		{eventstore.StreamExists, 0, false},
		{eventstore.StreamExists, 1, true},
		{eventstore.Exact(0), 1, true},
		{eventstore.Exact(0), 0, false},
		{eventstore.Exact(4), 5, true},
		{eventstore.Exact(4), 6, false},
	}
	for _, c := range cases {
		if got := c.expect.Places(c.first); got != c.want {
			t.Errorf("%v.Places(%d) = %v, want %v", c.expect, c.first, got, c.want)
		}
	}
}

// ValidateRead reads from the given exact revision (Any: the start) and
// refuses other expectations and stream names no backend stores.
func TestValidateRead(t *testing.T) {
	for _, c := range []struct {
		from eventstore.Revision
		want uint64
	}{{eventstore.Start, 0}, {eventstore.Exact(3), 3}, {eventstore.Any, 0}} {
		if got, err := eventstore.ValidateRead("s", c.from); err != nil || got != c.want {
			t.Errorf("ValidateRead(s, %v) = %d, %v; want %d", c.from, got, err, c.want)
		}
	}
	for _, c := range []struct {
		stream string
		from   eventstore.Revision
	}{
		{"s", eventstore.NoStream},
		{"s", eventstore.StreamExists},
		{"", eventstore.Start},
		{"$all", eventstore.Start},
		{strings.Repeat("x", 1025), eventstore.Start},
	} {
		if _, err := eventstore.ValidateRead(c.stream, c.from); !errors.Is(err, eventstore.ErrInvalidAppend) {
			t.Errorf("ValidateRead(%.10q, %v): %v, want ErrInvalidAppend", c.stream, c.from, err)
		}
	}
}

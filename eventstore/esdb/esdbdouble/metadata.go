package esdbdouble

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Stream metadata as EventStoreDB keeps it
// (https://developers.eventstore.com/server/v24.10/features/streams.html):
// the metadata of stream "s" is the last event of its metadata stream "$$s",
// a JSON object, and reads of "s" show only the events it leaves:
//
//   - "$tb" (truncate before): events below that revision are gone;
//     deletedStream means soft-deleted, and the stream reads as not found.
//   - "$maxCount": only the last that many events are there.
//   - "$maxAge" (seconds): events older than that, by the time they were
//     written, are gone; the age is reckoned at the time of the read.
//
// A metadata stream keeps only its last event: EventStoreDB reads
// metadata streams with a $maxCount of 1. The rest of the metadata ("$acl",
// "$cacheControl", custom keys) is stored and read back but has no effect
// on the double, which has no users (ACLs are not enforced) and no HTTP API.
// $all shows every event whatever the metadata says, as EventStoreDB's does
// until a scavenge.
//
// Metadata is read as the server reads it (StreamMetadata.FromJsonReader
// in https://github.com/EventStore/EventStore): an event that is not JSON
// (content type application/json, non-empty) or not an object is no
// metadata at all, and so is one with a reserved member of the wrong kind:
// "$tb", "$maxCount", "$maxAge" or "$cacheControl" not an integer (or
// beyond 64 bits, or for the ages beyond what a .NET TimeSpan holds),
// "$tmp" not a boolean, "$acl" not an object of roles. An integer below the
// least allowed value (0 for "$tb", 1 for the others) is ignored.
type streamMetadata struct {
	truncateBefore int64 // 0: none
	maxCount       int64 // 0: none
	maxAge         int64 // 100 ns ticks; 0: none
}

// metastreamMetadata is what applies to every metadata stream.
var metastreamMetadata = streamMetadata{maxCount: 1}

const contentTypeJSON = "application/json"

// metastream is the name of stream's metadata stream.
func metastream(stream string) string { return "$$" + stream }

// isMetastream reports whether stream is a metadata stream, and of which.
func isMetastream(stream string) (string, bool) {
	return strings.CutPrefix(stream, "$$")
}

// jsonInteger is a JSON number without fraction or exponent, which is what
// the server's JSON reader takes for an integer.
var jsonInteger = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// maxSeconds is the most seconds a .NET TimeSpan holds: the server fails
// to read a "$maxAge" or "$cacheControl" beyond it.
const maxSeconds = math.MaxInt64 / int64(time.Second/100)

// parseMetadata reads metadata out of a metadata event.
func parseMetadata(e *event) streamMetadata {
	if e.contentType != contentTypeJSON || len(e.data) == 0 {
		return streamMetadata{}
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(e.data, &members) != nil || members == nil {
		return streamMetadata{}
	}
	valid := true
	// integer reads key (absent: 0); below least it counts as absent.
	integer := func(key string, least, most int64) int64 {
		raw, ok := members[key]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if !jsonInteger.Match(raw) || err != nil || n > most {
			valid = false
			return 0
		}
		if n < least {
			return 0
		}
		return n
	}
	m := streamMetadata{
		truncateBefore: integer("$tb", 0, math.MaxInt64),
		maxCount:       integer("$maxCount", 1, math.MaxInt64),
		maxAge:         integer("$maxAge", 1, maxSeconds) * int64(time.Second/100),
	}
	integer("$cacheControl", 1, maxSeconds)
	if raw, ok := members["$tmp"]; ok && !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false")) {
		valid = false
	}
	if raw, ok := members["$acl"]; ok && !validACL(raw) {
		valid = false
	}
	if !valid {
		return streamMetadata{}
	}
	return m
}

// validACL reports whether raw is an ACL the server reads: an object of
// "$r", "$w", "$d", "$mr" and "$mw", each a role or an array of roles.
func validACL(raw json.RawMessage) bool {
	var acl map[string]json.RawMessage
	if json.Unmarshal(raw, &acl) != nil || acl == nil {
		return false
	}
	for key, value := range acl {
		switch key {
		case "$r", "$w", "$d", "$mr", "$mw":
		default:
			return false
		}
		var one string
		var many []string
		if json.Unmarshal(value, &one) != nil && (json.Unmarshal(value, &many) != nil || many == nil) {
			return false
		}
	}
	return true
}

// withTruncateBefore returns the metadata object raw with its "$tb" set to
// tb and every other member kept, as the server rewrites metadata when an
// append recreates a soft-deleted stream; false when raw is not a JSON
// object.
func withTruncateBefore(raw []byte, tb int64) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	out := []byte{'{'}
	set := false
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			return nil, false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		if key == "$tb" {
			if set {
				continue // a repeated key: the server keeps one
			}
			value, set = strconv.AppendInt(nil, tb, 10), true
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(key)
		out = append(append(append(out, k...), ':'), value...)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	if !set {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendInt(append(out, `"$tb":`...), tb, 10)
	}
	return append(out, '}'), true
}

// metadataOf returns the metadata of stream as of events[:n], and the
// index of the event it comes from (-1: none). The caller holds mu.
func (l *eventLog) metadataOf(stream string, n int) (streamMetadata, int) {
	if _, ok := isMetastream(stream); ok {
		return metastreamMetadata, -1
	}
	i := l.lastOf(metastream(stream), n)
	if i < 0 {
		return streamMetadata{}, -1
	}
	return parseMetadata(l.events[i]), i
}

// lastOf returns the index of the last event of stream among events[:n],
// -1 when there is none. The caller holds mu.
func (l *eventLog) lastOf(stream string, n int) int {
	idx := l.streams[stream]
	for k := len(idx) - 1; k >= 0; k-- {
		if idx[k] < n {
			return idx[k]
		}
	}
	return -1
}

// metadataEvent is an event of stream's metadata stream at revision rev
// with data, written by the double itself (a delete, a recreation).
func metadataEvent(stream string, rev uint64, data []byte, created int64) *event {
	return &event{
		stream: metastream(stream), rev: rev, id: uuid.New(),
		typ: metadataType, contentType: contentTypeJSON, created: created,
		data: data,
	}
}

// visible returns the revisions of a stream with indexes idx that reads
// show under metadata m at time now (100 ns ticks): from first to last,
// none when first > last.
func (l *eventLog) visible(idx []int, m streamMetadata, now int64) (first, last int64) {
	last = int64(len(idx)) - 1
	first = max(0, m.truncateBefore)
	if m.maxCount > 0 {
		first = max(first, last-m.maxCount+1)
	}
	if m.maxAge > 0 {
		// The events after the newest one too old, as the server's read
		// index finds them: it takes the stream's events from the newest
		// down and stops at the first one past the age.
		cutoff := now - m.maxAge
		for rev := last; rev >= first; rev-- {
			if l.events[idx[rev]].created < cutoff {
				return rev + 1, last
			}
		}
	}
	return first, last
}

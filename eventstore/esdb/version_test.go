package esdb_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/esdb"
	"tvsm/eventstore/esdb/esdbdouble"
)

// TestOpenChecksServerVersion: Open refuses a server older than
// MinServerVersion, or one that does not say its version, with an error
// naming the version found and the one needed; it opens on 22.6.0 and on
// what the double announces by default.
func TestOpenChecksServerVersion(t *testing.T) {
	quiet := esdb.Options{Logger: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		opts esdbdouble.Options
		want []string // in the error; none: opens
	}{
		{esdbdouble.Options{ServerVersion: "22.5.9"}, []string{"EventStoreDB 22.5.9", "needs 22.6.0 or newer"}},
		{esdbdouble.Options{ServerVersion: "21.10.0"}, []string{"EventStoreDB 21.10.0", "needs 22.6.0 or newer"}},
		{esdbdouble.Options{NoServerFeatures: true}, []string{"does not tell its version", "before 21.10", "22.6.0 or newer"}},
		{esdbdouble.Options{ServerVersion: "22.6.0"}, nil},
		{esdbdouble.Options{}, nil},
	} {
		srv := startDouble(t, c.opts)
		s, err := esdb.Open(t.Context(), srv.URL(), quiet)
		if c.want == nil {
			if err != nil {
				t.Errorf("open on %+v: %v, want it open", c.opts, err)
				continue
			}
			if _, err := s.Append(t.Context(), "s", eventstore.NoStream, testEvent("a")); err != nil {
				t.Errorf("append on %+v: %v", c.opts, err)
			}
			_ = s.Close()
			continue
		}
		if err == nil {
			_ = s.Close()
			t.Errorf("open on %+v: no error, want ErrServerTooOld", c.opts)
			continue
		}
		if !errors.Is(err, esdb.ErrServerTooOld) {
			t.Errorf("open on %+v: %v, want ErrServerTooOld", c.opts, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("open on %+v: %q lacks %q", c.opts, err, w)
			}
		}
	}
}

// TestReconnectChecksServerVersion: a server that comes back too old is
// not used: calls fail with ErrUnavailable saying why, until a recent one
// is back.
func TestReconnectChecksServerVersion(t *testing.T) {
	d := newRestartable(t)
	s, err := esdb.Open(t.Context(), d.srv.URL(), fastReconnect)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Append(t.Context(), "s", eventstore.NoStream, testEvent("a")); err != nil {
		t.Fatal(err)
	}

	// The store drops its client once a call finds the server gone (the
	// first may fail otherwise, as the connection closes under it).
	d.stop()
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, err := s.Append(t.Context(), "s", eventstore.Any, testEvent("b"))
		if errors.Is(err, eventstore.ErrUnavailable) {
			break
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("append without a server: %v, want ErrUnavailable within 10 s", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.opts = esdbdouble.Options{ServerVersion: "20.10.5"}
	d.start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Append(t.Context(), "s", eventstore.Any, testEvent("b"))
		if err == nil {
			t.Fatal("append succeeded on a server too old")
		}
		if !errors.Is(err, eventstore.ErrUnavailable) {
			t.Fatalf("append while the server is too old: %v, want ErrUnavailable", err)
		}
		if errors.Is(err, esdb.ErrServerTooOld) && strings.Contains(err.Error(), "20.10.5") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %v after 10 s, want the server refused as too old", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	d.stop()
	d.opts = esdbdouble.Options{}
	d.start()
	appendUntilOK(t, s, "s", testEvent("b"))
}

package simulate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Given a node that takes a while over each login, when 60 devices of one
// process log in at once, then at most LoginsInFlight logins are waited
// for at a time, and every device gets its token.
func TestLoginsInFlightAreBounded(t *testing.T) {
	var inFlight, most atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(10 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"token":"t"}`))
	}))
	defer srv.Close()
	s, err := New(Options{URL: srv.URL, Provider: 1, Devices: 60, LoginsInFlight: 4})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			if tok, err := s.doLogin(context.Background(), i); err != nil || tok != "t" {
				t.Errorf("device %d: token %q, %v", i, tok, err)
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > 4 || m < 2 {
		t.Fatalf("%d logins at once, want 2 to 4", m)
	}
}

// Given a node that refuses a login with Retry-After: 1, when the device
// logs in, then the refusal carries the wait, and the device tries again
// no sooner than a second later (its own backoff starts at 100 ms, less its
// jitter).
func TestLoginRefusalsWaitRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var attempts []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/device/login" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		attempts = append(attempts, time.Now())
		n := len(attempts)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n <= 2 { // the test's own attempt, then the device's first
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"cause":"too many logins from this address are being checked at once; retry in 1 s"}`))
			return
		}
		_, _ = w.Write([]byte(`{"token":"t"}`))
	}))
	defer srv.Close()
	s, err := New(Options{URL: srv.URL, Provider: 1, Devices: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.doLogin(context.Background(), 0)
	var se *ServerError
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests || se.RetryAfter != time.Second {
		t.Fatalf("refused login: %v (%+v)", err, se)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.device(ctx, 0)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(attempts)
		var gap time.Duration
		if n >= 3 {
			gap = attempts[2].Sub(attempts[1])
		}
		mu.Unlock()
		if n >= 3 {
			cancel()
			<-done
			if gap < time.Second {
				t.Fatalf("tried again %v after a refusal asking for a second", gap)
			}
			return
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("%d login attempts in 10 s, want 3", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

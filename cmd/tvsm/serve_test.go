package main

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCloseStackClosesNewestFirstOnce(t *testing.T) {
	// Given three things opened in order, the middle one failing to close
	var opened closeStack
	var closed []string
	boom := errors.New("boom")
	for _, what := range []string{"statistics", "event store", "node"} {
		opened.push(what, func() error {
			closed = append(closed, what)
			if what == "event store" {
				return boom
			}
			return nil
		})
	}
	// When everything closes, twice
	err := opened.closeAll()
	again := opened.closeAll()
	// Then each closed once, newest first, and the failure names what failed
	if want := []string{"node", "event store", "statistics"}; !slices.Equal(closed, want) {
		t.Fatalf("closed %v, want %v", closed, want)
	}
	if !errors.Is(err, boom) || err.Error() != "close event store: boom" {
		t.Fatalf("closeAll = %v, want close event store: boom", err)
	}
	if again != nil {
		t.Fatalf("second closeAll = %v, want nil", again)
	}
}

// TestConnStates: a connection is counted in its current state only, and
// leaves the count when it closes or is hijacked (a websocket).
func TestConnStates(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newConnStates(reg)
	a, b := &net.TCPConn{}, &net.TCPConn{}
	for _, step := range []struct {
		conn             net.Conn
		state            http.ConnState
		nw, active, idle int
	}{
		{a, http.StateNew, 1, 0, 0},
		{b, http.StateNew, 2, 0, 0},
		{a, http.StateActive, 1, 1, 0},
		{a, http.StateIdle, 1, 0, 1},
		{b, http.StateActive, 0, 1, 1},
		{b, http.StateHijacked, 0, 0, 1},
		{a, http.StateActive, 0, 1, 0},
		{a, http.StateClosed, 0, 0, 0},
	} {
		c.track(step.conn, step.state)
		if got := [3]int{c.count(http.StateNew), c.count(http.StateActive), c.count(http.StateIdle)}; got != [3]int{step.nw, step.active, step.idle} {
			t.Fatalf("after %v: new, active, idle %v, want %d %d %d", step.state, got, step.nw, step.active, step.idle)
		}
	}
	if len(c.state) != 0 {
		t.Fatalf("%d connections remembered after all left", len(c.state))
	}
}

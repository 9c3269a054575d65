package main

import (
	"errors"
	"slices"
	"testing"
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

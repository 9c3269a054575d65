package supervise

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestDoRecoversLogsAndCounts(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	before := Counts()["test/do"]
	p := Do(log, "test/do", func() { panic("boom") })
	if p == nil || p.Value != "boom" || p.Component != "test/do" {
		t.Fatalf("Do = %+v, want the panic", p)
	}
	var err error = p
	if !strings.Contains(err.Error(), "test/do: panic: boom") {
		t.Errorf("error %q", err)
	}
	if got := Counts()["test/do"]; got != before+1 {
		t.Errorf("count %d, want %d", got, before+1)
	}
	out := buf.String()
	for _, want := range []string{"panic recovered", "in=test/do", "panic=boom", "TestDoRecoversLogsAndCounts"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if p := Do(log, "test/do", func() {}); p != nil {
		t.Errorf("Do without a panic = %v", p)
	}
}

// Recover in a goroutine of its own: the goroutine ends normally and the
// callback sees the panic, an error value included.
func TestRecoverInAGoroutine(t *testing.T) {
	boom := errors.New("boom")
	var got *Panic
	var wg sync.WaitGroup
	wg.Go(func() {
		defer Recover(slog.New(slog.DiscardHandler), "test/recover", func(p *Panic) { got = p })
		panic(boom)
	})
	wg.Wait()
	if got == nil || got.Value != boom || len(got.Stack) == 0 {
		t.Fatalf("recovered %+v", got)
	}
}

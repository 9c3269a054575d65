// Package supervise keeps background work from dying silently: a panic in
// a goroutine that is not an HTTP handler would end the process, or, once
// recovered carelessly, leave a component dead without a word. Recover and
// Do turn the panic into a *Panic, log it at error level with its stack,
// count it under the component's name (Counts, exported as the metric
// tvsm_panics_total), and let the caller restart the work or report the
// node not ready.
package supervise

import (
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"sync"
)

// Panic is a recovered panic.
type Panic struct {
	Component string
	Value     any
	Stack     []byte
}

func (p *Panic) Error() string { return fmt.Sprintf("%s: panic: %v", p.Component, p.Value) }

var (
	mu     sync.Mutex
	counts = map[string]uint64{}
)

// Counts returns how many panics have been recovered in this process, by
// component.
func Counts() map[string]uint64 {
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(counts)
}

// Recover, deferred directly (defer supervise.Recover(...)), recovers a
// panic of the goroutine, logs and counts it under component, and calls
// then with it (unless then is nil). Without a panic it does nothing.
func Recover(log *slog.Logger, component string, then func(*Panic)) {
	v := recover()
	if v == nil {
		return
	}
	p := record(log, component, v)
	if then != nil {
		then(p)
	}
}

// Do runs f and returns nil, or the panic f raised, recovered, logged and
// counted under component: one unit of work (a batch, a message, an event)
// fails, the loop around it goes on.
func Do(log *slog.Logger, component string, f func()) (p *Panic) {
	defer Recover(log, component, func(recovered *Panic) { p = recovered })
	f()
	return nil
}

func record(log *slog.Logger, component string, v any) *Panic {
	p := &Panic{Component: component, Value: v, Stack: debug.Stack()}
	mu.Lock()
	counts[component]++
	mu.Unlock()
	if log == nil {
		log = slog.Default()
	}
	log.Error("panic recovered", "in", component, "panic", fmt.Sprint(v), "stack", string(p.Stack))
	return p
}

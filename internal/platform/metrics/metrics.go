// Package metrics builds the Prometheus registry that every part of a tvsm
// node registers on and that /metrics serves.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a registry with the Go runtime, process and build-info
// collectors. A registry of our own (rather than the global default) keeps
// tests independent and makes what is exported explicit.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
	)
	return reg
}

// Register registers c on reg and returns it, or returns the equal collector
// already registered there, so constructors that run twice against one
// registry share their metrics instead of failing.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// A descriptor clash is a programming error, like MustRegister's.
		panic(err)
	}
	return c
}

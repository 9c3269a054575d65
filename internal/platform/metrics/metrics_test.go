package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestNewRegistryGathersRuntimeMetrics(t *testing.T) {
	families, err := NewRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, want := range []string{"go_goroutines", "go_build_info", "process_start_time_seconds"} {
		if !names[want] {
			t.Errorf("registry lacks %s", want)
		}
	}
}

func TestRegisterTwiceSharesTheCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "tvsm_test_total", Help: "test"}
	first := Register(reg, prometheus.NewCounter(opts))
	second := Register(reg, prometheus.NewCounter(opts))
	if first != second {
		t.Fatal("second Register returned a new, unregistered counter")
	}
}

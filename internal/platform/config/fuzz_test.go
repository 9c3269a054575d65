package config

import (
	"errors"
	"testing"
)

// FuzzLoadYAML feeds arbitrary bytes to the YAML file decoder: it may reject
// them, but it must not panic, and what it accepts must validate.
func FuzzLoadYAML(f *testing.F) {
	for _, seed := range []string{
		"",
		"http: :8080\ndata: ./data\n",
		"features: [billing]\n",
		"features: billing, billing\n",
		"eventstore: esdb://localhost:2113?tls=false\nstats: clickhouse://127.0.0.1:9000/tvsm\n",
		"shutdown_timeout: 15s\nread_your_writes_timeout: 5s\neod_timezone: Europe/Berlin\n",
		"log_level: debug\nlog_format: json\nadmin_login: root\nadmin_password: x\n",
		"a: &x [1, *x]\n",
		"---\n---\n",
		"? [a]\n: b\n",
		"http: !!binary aGk=\n",
		"<<: {http: ':1'}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Defaults()
		if err := applyYAML(&c, data); err != nil {
			return
		}
		if c.AdminPassword != "" && c.AdminLogin == "" {
			return // only Validate's cross-field rule; applyYAML does not check it
		}
		err := c.Validate()
		if errors.Is(err, errEmbeddedStatsOnSharedStore) {
			return // Validate's other cross-field rule: a shared event store needs stats elsewhere, or the setting that accepts it
		}
		if err != nil {
			t.Fatalf("applyYAML accepted %q but Validate rejects it: %v", data, err)
		}
	})
}

package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestGrafanaDashboard: every series the dashboard in deploy/ queries is
// one `tvsm serve` exports, and it shows the figures operators watch.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		Panels []struct {
			ID      int
			Type    string
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	stderr, exited, cancel := startServe(t, "--http", "127.0.0.1:0", "--data", t.TempDir())
	addr := waitForListening(t, stderr, exited)
	defer func() {
		cancel()
		<-exited
	}()
	admin := api{t: t, base: "http://" + addr, c: &http.Client{}, password: "s3cret-root"}
	admin.ok(http.MethodPost, "/api/admin/providers", map[string]any{"name": "Watched ISP"}, nil)
	var exposition string
	admin.ok(http.MethodGet, "/metrics", nil, &exposition)
	exported := map[string]string{} // name → type
	for line := range strings.Lines(exposition) {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			exported[f[2]] = f[3]
		}
	}

	names := regexp.MustCompile(`\b(?:tvsm|process|go)_[a-z_]+\b`)
	queried := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d repeated", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, target := range p.Targets {
			for _, name := range names.FindAllString(target.Expr, -1) {
				queried[name] = true
				// Panics are counted by component from the first one on:
				// a clean node has no such series.
				if !isExported(exported, name) && name != "tvsm_panics_total" {
					t.Errorf("panel %q queries %s, which the node does not export", p.Title, name)
				}
			}
		}
	}
	for _, want := range []string{
		"tvsm_projection_lag_events", "tvsm_projection_lag_seconds", "tvsm_eventstore_append_seconds_bucket",
		"tvsm_eventstore_grouped_appends_total", "tvsm_eventstore_groups_total", "tvsm_readmodel_entities",
		"tvsm_stats_rows_written_total", "tvsm_stats_closed_through_timestamp_seconds", "tvsm_login_refusals_total",
		"tvsm_http_connections_by_state", "tvsm_ws_connections",
	} {
		if !queried[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
	if t.Failed() {
		t.Logf("exported: %v", slices.Sorted(maps.Keys(exported)))
	}
}

// isExported reports whether name is a family of the exposition, or a
// histogram's bucket, count or sum series.
func isExported(exported map[string]string, name string) bool {
	if _, ok := exported[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] == "histogram" {
			return true
		}
	}
	return false
}

package tvsm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path; the patterns below are relative to it.
const module = "tvsm"

// layers order the module's packages, lowest first: a package may import
// packages of lower layers, and of its own layer only its parent or its
// children (path prefixes). Every package must match a pattern, so a new
// package is placed here deliberately. A pattern "x" matches package x,
// "x/..." matches x and every package below it; when several match, the
// longest wins.
var layers = []struct {
	name     string
	patterns []string
}{
	{"domain and platform leaves", []string{"domain/...", "internal/platform/logging/...", "internal/platform/indexheap/...", "internal/platform/supervise/..."}},
	{"platform", []string{"internal/platform/..."}},
	{"event store port", []string{"eventstore"}},
	{"event store backends and recording", []string{"eventstore/record/...", "eventstore/embedded/...", "eventstore/memory/...", "eventstore/esdb/...", "eventstore/storetest/...", "eventstore/sealed/..."}},
	{"projection runner, adapters, websocket hub", []string{"projections", "internal/adapters/...", "wsgateway"}},
	{"projections, dispatcher, executor", []string{"projections/readmodel/...", "projections/stats/...", "wsgateway/dispatch/...", "internal/app"}},
	{"queries", []string{"internal/app/query/..."}},
	{"commands", []string{"internal/app/command/..."}},
	{"HTTP API", []string{"httpapi/..."}},
	{"API document checks", []string{"internal/testkit/apicheck"}},
	{"wiring", []string{"internal/wiring/..."}},
	{"virtual devices, the importer", []string{"internal/tools/simulate/...", "internal/tools/tvipimport/..."}},
	{"test kits and tools", []string{"internal/testkit/...", "internal/tools/..."}},
	{"the binary", []string{"cmd/..."}},
}

// Further rules, beyond the order of layers.
var (
	// isolated packages import nothing of the module.
	isolated = []string{"domain"}
	// backendFree packages must not reach an event store or statistics
	// backend, nor the wiring that picks one, even through other packages:
	// they work against the ports.
	backendFree = []string{"httpapi/...", "wsgateway/..."}
	backends    = []string{
		"eventstore/embedded/...", "eventstore/memory/...", "eventstore/esdb/...",
		"projections/stats/embedded/...", "projections/stats/clickhouse/...",
		"internal/wiring/...",
	}
	// testKits are for tests: no other package's non-test code imports them.
	testKits = "internal/testkit/..."
)

// knownViolations are imports that break the rules, each with where the
// code should move. The test fails when one disappears, so the list only
// shrinks; it is empty, and a new entry needs a reason.
var knownViolations = map[[2]string]string{}

// TestImportLayers checks the module's non-test imports against the rules.
func TestImportLayers(t *testing.T) {
	graph := loadImports(t)
	if len(graph) < 10 {
		t.Fatalf("go list found %d packages; the check would prove nothing", len(graph))
	}
	for _, v := range importViolations(graph, knownViolations) {
		t.Error(v)
	}
}

// loadImports returns each package of the module with its non-test
// imports, as go list sees them. Packages with only test files import
// nothing outside their tests and are left out.
func loadImports(t *testing.T) map[string][]string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,GoFiles,CgoFiles", "./...")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	for dec := json.NewDecoder(&stdout); ; {
		var p struct {
			ImportPath        string
			Imports           []string
			GoFiles, CgoFiles []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if len(p.GoFiles)+len(p.CgoFiles) > 0 {
			graph[p.ImportPath] = p.Imports
		}
	}
	return graph
}

// importViolations checks graph (each package of the module with its
// imports; imports that are not keys are outside the module) against the
// rules, tolerating the imports in known. It returns one message per
// violation, and one per known violation that no longer occurs.
func importViolations(graph map[string][]string, known map[[2]string]string) []string {
	var out []string
	seen := map[[2]string]bool{}
	for _, pkg := range sortedKeys(graph) {
		from, ok := layerOf(pkg)
		if !ok {
			out = append(out, fmt.Sprintf("%s matches no layer: place it in the table of layers", pkg))
			continue
		}
		for _, imp := range graph[pkg] {
			if _, inModule := graph[imp]; !inModule {
				continue
			}
			edge := [2]string{pkg, imp}
			if _, ok := known[edge]; ok {
				seen[edge] = true
				continue
			}
			if v := edgeViolation(pkg, imp, from); v != "" {
				out = append(out, v)
			}
		}
		if matchesAny(pkg, backendFree) {
			if path := pathTo(graph, pkg, backends); path != nil {
				out = append(out, fmt.Sprintf("%s reaches the backend %s (%s): it must work against the ports",
					pkg, path[len(path)-1], strings.Join(path, " → ")))
			}
		}
	}
	for _, edge := range sortedKeys(known) {
		if !seen[edge] {
			out = append(out, fmt.Sprintf("%s no longer imports %s: remove it from knownViolations", edge[0], edge[1]))
		}
	}
	return out
}

// edgeViolation says what is wrong with pkg (in layer from) importing imp,
// or "" when nothing is.
func edgeViolation(pkg, imp string, from int) string {
	to, ok := layerOf(imp)
	switch {
	case !ok:
		return "" // reported as a package of its own
	case matchesAny(pkg, isolated):
		return fmt.Sprintf("%s imports %s: it must import nothing of the module", pkg, imp)
	case matches(imp, testKits) && !matches(pkg, testKits):
		return fmt.Sprintf("%s imports %s: only tests and other test kits may use a test kit", pkg, imp)
	case to > from:
		return fmt.Sprintf("%s (layer %d, %s) imports %s (layer %d, %s): a layer may import only lower ones",
			pkg, from, layers[from].name, imp, to, layers[to].name)
	case to == from && !isPathPrefix(pkg, imp) && !isPathPrefix(imp, pkg):
		return fmt.Sprintf("%s imports %s, both in layer %d (%s): within a layer only a parent and its children import each other",
			pkg, imp, from, layers[from].name)
	}
	return ""
}

// layerOf returns the index of the layer whose longest pattern matches pkg.
func layerOf(pkg string) (int, bool) {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.patterns {
			if matches(pkg, p) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best, best >= 0
}

// matches reports whether the import path pkg matches the module-relative
// pattern.
func matches(pkg, pattern string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return isPathPrefix(module+"/"+base, pkg)
	}
	return pkg == module+"/"+pattern
}

func matchesAny(pkg string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(pkg, p) })
}

// isPathPrefix reports whether pkg is prefix or a package below it.
func isPathPrefix(prefix, pkg string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// pathTo returns the shortest chain of imports from pkg to a package
// matching targets, or nil.
func pathTo(graph map[string][]string, pkg string, targets []string) []string {
	parent := map[string]string{pkg: ""}
	for queue := []string{pkg}; len(queue) > 0; queue = queue[1:] {
		cur := queue[0]
		for _, imp := range graph[cur] {
			if _, inModule := graph[imp]; !inModule {
				continue
			}
			if _, visited := parent[imp]; visited {
				continue
			}
			parent[imp] = cur
			if matchesAny(imp, targets) {
				var path []string
				for p := imp; p != ""; p = parent[p] {
					path = append(path, p)
				}
				slices.Reverse(path)
				return path
			}
			queue = append(queue, imp)
		}
	}
	return nil
}

func sortedKeys[K interface{ ~string | ~[2]string }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return keys
}

// The checker itself, on made-up graphs: a legal graph passes and each kind
// of violation is caught, so TestImportLayers cannot pass by checking
// nothing.
func TestImportViolationsOnMadeUpGraphs(t *testing.T) {
	legal := map[string][]string{
		"tvsm/domain":                   {"fmt"},
		"tvsm/eventstore":               {"context"},
		"tvsm/eventstore/embedded":      {"tvsm/eventstore"},
		"tvsm/projections":              {"tvsm/eventstore"},
		"tvsm/projections/readmodel":    {"tvsm/domain", "tvsm/projections"},
		"tvsm/projections/stats":        {"tvsm/projections"},
		"tvsm/projections/stats/export": {"tvsm/projections/stats"}, // a child
		"tvsm/internal/app/query":       {"tvsm/projections/readmodel"},
		"tvsm/httpapi":                  {"tvsm/internal/app/query", "tvsm/httpapi/wire"},
		"tvsm/httpapi/wire":             {"tvsm/domain"},
		"tvsm/internal/wiring/node":     {"tvsm/httpapi", "tvsm/eventstore/embedded"},
		"tvsm/internal/testkit/kit":     {"tvsm/internal/wiring/node"},
		"tvsm/cmd/tvsm":                 {"tvsm/internal/wiring/node"},
	}
	if got := importViolations(legal, nil); len(got) != 0 {
		t.Fatalf("legal graph: %q", got)
	}

	for _, tc := range []struct {
		name    string
		pkg     string
		imports []string
		want    string
	}{
		{"domain imports the module", "tvsm/domain", []string{"tvsm/eventstore"},
			"tvsm/domain imports tvsm/eventstore: it must import nothing of the module"},
		{"lower imports higher", "tvsm/eventstore", []string{"tvsm/projections"},
			"tvsm/eventstore (layer 2, event store port) imports tvsm/projections (layer 4, projection runner, adapters, websocket hub): a layer may import only lower ones"},
		{"siblings in a layer", "tvsm/projections/stats", []string{"tvsm/projections/readmodel"},
			"tvsm/projections/stats imports tvsm/projections/readmodel, both in layer 5 (projections, dispatcher, executor): within a layer only a parent and its children import each other"},
		{"HTTP API reaches a backend", "tvsm/internal/app/query", []string{"tvsm/projections/readmodel", "tvsm/eventstore/embedded"},
			"tvsm/httpapi reaches the backend tvsm/eventstore/embedded (tvsm/httpapi → tvsm/internal/app/query → tvsm/eventstore/embedded): it must work against the ports"},
		{"HTTP API imports the wiring", "tvsm/httpapi/wire", []string{"tvsm/domain", "tvsm/internal/wiring/node"},
			"tvsm/httpapi/wire reaches the backend tvsm/internal/wiring/node (tvsm/httpapi/wire → tvsm/internal/wiring/node): it must work against the ports"},
		{"a tool imports a test kit", "tvsm/internal/tools/sim", []string{"tvsm/internal/testkit/kit"},
			"tvsm/internal/tools/sim imports tvsm/internal/testkit/kit: only tests and other test kits may use a test kit"},
		{"a package matches no layer", "tvsm/elsewhere", nil,
			"tvsm/elsewhere matches no layer: place it in the table of layers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Given the legal graph with one package's imports changed
			graph := maps.Clone(legal)
			graph[tc.pkg] = tc.imports
			// When it is checked
			got := importViolations(graph, nil)
			// Then the violation is reported
			if !slices.Contains(got, tc.want) {
				t.Fatalf("violations %q lack %q", got, tc.want)
			}
		})
	}

	t.Run("known violations", func(t *testing.T) {
		// Given a known violation, and one that no longer occurs
		graph := maps.Clone(legal)
		graph["tvsm/projections/stats"] = []string{"tvsm/projections/readmodel"}
		known := map[[2]string]string{
			{"tvsm/projections/stats", "tvsm/projections/readmodel"}: "move it",
			{"tvsm/httpapi", "tvsm/projections/stats"}:               "fixed since",
		}
		// When the graph is checked
		got := importViolations(graph, known)
		// Then only the stale entry is reported
		want := []string{"tvsm/httpapi no longer imports tvsm/projections/stats: remove it from knownViolations"}
		if !slices.Equal(got, want) {
			t.Fatalf("violations %q, want %q", got, want)
		}
	})
}

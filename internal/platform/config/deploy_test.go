package config

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// deployDir is the repository's deploy/ directory.
var deployDir = filepath.Join("..", "..", "..", "deploy")

// composeService is the part of a compose service the test reads.
type composeService struct {
	Image       string            `yaml:"image"`
	Environment map[string]string `yaml:"environment"`
	Command     []string          `yaml:"command"`
	Volumes     []string          `yaml:"volumes"`
}

// interpolation matches compose's ${NAME...} references.
var interpolation = regexp.MustCompile(`\$\{[^}]*\}`)

// TestComposeSetsKnownSettings keeps deploy/compose.yaml in step with the
// code: every TVSM_* variable and flag it gives a tvsm node names a
// setting, the configuration file it mounts holds only known keys, and
// each node's whole configuration (file, then environment, with the
// compose variables filled in) loads and validates as `tvsm serve` would
// load it. The load balancer's configuration names every node.
func TestComposeSetsKnownSettings(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &compose); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, want := range []string{"eventstore", "clickhouse", "lb"} {
		if _, ok := compose.Services[want]; !ok {
			t.Errorf("compose.yaml has no service %q", want)
		}
	}
	haproxy, err := os.ReadFile(filepath.Join(deployDir, "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}

	var nodes []string
	names := map[string]bool{}
	for name, svc := range compose.Services {
		if !strings.HasPrefix(svc.Image, "tvsm:") {
			continue
		}
		nodes = append(nodes, name)
		env := map[string]string{}
		for k, v := range svc.Environment {
			if !strings.HasPrefix(k, envPrefix) {
				continue
			}
			if _, ok := settingOfEnv(k); !ok && k != configEnv {
				t.Errorf("service %s sets %s, which is no setting", name, k)
			}
			env[k] = interpolation.ReplaceAllString(v, "compose-value")
		}
		for _, arg := range svc.Command {
			if flagName, ok := strings.CutPrefix(arg, "--"); ok {
				flagName, _, _ = strings.Cut(flagName, "=")
				if _, ok := lookupSetting(strings.ReplaceAll(flagName, "-", "_")); !ok && flagName != configFlag {
					t.Errorf("service %s passes --%s, which is no flag", name, flagName)
				}
			}
		}
		// The configuration file the node reads, as mounted.
		path := env[configEnv]
		if path == "" {
			t.Errorf("service %s has no %s", name, configEnv)
			continue
		}
		host := ""
		for _, v := range svc.Volumes {
			if src, dst, ok := strings.Cut(v, ":"); ok && strings.TrimSuffix(dst, ":ro") == path {
				host = filepath.Join(deployDir, src)
			}
		}
		if host == "" {
			t.Errorf("service %s mounts nothing at %s", name, path)
			continue
		}
		env[configEnv] = host
		cfg, err := Load("serve", nil, envMap(env), io.Discard)
		if err != nil {
			t.Errorf("service %s: its configuration does not load: %v", name, err)
			continue
		}
		if cfg.EventStore == EventStoreEmbedded || cfg.Stats == StatsEmbedded || cfg.NodeName == "" || names[cfg.NodeName] {
			t.Errorf("service %s: event store %q, statistics %q, node name %q: want shared stores and a name of its own",
				name, cfg.EventStore, redactURL(cfg.Stats), cfg.NodeName)
		}
		names[cfg.NodeName] = true
		if !regexp.MustCompile(`(?m)^\s*server\s+\S+\s+` + regexp.QuoteMeta(name) + `:`).Match(haproxy) {
			t.Errorf("haproxy.cfg sends nothing to %s", name)
		}
	}
	slices.Sort(nodes)
	if len(nodes) < 3 {
		t.Errorf("compose.yaml runs tvsm nodes %v, want three", nodes)
	}
}

// settingOfEnv returns the setting whose environment variable is name.
func settingOfEnv(name string) (setting, bool) {
	for _, s := range settings {
		if s.envName() == name {
			return s, true
		}
	}
	return setting{}, false
}

// TestSystemdUnitDocumentationIsInstalled: every page the systemd unit's
// Documentation= names (what `systemctl help tvsm` opens) is a file that
// the install steps in the unit's header put there, from a file of the
// repository.
func TestSystemdUnitDocumentationIsInstalled(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deployDir, "tvsm.service"))
	if err != nil {
		t.Fatal(err)
	}
	installed := map[string]string{} // path on the host → file of the repository
	var docs []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "#")); len(f) > 0 && f[0] == "install" {
			if i := slices.Index(f, "-t"); i >= 0 && i+1 < len(f) {
				for _, pattern := range f[i+2:] {
					files, err := filepath.Glob(filepath.Join(deployDir, "..", pattern))
					if err != nil || len(files) == 0 {
						t.Errorf("the install step %q names %s, which matches no file of the repository", line, pattern)
					}
					for _, file := range files {
						installed[f[i+1]+"/"+filepath.Base(file)] = file
					}
				}
			}
		}
		if v, ok := strings.CutPrefix(line, "Documentation="); ok {
			docs = append(docs, strings.Fields(v)...)
		}
	}
	if len(docs) == 0 {
		t.Fatal("the unit names no Documentation=")
	}
	for _, uri := range docs {
		path, ok := strings.CutPrefix(uri, "file://")
		if !ok {
			t.Errorf("Documentation=%s: only installed files are named (file://)", uri)
			continue
		}
		if _, ok := installed[path]; !ok {
			t.Errorf("Documentation=%s: no install step in the unit's header puts a file there", uri)
		}
	}
}

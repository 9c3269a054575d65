package config

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"tvsm/internal/platform/logging"
)

// envMap is a fake environment for lookupEnv.
func envMap(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

// writeYAML writes body to a file in a fresh temporary directory.
func writeYAML(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tvsm.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadPrecedence(t *testing.T) {
	const fileBody = `
http: 127.0.0.1:9000
data: /var/lib/tvsm
log_level: debug
features: [billing]
shutdown_timeout: 30s
eod_timezone: Europe/Berlin
`
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		file   string // YAML body; "" means no file
		useEnv bool   // name the file through TVSM_CONFIG instead of --config
		env    map[string]string
		args   []string
		want   func(c *Config)
	}{
		{
			name: "defaults",
			want: func(c *Config) {},
		},
		{
			name: "file over defaults",
			file: fileBody,
			want: func(c *Config) {
				c.HTTPAddr = "127.0.0.1:9000"
				c.DataDir = "/var/lib/tvsm"
				c.LogLevel = slog.LevelDebug
				c.Features = []string{FeatureBilling}
				c.ShutdownTimeout = 30 * time.Second
				c.EndOfDayLocation = berlin
			},
		},
		{
			name:   "file named by TVSM_CONFIG",
			file:   "data: /srv/tvsm\n",
			useEnv: true,
			want:   func(c *Config) { c.DataDir = "/srv/tvsm" },
		},
		{
			name: "env over file",
			file: fileBody,
			env: map[string]string{
				"TVSM_HTTP":       ":7000",
				"TVSM_FEATURES":   " billing , billing ",
				"TVSM_LOG_FORMAT": "JSON",
				"TVSM_DATA":       "", // empty counts as unset
			},
			want: func(c *Config) {
				c.HTTPAddr = ":7000"
				c.DataDir = "/var/lib/tvsm"
				c.LogLevel = slog.LevelDebug
				c.LogFormat = logging.JSON
				c.Features = []string{FeatureBilling}
				c.ShutdownTimeout = 30 * time.Second
				c.EndOfDayLocation = berlin
			},
		},
		{
			name: "flags over env over file",
			file: fileBody,
			env: map[string]string{
				"TVSM_HTTP":                     ":7000",
				"TVSM_EVENTSTORE":               "esdb://localhost:2113?tls=false",
				"TVSM_ADMIN_LOGIN":              "root",
				"TVSM_ADMIN_PASSWORD":           "s3cret",
				"TVSM_READ_YOUR_WRITES_TIMEOUT": "2s",
				"TVSM_COMMIT_DELAY":             "0",
			},
			args: []string{
				"--http", "127.0.0.1:0",
				"--stats", "clickhouse://default@127.0.0.1:9000/tvsm",
				"--features", "",
				"--log-level=warn",
				"--eod-timezone", "UTC",
				"--http", ":1234", // repeated: the last one wins
			},
			want: func(c *Config) {
				c.HTTPAddr = ":1234"
				c.DataDir = "/var/lib/tvsm"
				c.EventStore = "esdb://localhost:2113?tls=false"
				c.Stats = "clickhouse://default@127.0.0.1:9000/tvsm"
				c.Features = []string{}
				c.LogLevel = slog.LevelWarn
				c.AdminLogin = "root"
				c.AdminPassword = "s3cret"
				c.ShutdownTimeout = 30 * time.Second
				c.ReadYourWritesTimeout = 2 * time.Second
				c.CommitDelay = 0
				c.EndOfDayLocation = time.UTC
			},
		},
		{
			name: "embedded statistics on a shared store when allowed",
			args: []string{"--eventstore", "esdb://localhost:2113?tls=false", "--stats-embedded-on-shared-store", "true"},
			want: func(c *Config) {
				c.EventStore = "esdb://localhost:2113?tls=false"
				c.StatsEmbeddedOnSharedStore = true
			},
		},
		{
			name: "features as a YAML string and an empty value",
			file: "features: billing\nadmin_login:\n",
			want: func(c *Config) { c.Features = []string{FeatureBilling} },
		},
		{
			name: "billing networks as a YAML list, ops listener",
			file: "billing_allowed_networks: [10.0.0.0/8, '127.0.0.1', '::ffff:192.168.0.0/112']\nops_http: 127.0.0.1:9100\n",
			want: func(c *Config) {
				c.BillingAllowedNetworks = []netip.Prefix{
					netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("192.168.0.0/16"),
				}
				c.OpsHTTPAddr = "127.0.0.1:9100"
			},
		},
		{
			name: "billing networks in the environment, comma-separated",
			env:  map[string]string{"TVSM_BILLING_ALLOWED_NETWORKS": " 10.0.0.0/8 ,127.0.0.0/8,", "TVSM_PASSWORD_CHECKS": "3"},
			want: func(c *Config) {
				c.BillingAllowedNetworks = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8")}
				c.PasswordChecks = 3
			},
		},
		{
			name: "YAML anchors and aliases",
			file: "features: [&f billing, *f]\n",
			want: func(c *Config) { c.Features = []string{FeatureBilling} },
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = v
			}
			args := tc.args
			if tc.file != "" {
				path := writeYAML(t, tc.file)
				if tc.useEnv {
					env["TVSM_CONFIG"] = path
				} else {
					args = append([]string{"--config", path}, args...)
				}
			}
			got, err := Load("serve", args, envMap(env), io.Discard)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := Defaults()
			tc.want(&want)
			assertConfig(t, got, want)
		})
	}
}

func assertConfig(t *testing.T, got, want Config) {
	t.Helper()
	// Locations are compared by name: LoadLocation returns a fresh value each time.
	if got.EndOfDayLocation.String() != want.EndOfDayLocation.String() {
		t.Errorf("EndOfDayLocation = %v, want %v", got.EndOfDayLocation, want.EndOfDayLocation)
	}
	got.EndOfDayLocation, want.EndOfDayLocation = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config mismatch\n got %+v\nwant %+v", got, want)
	}
}

func TestConfigFlagBeatsConfigEnv(t *testing.T) {
	fromFlag := writeYAML(t, "data: /from-flag\n")
	fromEnv := writeYAML(t, "data: /from-env\n")
	got, err := Load("serve", []string{"--config", fromFlag}, envMap(map[string]string{"TVSM_CONFIG": fromEnv}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got.DataDir != "/from-flag" {
		t.Fatalf("DataDir = %q, want the file named by --config", got.DataDir)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		args []string
		// want are substrings of the error: the source and the problem.
		want []string
	}{
		{name: "unknown YAML key", file: "http: :80\ncolour: blue\n", want: []string{`line 2: unknown key "colour"`}},
		{name: "config is not a YAML key", file: "config: other.yaml\n", want: []string{`unknown key "config"`}},
		{name: "unknown feature in YAML", file: "features: [billing, teleport]\n", want: []string{`key "features"`, `unknown feature "teleport"`}},
		{name: "unknown feature in env", env: map[string]string{"TVSM_FEATURES": "billing,x"}, want: []string{"env TVSM_FEATURES", `unknown feature "x"`}},
		{name: "unknown feature flag", args: []string{"--features", "x"}, want: []string{"-features", `unknown feature "x"`}},
		{name: "bad address in env", env: map[string]string{"TVSM_HTTP": "8080"}, want: []string{"env TVSM_HTTP", `"8080" is not host:port`}},
		{name: "bad port flag", args: []string{"--http", ":99999"}, want: []string{"-http", "port must be"}},
		{name: "bad port in YAML", file: "http: ':http'\n", want: []string{`key "http" (line 1)`, "port must be"}},
		{name: "empty data", file: "data: ''\n", want: []string{`key "data"`, "must not be empty"}},
		{name: "eventstore scheme", args: []string{"--eventstore", "postgres://db"}, want: []string{"-eventstore", `want "embedded" or a esdb:// URL`}},
		{name: "eventstore without host", env: map[string]string{"TVSM_EVENTSTORE": "esdb://"}, want: []string{"env TVSM_EVENTSTORE", "no host"}},
		{name: "stats scheme", file: "stats: mysql://h/db\n", want: []string{`key "stats"`, "clickhouse://"}},
		{name: "stats typo", env: map[string]string{"TVSM_STATS": "embeded"}, want: []string{"env TVSM_STATS"}},
		{name: "log level", env: map[string]string{"TVSM_LOG_LEVEL": "verbose"}, want: []string{"env TVSM_LOG_LEVEL", `unknown log level "verbose"`}},
		{name: "log format", args: []string{"--log-format", "xml"}, want: []string{"-log-format", "xml"}},
		{name: "duration without unit", file: "shutdown_timeout: 10\n", want: []string{`key "shutdown_timeout"`, "not a duration"}},
		{name: "commit delay too long", file: "commit_delay: 50ms\n", want: []string{`key "commit_delay"`, "between 0 and 10ms"}},
		{name: "retention in days", file: "erase_deleted_after: 3y\n", want: []string{`key "erase_deleted_after"`, "not a duration"}},
		{name: "retention of no days", args: []string{"--erase-deleted-after", "0d"}, want: []string{"-erase-deleted-after", "number of days"}},
		{name: "commit delay negative", args: []string{"--commit-delay", "-1ms"}, want: []string{"-commit-delay", "between 0 and 10ms"}},
		{name: "negative duration", env: map[string]string{"TVSM_READ_YOUR_WRITES_TIMEOUT": "-1s"}, want: []string{"env TVSM_READ_YOUR_WRITES_TIMEOUT", "positive"}},
		{name: "unknown time zone", args: []string{"--eod-timezone", "Mars/Olympus"}, want: []string{"-eod-timezone", "unknown time zone"}},
		{name: "Local time zone", file: "eod_timezone: Local\n", want: []string{`key "eod_timezone"`, "IANA"}},
		{name: "login with colon", env: map[string]string{"TVSM_ADMIN_LOGIN": "a:b"}, want: []string{"env TVSM_ADMIN_LOGIN", "colon"}},
		{name: "password without login", env: map[string]string{"TVSM_ADMIN_PASSWORD": "x"}, want: []string{"admin_password is set but admin_login is not"}},
		{name: "password is not a flag", args: []string{"--admin-password", "x"}, want: []string{"flag provided but not defined: -admin-password"}},
		{name: "mapping value", file: "http:\n  port: 80\n", want: []string{`key "http"`, "want a single value"}},
		{name: "list for a single value", file: "data: [a, b]\n", want: []string{`key "data"`, "want a single value"}},
		{name: "nested list of features", file: "features: [[billing]]\n", want: []string{`key "features"`, "list of plain values"}},
		{name: "repeated key", file: "http: :1\nhttp: :2\n", want: []string{`line 2: key "http" repeated`}},
		{name: "top level list", file: "- http\n", want: []string{"line 1: want a mapping"}},
		{name: "two documents", file: "http: :1\n---\nhttp: :2\n", want: []string{"line 2: a second YAML document"}},
		{name: "malformed YAML", file: "http: [\n", want: []string{"config file", "parse:"}},
		{name: "bad billing network", env: map[string]string{"TVSM_BILLING_ALLOWED_NETWORKS": "10.0.0.0/8,10.0.0/8"}, want: []string{"env TVSM_BILLING_ALLOWED_NETWORKS", `"10.0.0/8" is not a CIDR network`}},
		{name: "mapped network too wide", args: []string{"--billing-allowed-networks", "::ffff:0:0/90"}, want: []string{"-billing-allowed-networks", "at least 96 bits"}},
		{name: "bad ops listener", file: "ops_http: 9100\n", want: []string{`key "ops_http"`, "not host:port"}},
		{name: "negative password checks", args: []string{"--password-checks", "-1"}, want: []string{"-password-checks", "from 0 to 1024"}},
		{name: "zero password check wait", args: []string{"--password-check-wait", "0s"}, want: []string{"-password-check-wait"}},
		{name: "zero total failures", env: map[string]string{"TVSM_ADMIN_LOGIN_TOTAL_FAILURES": "0"}, want: []string{"env TVSM_ADMIN_LOGIN_TOTAL_FAILURES", "from 1 to 1000000"}},
		{name: "embedded statistics on a shared store", args: []string{"--eventstore", "esdb://localhost:2113?tls=false"}, want: []string{"stats: the embedded statistics store is one node's own", "stats_embedded_on_shared_store: true"}},
		{name: "embedded statistics on a shared store explicitly not allowed", env: map[string]string{"TVSM_EVENTSTORE": "esdb://h:2113", "TVSM_STATS_EMBEDDED_ON_SHARED_STORE": "false"}, want: []string{"stats_embedded_on_shared_store: true"}},
		{name: "bad bool", file: "stats_embedded_on_shared_store: yes please\n", want: []string{`key "stats_embedded_on_shared_store"`, "not true or false"}},
		{name: "positional argument", args: []string{"extra"}, want: []string{`unexpected argument "extra"`}},
		{name: "missing file", args: []string{"--config", "/nonexistent/tvsm.yaml"}, want: []string{"config file: open /nonexistent/tvsm.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeYAML(t, tc.file)}, args...)
			}
			_, err := Load("serve", args, envMap(tc.env), io.Discard)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSecretsStayOutOfErrorsAndLogs(t *testing.T) {
	_, err := Load("serve", nil, envMap(map[string]string{"TVSM_EVENTSTORE": "tcp://admin:hunter2@host:1113"}), io.Discard)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the password or is missing: %v", err)
	}

	c := Defaults()
	c.Stats = "clickhouse://default:hunter2@127.0.0.1:9000/tvsm"
	c.AdminLogin, c.AdminPassword = "root", "hunter2"
	var sb strings.Builder
	slog.New(slog.NewTextHandler(&sb, nil)).Info("config", "config", c)
	if out := sb.String(); strings.Contains(out, "hunter2") || !strings.Contains(out, "config.admin_password=***") {
		t.Fatalf("log line leaks a secret or lacks the mask: %s", out)
	}
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	_, err := Load("serve", []string{"-h"}, envMap(nil), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, w := range []string{"Usage: tvsm serve [flags]", "-http host:port", "(default :8080)", "-eventstore", "TVSM_ADMIN_PASSWORD"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("usage lacks %q:\n%s", w, out.String())
		}
	}
}

func TestValidate(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	c := Defaults()
	c.Features = []string{"nope"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "features") {
		t.Fatalf("Validate = %v, want a features error", err)
	}
	c = Defaults()
	c.EndOfDayLocation = nil
	if err := c.Validate(); err == nil {
		t.Fatal("Validate accepted a nil location")
	}
	if Defaults().HasFeature(FeatureBilling) {
		t.Fatal("billing is on by default")
	}
	c = Defaults()
	c.Features = []string{FeatureBilling}
	if !c.HasFeature(FeatureBilling) {
		t.Fatal("HasFeature(billing) = false with billing enabled")
	}
}

// TestExampleFileHoldsDefaults keeps deploy/tvsm.yaml honest: it lists every
// key with its default value.
func TestExampleFileHoldsDefaults(t *testing.T) {
	path := filepath.Join("..", "..", "..", "deploy", "tvsm.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := Defaults()
	if err := applyYAML(&got, data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	assertConfig(t, got, Defaults())
	for _, s := range settings {
		if !strings.Contains(string(data), "\n"+s.key+":") {
			t.Errorf("%s does not list key %q", path, s.key)
		}
	}
}

// TestDocsNameEverySetting keeps docs/configuration.md in step with the code.
func TestDocsNameEverySetting(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	defaults := Defaults()
	for _, s := range settings {
		names := []string{"`" + s.key + "`", "`" + s.envName() + "`"}
		if !s.noFlag {
			names = append(names, "`--"+s.flagName()+"`")
		}
		for _, n := range names {
			if !strings.Contains(doc, n) {
				t.Errorf("docs/configuration.md does not mention %s", n)
			}
		}
		if def := s.get(&defaults); def != "" && !strings.Contains(doc, "`"+def+"`") {
			t.Errorf("docs/configuration.md does not give the default %q of %s", def, s.key)
		}
	}
}

// FuzzParseNetworks: whatever the list, ParseNetworks does not panic, and
// what it accepts is written back (FormatNetworks) to the same networks.
func FuzzParseNetworks(f *testing.F) {
	for _, seed := range []string{"10.0.0.0/8,127.0.0.0/8", " 127.0.0.1 , ::1 ", "::ffff:10.0.0.0/104", "10.0.0/8", "", ",", "fe80::/10%eth0", "1.2.3.4/33"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		nets, err := ParseNetworks(v)
		if err != nil {
			return
		}
		again, err := ParseNetworks(FormatNetworks(nets))
		if err != nil || !slices.Equal(again, nets) {
			t.Fatalf("ParseNetworks(%q) = %v, written %q, read back %v, %v", v, nets, FormatNetworks(nets), again, err)
		}
		for _, n := range nets {
			if !n.IsValid() || n != n.Masked() || n.Addr().Is4In6() {
				t.Fatalf("ParseNetworks(%q) holds %v", v, n)
			}
		}
	})
}

func TestEraseDeletedAfterTakesDays(t *testing.T) {
	for in, want := range map[string]time.Duration{"1095d": 1095 * 24 * time.Hour, "8760h": 8760 * time.Hour, " 30d ": 30 * 24 * time.Hour} {
		got, err := parseDays(in)
		if err != nil || got != want {
			t.Errorf("parseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := parseDays(formatDays(got)); err != nil || back != got {
			t.Errorf("%q does not survive formatDays: %q", in, formatDays(got))
		}
	}
}

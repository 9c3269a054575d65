// Package config loads the settings of tvsm's subcommands.
//
// Every setting has one name that derives its three spellings: the YAML key
// (`log_level`), the command-line flag (`--log-level`) and the environment
// variable (`TVSM_LOG_LEVEL`). Sources are applied in increasing precedence:
//
//	defaults < YAML file (--config or TVSM_CONFIG) < environment TVSM_* < flags
//
// Every value goes through the same parser whatever its source, so a bad
// value is rejected identically and the error names where it came from.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"tvsm/internal/platform/logging"
)

// Backend names for EventStore and Stats.
const (
	EventStoreEmbedded = "embedded"
	StatsEmbedded      = "embedded"
)

// Feature flags.
const (
	// FeatureBilling turns on the billing proxy of the Device API.
	FeatureBilling = "billing"
)

// KnownFeatures lists every feature flag the binary understands.
var KnownFeatures = []string{FeatureBilling}

// Config is the configuration of `tvsm serve` (and of the other subcommands
// that open the same data).
type Config struct {
	// HTTPAddr is the listen address of the HTTP server (host:port).
	HTTPAddr string
	// OpsHTTPAddr, when set, is a second listen address serving /metrics,
	// /healthz, /readyz and Go's profiler, which then leave HTTPAddr.
	OpsHTTPAddr string
	// DataDir holds everything the embedded backends and snapshots store.
	DataDir string
	// MasterKeyFile holds the master key that wraps the subjects' keys
	// (32 bytes, standard base64). Empty: MasterKey, else on the embedded
	// store a file beside DataDir, generated on the first start.
	MasterKeyFile string
	// MasterKey is the master key itself, for deployments that pass
	// secrets in the environment (TVSM_MASTER_KEY).
	MasterKey string
	// EraseDeletedAfter erases the accounts deleted longer ago than this,
	// by a daily job; zero never does.
	EraseDeletedAfter time.Duration
	// EventStore is "embedded" or an EventStoreDB URL (esdb://, esdb+discover://).
	EventStore string
	// Stats is "embedded" or a ClickHouse URL (clickhouse://).
	Stats string
	// StatsEmbeddedOnSharedStore lets the embedded statistics store run on
	// a shared event store (EventStoreDB), where Validate refuses it by
	// default: every node would keep, and answer from, a copy of its own.
	StatsEmbeddedOnSharedStore bool
	// Features are the enabled feature flags, each one of KnownFeatures.
	Features []string
	// LogLevel is the lowest level logged.
	LogLevel slog.Level
	// LogFormat is the shape of log lines.
	LogFormat logging.Format
	// AccessLog logs every answered HTTP request at info level; without it
	// only failed ones are (4xx at info, 5xx at error), the rest at debug.
	AccessLog bool
	// AdminLogin and AdminPassword bootstrap the first superadmin when no
	// admin exists yet. Both optional.
	AdminLogin    string
	AdminPassword string
	// ShutdownTimeout bounds the graceful drain of in-flight requests.
	ShutdownTimeout time.Duration
	// CommitDelay bounds how long the embedded event store keeps a group of
	// appends waiting for the concurrent appenders expected to join it;
	// zero disables the wait.
	CommitDelay time.Duration
	// ReadYourWritesTimeout bounds how long a write waits for the read model
	// to apply its position before answering.
	ReadYourWritesTimeout time.Duration
	// EndOfDayLocation is the time zone whose midnight closes a statistics day.
	EndOfDayLocation *time.Location
	// NodeName names this node in delivery claims and connection events;
	// empty means the host name.
	NodeName string
	// BillingHeaderPrefix starts the account and provider headers sent to
	// billing (X-TMS-, the names TVIP's billing documentation gives; billing
	// that checks other names sets its prefix).
	BillingHeaderPrefix string
	// BillingTimeout bounds one proxied billing call.
	BillingTimeout time.Duration
	// BillingAllowedNetworks are networks billing may be reached in
	// although they are refused by default (loopback, private, link-local).
	BillingAllowedNetworks []netip.Prefix
	// Failed logins allowed per minute before 429, for administrators (HTTP
	// Basic) and devices (device login): per login from one client address,
	// per address, and per login from all addresses (this one refuses only
	// the addresses that failed the login themselves).
	AdminLoginFailures, AdminAddressFailures, AdminLoginTotalFailures    int
	DeviceLoginFailures, DeviceAddressFailures, DeviceLoginTotalFailures int
	// PasswordChecks bounds the admin password checks (bcrypt) running at
	// once; 0 means half the cores. PasswordCheckWait bounds a check's wait
	// for its turn; longer waits are answered 503 (the node is overloaded).
	PasswordChecks    int
	PasswordCheckWait time.Duration
	// MaxConnections caps the connections of the HTTP listener, in all and
	// from one client address (an IPv6 client's /64 counts as one);
	// MaxWebsocketsPerAddress caps the device websockets from one address.
	// 0 means no cap.
	MaxConnections, MaxConnectionsPerAddress, MaxWebsocketsPerAddress int
	// DefaultDeviceLimit is how many devices an account may bind when
	// neither it nor its provider sets devices_per_account_limit; 0 means
	// no limit.
	DefaultDeviceLimit int
}

// Defaults returns the configuration used when nothing is set: everything
// embedded, data under ./data, listening on :8080.
func Defaults() Config {
	return Config{
		HTTPAddr:                 ":8080",
		DataDir:                  "./data",
		EventStore:               EventStoreEmbedded,
		Stats:                    StatsEmbedded,
		Features:                 []string{},
		LogLevel:                 slog.LevelInfo,
		LogFormat:                logging.Text,
		ShutdownTimeout:          15 * time.Second,
		ReadYourWritesTimeout:    5 * time.Second,
		CommitDelay:              300 * time.Microsecond,
		EndOfDayLocation:         time.UTC,
		BillingHeaderPrefix:      "X-TMS-",
		BillingTimeout:           10 * time.Second,
		BillingAllowedNetworks:   []netip.Prefix{},
		AdminLoginFailures:       5,
		AdminAddressFailures:     20,
		AdminLoginTotalFailures:  20,
		DeviceLoginFailures:      5,
		DeviceAddressFailures:    20,
		DeviceLoginTotalFailures: 20,
		PasswordCheckWait:        2 * time.Second,
		MaxConnections:           100_000,
		MaxConnectionsPerAddress: 1000,
		MaxWebsocketsPerAddress:  500,
		DefaultDeviceLimit:       100,
	}
}

// HasFeature reports whether feature flag name is enabled.
func (c Config) HasFeature(name string) bool { return slices.Contains(c.Features, name) }

// Validate checks every field the way Load checks values from its sources, so
// a Config built in code is held to the same rules.
func (c Config) Validate() error {
	scratch := Defaults()
	for _, s := range settings {
		if err := s.set(&scratch, s.get(&c)); err != nil {
			return fmt.Errorf("%s: %w", s.key, err)
		}
	}
	if c.EndOfDayLocation == nil {
		return errors.New("eod_timezone: not set")
	}
	if c.AdminPassword != "" && c.AdminLogin == "" {
		return errors.New("admin_password is set but admin_login is not")
	}
	if c.EventStore != EventStoreEmbedded && c.Stats == StatsEmbedded && !c.StatsEmbeddedOnSharedStore {
		return errEmbeddedStatsOnSharedStore
	}
	return nil
}

// errEmbeddedStatsOnSharedStore explains why a node on a shared event store
// does not start with the embedded statistics store.
var errEmbeddedStatsOnSharedStore = errors.New("stats: the embedded statistics store is one node's own; " +
	"with a shared event store (eventstore: esdb://...) every node would keep and answer from its own copy, " +
	"which may differ between nodes around midnight: use ClickHouse (stats: clickhouse://host:9000/db), " +
	"or set stats_embedded_on_shared_store: true to accept that")

// LogValue renders the configuration for the start-up log line with secrets
// (the admin password, passwords inside URLs) masked.
func (c Config) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(settings))
	for _, s := range settings {
		v := s.get(&c)
		switch {
		case s.secret && v != "":
			v = "***"
		case s.url:
			v = redactURL(v)
		}
		attrs = append(attrs, slog.String(s.key, v))
	}
	return slog.GroupValue(attrs...)
}

// setting is one configuration value and its parser. Its key is the YAML key;
// the flag and the environment variable are derived from it.
type setting struct {
	key    string
	usage  string
	noFlag bool // secrets stay off the command line, where ps shows them
	secret bool // masked in logs
	url    bool // may carry credentials in its userinfo
	list   bool // YAML also accepts a sequence
	set    func(c *Config, v string) error
	get    func(c *Config) string
}

func (s setting) flagName() string { return strings.ReplaceAll(s.key, "_", "-") }
func (s setting) envName() string  { return envPrefix + strings.ToUpper(s.key) }

const (
	envPrefix  = "TVSM_"
	configFlag = "config"
	configEnv  = envPrefix + "CONFIG"
)

var settings = []setting{
	{
		key:   "http",
		usage: "`host:port` the HTTP server listens on",
		set: func(c *Config, v string) error {
			if err := checkListenAddr(v); err != nil {
				return err
			}
			c.HTTPAddr = v
			return nil
		},
		get: func(c *Config) string { return c.HTTPAddr },
	},
	{
		key:   "ops_http",
		usage: "`host:port` of a second listener for /metrics, /healthz, /readyz and /debug/pprof, which then leave --http (empty: none)",
		set: func(c *Config, v string) error {
			if v != "" {
				if err := checkListenAddr(v); err != nil {
					return err
				}
			}
			c.OpsHTTPAddr = v
			return nil
		},
		get: func(c *Config) string { return c.OpsHTTPAddr },
	},
	{
		key:   "data",
		usage: "data `directory` (event log, snapshots, embedded statistics)",
		set: func(c *Config, v string) error {
			if strings.TrimSpace(v) == "" {
				return errors.New("must not be empty")
			}
			c.DataDir = v
			return nil
		},
		get: func(c *Config) string { return c.DataDir },
	},
	{
		key: "master_key_file",
		usage: "`file` of the master key wrapping the subscribers' data keys (default: DATA.master-key, " +
			"generated on the first start on the embedded store; required on EventStoreDB, the same on every node)",
		set: func(c *Config, v string) error {
			c.MasterKeyFile = v
			return nil
		},
		get: func(c *Config) string { return c.MasterKeyFile },
	},
	{
		key:    "master_key",
		usage:  "the master key itself, 32 bytes in standard base64 (instead of master_key_file)",
		noFlag: true,
		secret: true,
		set: func(c *Config, v string) error {
			c.MasterKey = v
			return nil
		},
		get: func(c *Config) string { return c.MasterKey },
	},
	{
		key: "erase_deleted_after",
		usage: "erase the personal data of accounts deleted longer ago than this `duration` (1095d, 8760h), " +
			"by a daily job; empty: never",
		set: func(c *Config, v string) error {
			if strings.TrimSpace(v) == "" {
				c.EraseDeletedAfter = 0
				return nil
			}
			d, err := parseDays(v)
			if err != nil {
				return err
			}
			c.EraseDeletedAfter = d
			return nil
		},
		get: func(c *Config) string { return formatDays(c.EraseDeletedAfter) },
	},
	{
		key:   "eventstore",
		usage: "event store `backend`: \"embedded\" or an EventStoreDB URL (esdb://host:2113?tls=false)",
		url:   true,
		set: func(c *Config, v string) error {
			if err := checkBackend(v, EventStoreEmbedded, "esdb", "esdb+discover"); err != nil {
				return err
			}
			c.EventStore = v
			return nil
		},
		get: func(c *Config) string { return c.EventStore },
	},
	{
		key:   "stats",
		usage: "statistics `backend`: \"embedded\" or a ClickHouse URL (clickhouse://host:9000/db)",
		url:   true,
		set: func(c *Config, v string) error {
			if err := checkBackend(v, StatsEmbedded, "clickhouse"); err != nil {
				return err
			}
			c.Stats = v
			return nil
		},
		get: func(c *Config) string { return c.Stats },
	},
	{
		key:   "stats_embedded_on_shared_store",
		usage: "`true` lets the embedded statistics store run on a shared event store (EventStoreDB), each node keeping its own copy; refused by default",
		set: func(c *Config, v string) error {
			b, err := parseBool(v)
			c.StatsEmbeddedOnSharedStore = b
			return err
		},
		get: func(c *Config) string { return strconv.FormatBool(c.StatsEmbeddedOnSharedStore) },
	},
	{
		key:   "features",
		usage: "comma-separated `list` of feature flags to enable (known: " + strings.Join(KnownFeatures, ", ") + ")",
		list:  true,
		set: func(c *Config, v string) error {
			features, err := parseFeatures(v)
			if err != nil {
				return err
			}
			c.Features = features
			return nil
		},
		get: func(c *Config) string { return strings.Join(c.Features, ",") },
	},
	{
		key:   "log_level",
		usage: "lowest `level` logged: debug, info, warn or error",
		set: func(c *Config, v string) error {
			l, err := logging.ParseLevel(v)
			c.LogLevel = l
			return err
		},
		get: func(c *Config) string { return logging.LevelName(c.LogLevel) },
	},
	{
		key:   "log_format",
		usage: "log line `format`: text or json",
		set: func(c *Config, v string) error {
			f, err := logging.ParseFormat(v)
			c.LogFormat = f
			return err
		},
		get: func(c *Config) string { return string(c.LogFormat) },
	},
	{
		key:   "access_log",
		usage: "`true` logs every answered HTTP request at info level; false (default) logs failed requests only, the rest at debug",
		set: func(c *Config, v string) error {
			b, err := parseBool(v)
			c.AccessLog = b
			return err
		},
		get: func(c *Config) string { return strconv.FormatBool(c.AccessLog) },
	},
	{
		key:   "admin_login",
		usage: "`login` of the superadmin created on first start when no admin exists",
		set: func(c *Config, v string) error {
			if strings.ContainsAny(v, ": \t\r\n") {
				// Basic auth splits at the first colon; blanks are typos.
				return fmt.Errorf("%q must not contain a colon or whitespace", v)
			}
			c.AdminLogin = v
			return nil
		},
		get: func(c *Config) string { return c.AdminLogin },
	},
	{
		key:    "admin_password",
		usage:  "password of that superadmin (generated and printed once when empty)",
		noFlag: true,
		secret: true,
		set: func(c *Config, v string) error {
			c.AdminPassword = v
			return nil
		},
		get: func(c *Config) string { return c.AdminPassword },
	},
	{
		key:   "shutdown_timeout",
		usage: "longest `duration` a graceful shutdown waits for in-flight requests",
		set: func(c *Config, v string) error {
			d, err := parsePositiveDuration(v)
			c.ShutdownTimeout = d
			return err
		},
		get: func(c *Config) string { return c.ShutdownTimeout.String() },
	},
	{
		key:   "commit_delay",
		usage: "longest `duration` a group of appends of the embedded event store waits, once no fsync runs, for the concurrent appenders expected to join it; never longer than one fsync takes (0 = no wait, at most 10ms)",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			switch {
			case err != nil:
				return fmt.Errorf("%q is not a duration such as 300us or 1ms", v)
			case d < 0 || d > maxCommitDelay:
				return fmt.Errorf("%q must be between 0 and %v", v, maxCommitDelay)
			}
			c.CommitDelay = d
			return nil
		},
		get: func(c *Config) string { return c.CommitDelay.String() },
	},
	{
		key:   "read_your_writes_timeout",
		usage: "longest `duration` a write waits for the read model to apply it before answering",
		set: func(c *Config, v string) error {
			d, err := parsePositiveDuration(v)
			c.ReadYourWritesTimeout = d
			return err
		},
		get: func(c *Config) string { return c.ReadYourWritesTimeout.String() },
	},
	{
		key:   "eod_timezone",
		usage: "IANA time `zone` whose midnight closes a statistics day",
		set: func(c *Config, v string) error {
			loc, err := parseLocation(v)
			if err != nil {
				return err
			}
			c.EndOfDayLocation = loc
			return nil
		},
		get: func(c *Config) string {
			if c.EndOfDayLocation == nil {
				return ""
			}
			return c.EndOfDayLocation.String()
		},
	},
	{
		key:   "node_name",
		usage: "`name` of this node in delivery claims and connection events (default: the host name)",
		set: func(c *Config, v string) error {
			if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
				return errors.New("must be printable ASCII without spaces")
			}
			c.NodeName = v
			return nil
		},
		get: func(c *Config) string { return c.NodeName },
	},
	{
		key:   "billing_header_prefix",
		usage: "`prefix` of the account and provider headers sent to billing",
		set: func(c *Config, v string) error {
			if v == "" || strings.ContainsFunc(v, func(r rune) bool {
				return !(r == '-' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
			}) {
				return errors.New("must be a non-empty header name prefix (letters, digits, -)")
			}
			c.BillingHeaderPrefix = v
			return nil
		},
		get: func(c *Config) string { return c.BillingHeaderPrefix },
	},
	{
		key:   "billing_timeout",
		usage: "longest `duration` of one proxied billing call (then 504)",
		set: func(c *Config, v string) error {
			d, err := parsePositiveDuration(v)
			c.BillingTimeout = d
			return err
		},
		get: func(c *Config) string { return c.BillingTimeout.String() },
	},
	{
		key:   "billing_allowed_networks",
		usage: "comma-separated CIDR `networks` billing may be reached in although refused by default (loopback, private, link-local), e.g. 10.0.0.0/8,127.0.0.0/8",
		list:  true,
		set: func(c *Config, v string) error {
			nets, err := ParseNetworks(v)
			c.BillingAllowedNetworks = nets
			return err
		},
		get: func(c *Config) string { return FormatNetworks(c.BillingAllowedNetworks) },
	},
	failuresSetting("admin_login_failures", "failed Basic logins of one administrator from one client address", func(c *Config) *int { return &c.AdminLoginFailures }),
	failuresSetting("admin_address_failures", "failed Basic logins from one client address", func(c *Config) *int { return &c.AdminAddressFailures }),
	failuresSetting("admin_login_total_failures", "failed Basic logins of one administrator from all addresses (refusing only addresses that failed it)", func(c *Config) *int { return &c.AdminLoginTotalFailures }),
	failuresSetting("device_login_failures", "failed device logins of one account login from one client address", func(c *Config) *int { return &c.DeviceLoginFailures }),
	failuresSetting("device_address_failures", "failed device logins from one client address", func(c *Config) *int { return &c.DeviceAddressFailures }),
	failuresSetting("device_login_total_failures", "failed device logins of one account login from all addresses (refusing only addresses that failed it)", func(c *Config) *int { return &c.DeviceLoginTotalFailures }),
	{
		key:   "password_checks",
		usage: "`count` of admin password checks (bcrypt) run at once; more wait their turn, logins that succeeded from the address before first (0 = half the cores)",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 || n > 1024 {
				return fmt.Errorf("%q must be a whole number from 0 to 1024", v)
			}
			c.PasswordChecks = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(c.PasswordChecks) },
	},
	{
		key:   "password_check_wait",
		usage: "longest `duration` an admin password check waits for its turn; a login that would wait longer is answered 503 (the node is overloaded)",
		set: func(c *Config, v string) error {
			d, err := parsePositiveDuration(v)
			c.PasswordCheckWait = d
			return err
		},
		get: func(c *Config) string { return c.PasswordCheckWait.String() },
	},
	countSetting("max_connections", "connections the HTTP listener holds at once; more are answered 503 and closed", 10_000_000,
		func(c *Config) *int { return &c.MaxConnections }),
	countSetting("max_connections_per_address", "connections one client address (an IPv6 /64) holds at once; more are answered 429 and closed", 10_000_000,
		func(c *Config) *int { return &c.MaxConnectionsPerAddress }),
	countSetting("max_websockets_per_address", "device websockets one client address (an IPv6 /64) holds at once; more upgrades are answered 429", 10_000_000,
		func(c *Config) *int { return &c.MaxWebsocketsPerAddress }),
	countSetting("default_device_limit", "devices an account may bind when neither it nor its provider sets devices_per_account_limit", math.MaxInt32,
		func(c *Config) *int { return &c.DefaultDeviceLimit }),
}

// countSetting is a cap from 0 (none) to max.
func countSetting(key, what string, max int, field func(*Config) *int) setting {
	return setting{
		key:   key,
		usage: "`count` of " + what + " (0 = no limit)",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 || n > max {
				return fmt.Errorf("%q must be a whole number from 0 to %d", v, max)
			}
			*field(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*field(c)) },
	}
}

// failuresSetting is a limit of failed logins per minute.
func failuresSetting(key, what string, field func(*Config) *int) setting {
	return setting{
		key:   key,
		usage: "`count` of " + what + " allowed per minute before 429",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > 1_000_000 {
				return fmt.Errorf("%q must be a whole number from 1 to 1000000", v)
			}
			*field(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*field(c)) },
	}
}

func lookupSetting(key string) (setting, bool) {
	for _, s := range settings {
		if s.key == key {
			return s, true
		}
	}
	return setting{}, false
}

func checkListenAddr(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", v, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port must be a number from 0 to 65535", v)
	}
	return nil
}

// checkBackend accepts the embedded name or a URL with one of schemes and a
// host. Only the form is checked here; the backend checks the rest on open.
func checkBackend(v, embedded string, schemes ...string) error {
	if v == embedded {
		return nil
	}
	want := fmt.Sprintf("want %q or a %s:// URL", embedded, schemes[0])
	u, err := url.Parse(v)
	if err != nil {
		// url.Error repeats the whole value, which may hold a password.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not a URL (%v); %s", err, want)
	}
	if !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("%q: %s", u.Redacted(), want)
	}
	if u.Host == "" {
		return fmt.Errorf("%q: URL has no host", u.Redacted())
	}
	return nil
}

func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	return u.Redacted()
}

// parseFeatures splits a comma-separated list, ignoring blanks and repeats.
func parseFeatures(v string) ([]string, error) {
	features := []string{}
	for f := range strings.SplitSeq(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" || slices.Contains(features, f) {
			continue
		}
		if !slices.Contains(KnownFeatures, f) {
			return nil, fmt.Errorf("unknown feature %q (known: %s)", f, strings.Join(KnownFeatures, ", "))
		}
		features = append(features, f)
	}
	return features, nil
}

// maxCommitDelay bounds commit_delay: every write of a busy node waits up to
// this long for its fsync, on top of the fsync itself.
const maxCommitDelay = 10 * time.Millisecond

func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("%q is not true or false", v)
	}
	return b, nil
}

// parseDays reads a positive duration given in days ("1095d") or as Go
// writes durations ("8760h").
func parseDays(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 || days > 100*366 {
			return 0, fmt.Errorf("%q is not a number of days such as 1095d", v)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return parsePositiveDuration(v)
}

// formatDays writes d as parseDays reads it: whole days as "Nd".
func formatDays(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	return d.String()
}

func parsePositiveDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 5s or 1m30s", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", v)
	}
	return d, nil
}

func parseLocation(v string) (*time.Location, error) {
	// "" and "Local" would make the day boundary depend on the host, and
	// nodes of one cluster must agree on it.
	if v == "" || v == "Local" {
		return nil, fmt.Errorf("%q: name an IANA time zone such as UTC or Europe/Berlin", v)
	}
	loc, err := time.LoadLocation(v)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", v)
	}
	return loc, nil
}

// ParseNetworks parses a comma-separated list of CIDR networks (blanks
// ignored), such as "10.0.0.0/8, 127.0.0.0/8". A bare address is taken as
// the network of that one address; IPv4-mapped IPv6 networks as IPv4.
func ParseNetworks(v string) ([]netip.Prefix, error) {
	nets := []netip.Prefix{}
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if a, aerr := netip.ParseAddr(part); err != nil && aerr == nil {
			p, err = netip.PrefixFrom(a, a.BitLen()), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR network such as 10.0.0.0/8", part)
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return nil, fmt.Errorf("%q: an IPv4-mapped network needs at least 96 bits", part)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		nets = append(nets, p.Masked())
	}
	return nets, nil
}

// FormatNetworks writes networks as ParseNetworks reads them.
func FormatNetworks(nets []netip.Prefix) string {
	parts := make([]string, len(nets))
	for i, n := range nets {
		parts[i] = n.String()
	}
	return strings.Join(parts, ",")
}

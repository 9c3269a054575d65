package chtest

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return u.Host
}

func TestTargetURLKeepsCredentialsAndQuery(t *testing.T) {
	base, _ := url.Parse("clickhouse://u:p@h:9000/ignored?dial_timeout=2s")
	target := &Target{base: *base}
	if got, want := target.URL("t1"), "clickhouse://u:p@h:9000/t1?dial_timeout=2s"; got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
}

func TestFailureSaysWhetherRequired(t *testing.T) {
	cause := errors.New("no binary")
	t.Setenv(RequireEnv, "1")
	if msg := failure(cause); !strings.Contains(msg, RequireEnv+"=1") || !strings.Contains(msg, "no binary") {
		t.Errorf("required: %q", msg)
	}
	t.Setenv(RequireEnv, "")
	if msg := failure(cause); strings.Contains(msg, RequireEnv) || !strings.Contains(msg, "unusable") {
		t.Errorf("not required: %q", msg)
	}
}

func TestExternalTargetFromEnv(t *testing.T) {
	t.Setenv(URLEnv, "clickhouse://u:p@example.test:9000/x?dial_timeout=1s")
	target, err := startShared()
	if err != nil || target.Server != nil {
		t.Fatalf("startShared: %+v, %v; want an external target", target, err)
	}
	if got, want := target.URL("db"), "clickhouse://u:p@example.test:9000/db?dial_timeout=1s"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	t.Setenv(URLEnv, "http://example.test:8123")
	if _, err := startShared(); err == nil {
		t.Error("an http:// URL was accepted")
	}
}

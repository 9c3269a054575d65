package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestNewJSONRespectsLevel(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, slog.LevelWarn, JSON)
	log.Info("dropped")
	log.Warn("kept", "k", 1)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1: %q", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("line is not JSON: %v", err)
	}
	if rec["msg"] != "kept" || rec["level"] != "WARN" || rec["k"] != float64(1) {
		t.Fatalf("unexpected record %v", rec)
	}
}

func TestNewText(t *testing.T) {
	var buf bytes.Buffer
	New(&buf, slog.LevelDebug, Text).Debug("hello", "k", "v")
	if got := buf.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "msg=hello k=v") {
		t.Fatalf("unexpected text line %q", got)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"debug", slog.LevelDebug, false},
		{"INFO", slog.LevelInfo, false},
		{" warn ", slog.LevelWarn, false},
		{"error", slog.LevelError, false},
		{"warning", 0, true},
		{"", 0, true},
	} {
		got, err := ParseLevel(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ParseLevel(%q) = %v, %v", tc.in, got, err)
		}
		if !tc.wantErr {
			if back, _ := ParseLevel(LevelName(got)); back != got {
				t.Errorf("LevelName(%v) does not round-trip", got)
			}
		}
	}
	if f, err := ParseFormat("JSON"); err != nil || f != JSON {
		t.Errorf("ParseFormat(JSON) = %v, %v", f, err)
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) succeeded")
	}
}

// Package logging builds the service's structured logger (log/slog) from the
// configured level and format, so every subcommand logs the same way.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Format is the shape of log lines.
type Format string

const (
	// Text is logfmt-style key=value lines, for people reading a terminal.
	Text Format = "text"
	// JSON is one JSON object per line, for log shippers.
	JSON Format = "json"
)

// ParseFormat accepts "text" or "json" (any case).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case Text, JSON:
		return f, nil
	}
	return "", fmt.Errorf("unknown log format %q (want text or json)", s)
}

// ParseLevel accepts debug, info, warn or error (any case).
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}

// LevelName is the inverse of ParseLevel for the four levels it accepts.
func LevelName(l slog.Level) string {
	return strings.ToLower(l.String())
}

// New returns a logger writing to w in format f, dropping records below level.
func New(w io.Writer, level slog.Level, f Format) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if f == JSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

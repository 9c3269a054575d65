package chtest

import (
	"os"
	"testing"
)

func TestStartStopRestartClose(t *testing.T) {
	s := StartOwn(t)
	if err := ping(s.Addr); err != nil {
		t.Fatalf("ping after start: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := ping(s.Addr); err == nil {
		t.Fatal("ping answered after stop")
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := ping(s.Addr); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
	s.Kill()
	if err := ping(s.Addr); err == nil {
		t.Fatal("ping answered after kill")
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("restart after kill: %v", err)
	}
	if err := ping(s.Addr); err != nil {
		t.Fatalf("ping after the restart after kill: %v", err)
	}
	dir := s.dir
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory %s still there after close: %v", dir, err)
	}
}

func TestSharedTargetURL(t *testing.T) {
	target := Shared(t)
	if target.Server == nil && os.Getenv(URLEnv) == "" {
		t.Fatal("no server started and no external URL")
	}
	if err := ping(hostOf(t, target.URL("x"))); err != nil {
		t.Fatalf("ping shared target: %v", err)
	}
}

func TestMain(m *testing.M) { os.Exit(Main(m)) }

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReadmeFirstSteps runs the shell commands of README.md's "First
// steps", as written, against a fresh node: `tvsm serve` started as its
// own process with the superadmin the README names, localhost:8080 and
// PASSWORD replaced by the node's address and password, bin/tvsm being this
// binary. Every curl must succeed (--fail-with-body is added), and every
// command started in the background must exit 0.
func TestReadmeFirstSteps(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed to run the README's commands (.ci/run installs it)")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script := firstSteps(t, string(readme))

	const password = "readme-walkthrough"
	node := startProcess(t, "serve", []string{"TVSM_ADMIN_LOGIN=admin", "TVSM_ADMIN_PASSWORD=" + password},
		"serve", "--http", "127.0.0.1:0", "--data", t.TempDir(), "--log-format", "json")
	addr := node.addr()

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\n" + runMainEnv + "=1 exec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "tvsm"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	script = strings.ReplaceAll(script, "localhost:8080", addr)
	script = strings.ReplaceAll(script, "PASSWORD", password)
	script = regexp.MustCompile(`(^|\n)curl `).ReplaceAllString(script, "${1}curl --fail-with-body -sS ")
	// Background commands are waited for at the end; each must exit 0.
	script = regexp.MustCompile(`&[ \t]*(\n|$)`).ReplaceAllString(script, "& pids=\"$$pids $$!\"$1")
	script = "set -e\npids=\n" + script + "\nfor p in $pids; do wait $p; done\n"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	t.Logf("README first steps:\n%s", out)
	if err != nil {
		t.Fatalf("the README's commands failed: %v", err)
	}
	for _, want := range []string{`"login":"alice"`, `"token":"`, `"send_id":1`, `"acked":3`, "X-Tvsm-Closed-Through: "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %s", want)
		}
	}
}

// firstSteps returns the shell block of README.md's "First steps", its
// continued lines joined.
func firstSteps(t *testing.T, readme string) string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## First steps\n")
	if !ok {
		t.Fatal(`README.md has no "## First steps"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("First steps has no sh block")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("First steps' sh block does not end")
	}
	return strings.ReplaceAll(block, "\\\n", " ")
}

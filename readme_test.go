package tvsm_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestReadmeFirstSteps does what README.md tells a new user, in a fresh
// copy of the repository (the files git tracks or would add, nothing
// built): `make run`, which must build bin/tvsm and start it; then, in
// another shell, the commands of "First steps" as written, with the
// superadmin password that make run's log printed; then the admin
// console's commands (a demo history, served). Every curl must succeed
// (--fail-with-body is added) and every command started in the background
// must exit 0.
//
// The one liberty taken: TVSM_HTTP=127.0.0.1:0 makes every node listen on
// a free port instead of 8080, which the machine running the tests may
// not have free, and localhost:8080 in the commands becomes that address.
func TestReadmeFirstSteps(t *testing.T) {
	for _, tool := range []string{"make", "curl", "git", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to follow the README (.ci/run installs it)", tool)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	clone := freshClone(t)

	node := startCommand(t, clone, nil, "make", "run")
	addr := node.waitFor(t, `msg=listening listener=api addr=(\S+)`, 15*time.Minute)
	password := node.waitFor(t, `note its password.*? password=(\S+)`, time.Second)
	if _, err := os.Stat(filepath.Join(clone, "bin", "tvsm")); err != nil {
		t.Fatalf("make run did not leave bin/tvsm: %v", err)
	}
	if out := runScript(t, clone, "bin/tvsm version"); strings.Contains(out, "tvsm dev") {
		t.Errorf("bin/tvsm from make run has no version stamped: %s", out)
	}

	script := shellBlock(t, string(readme), "First steps")
	script = strings.ReplaceAll(script, "localhost:8080", addr)
	script = strings.ReplaceAll(script, "PASSWORD", password)
	out := runScript(t, clone, script)
	for _, want := range []string{`"login":"alice"`, `"token":"`, `"send_id":1`, `"acked":3`, "X-Tvsm-Closed-Through: ", "no difference"} {
		if !strings.Contains(out, want) {
			t.Errorf("the first steps' output lacks %s", want)
		}
	}
	node.stop(t)

	// The admin console's block: a demo history in a fresh data directory,
	// then a node serving it. Its last command serves until stopped.
	console := shellBlock(t, string(readme), "The admin console")
	console = strings.ReplaceAll(console, "/tmp/demo", filepath.Join(t.TempDir(), "demo"))
	lines := strings.Split(strings.TrimSpace(console), "\n")
	serveLine := lines[len(lines)-1]
	if !strings.Contains(serveLine, "bin/tvsm serve") {
		t.Fatalf("the console block does not end with bin/tvsm serve: %q", serveLine)
	}
	started := time.Now()
	runScript(t, clone, strings.Join(lines[:len(lines)-1], "\n"))
	demo := startCommand(t, clone, nil, "bash", "-c", serveLine)
	addr = demo.waitFor(t, `msg=listening listener=api addr=(\S+)`, time.Minute)
	checkDemo(t, addr, serveLine, started)
	demo.stop(t)
}

// checkDemo checks what the README promises of the demo node at addr: the
// console's page, and 90 closed days of statistics, the last yesterday (of
// when the demo started: a midnight since then makes the day before now
// the newest, which the node closes a minute later, so either may be the
// last closed).
func checkDemo(t *testing.T, addr, serveLine string, started time.Time) {
	t.Helper()
	m := regexp.MustCompile(`TVSM_ADMIN_LOGIN=(\S+) TVSM_ADMIN_PASSWORD=(\S+)`).FindStringSubmatch(serveLine)
	if m == nil {
		t.Fatalf("the serve command names no admin: %q", serveLine)
	}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.SetBasicAuth(m[1], m[2])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	if resp, body := get("/admin/"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<html") {
		t.Errorf("GET /admin/: %d %.200s", resp.StatusCode, body)
	}
	yesterday := started.UTC().AddDate(0, 0, -1)
	newest := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	from := yesterday.AddDate(0, 0, -89).Format(time.DateOnly)
	resp, body := get("/api/stats/subscription?from=" + from + "&to=" + yesterday.Format(time.DateOnly))
	if closed := resp.Header.Get("X-TVSM-Closed-Through"); resp.StatusCode != http.StatusOK || (closed != yesterday.Format(time.DateOnly) && closed != newest) {
		t.Fatalf("demo statistics: %d, closed through %q, want yesterday %s: %.300s", resp.StatusCode, closed, yesterday.Format(time.DateOnly), body)
	}
	days := map[string]bool{}
	for _, d := range regexp.MustCompile(`"date":"([0-9-]+)`).FindAllStringSubmatch(body, -1) {
		days[d[1]] = true
	}
	if len(days) != 90 {
		t.Errorf("the demo's statistics have %d days from %s to yesterday, want 90", len(days), from)
	}
}

// freshClone copies the repository's files (those git tracks, and new ones
// it would add) into a new directory with a git history of its own, as a
// clone of the work tree would be: nothing built, no ./data.
func freshClone(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "tvsm")
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		info, err := os.Lstat(f)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or not a file
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	runScript(t, dir, "git init -q && git add -A && git -c user.name=readme -c user.email=readme@example.invalid commit -q -m clone")
	return dir
}

// shellBlock returns the first sh block of README.md's section heading,
// its continued lines joined.
func shellBlock(t *testing.T, readme, heading string) string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", "## "+heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("%s has no sh block", heading)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("%s's sh block does not end", heading)
	}
	return strings.ReplaceAll(block, "\\\n", " ")
}

// userEnv is the environment a user's shell would have: the test's, less
// the TVSM_* settings of whoever runs the tests, and every node on a free
// port.
func userEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TVSM_") {
			env = append(env, kv)
		}
	}
	return append(env, "TVSM_HTTP=127.0.0.1:0")
}

// runScript runs script with bash in dir, stopping at the first failure
// (curl answers non-2xx as failures, background commands are waited for
// and must exit 0), and returns its output.
func runScript(t *testing.T, dir, script string) string {
	t.Helper()
	script = regexp.MustCompile(`(^|\n)curl `).ReplaceAllString(script, "${1}curl --fail-with-body -sS ")
	script = regexp.MustCompile(`&[ \t]*(\n|$)`).ReplaceAllString(script, "& pids=\"$$pids $$!\"$1")
	script = "set -e\npids=\n" + script + "\nfor p in $pids; do wait $p; done\n"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, userEnv()
	out, err := cmd.CombinedOutput()
	t.Logf("$ %s\n%s", strings.TrimSpace(script), out)
	if err != nil {
		t.Fatalf("the README's commands failed: %v", err)
	}
	return string(out)
}

// command is a long-running command of the README (make run, a node), in
// a process group of its own so that stopping it stops what it started.
type command struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
}

func (c *command) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *command) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

func startCommand(t *testing.T, dir string, env []string, name string, args ...string) *command {
	t.Helper()
	c := &command{cmd: exec.Command(name, args...), exited: make(chan struct{})}
	c.cmd.Dir, c.cmd.Env = dir, append(userEnv(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c, c
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.exited
		}
	})
	return c
}

// waitFor waits until the command's output matches re and returns the
// first group of the match.
func (c *command) waitFor(t *testing.T, re string, timeout time.Duration) string {
	t.Helper()
	pattern := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for {
		if m := pattern.FindStringSubmatch(c.output()); m != nil {
			return m[1]
		}
		select {
		case <-c.exited:
			t.Fatalf("%s exited before printing %s:\n%s", c.cmd, re, c.output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s printed no %s within %v:\n%s", c.cmd, re, timeout, c.output())
		}
	}
}

// stop sends SIGINT to the command's process group, as Ctrl-C in its
// terminal would, and waits for it to end.
func (c *command) stop(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-c.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30 s of Ctrl-C:\n%s", c.cmd, c.output())
	}
	if out := c.output(); !strings.Contains(out, "msg=stopped") {
		t.Errorf("%s stopped without its last log line:\n%s", c.cmd, lastLines(out, 20))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

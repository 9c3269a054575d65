package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tvsm/internal/testkit/nodetest"
)

func TestImportCommandLine(t *testing.T) {
	isolateEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import"}, "import from what?"},
		{[]string{"import", "tms"}, "import from what?"},
		{[]string{"import", "tvip"}, "--from is required"},
		{[]string{"import", "tvip", "--from", "tms.example.net"}, "want an http:// or https:// URL"},
		{[]string{"import", "tvip", "--from", "http://tms", "extra"}, `unexpected argument "extra"`},
		{[]string{"import", "tvip", "--from", "http://tms", "--workers", "0"}, "--workers must be 1 to 256"},
		{[]string{"import", "tvip", "--from", "http://tms"}, "TVSM_ADMIN_PASSWORD"},
	} {
		code, stdout, stderr := runCapture(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want %d and %q", c.args, code, stderr, stdout, exitUsage, c.want)
		}
	}
	t.Setenv("TVSM_ADMIN_PASSWORD", "x")
	pins := filepath.Join(t.TempDir(), "pins.csv")
	if err := os.WriteFile(pins, []byte("login,pin_md5\nalice,not-a-digest\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCapture(t, "import", "tvip", "--from", "http://tms", "--pins", pins); code != exitUsage || !strings.Contains(stderr, "line 2") {
		t.Errorf("a bad pins file: exit %d, %q; want %d naming line 2", code, stderr, exitUsage)
	}
}

// tvsm import tvip from a node filled by tvsm demo into a new node: every
// object copied (--verify clean, exit 0); run again, nothing is appended.
func TestImportFromDemoNode(t *testing.T) {
	isolateEnv(t)
	t.Setenv("TVSM_ADMIN_LOGIN", nodetest.SuperLogin)
	t.Setenv("TVSM_ADMIN_PASSWORD", nodetest.SuperPassword)
	out := filepath.Join(t.TempDir(), "demo")
	if code, stdout, stderr := runCapture(t, "demo", "--data", out, "--quiet", "--days", "1", "--accounts", "40", "--seed", "7"); code != exitOK {
		t.Fatalf("tvsm demo: exit %d\n%s%s", code, stdout, stderr)
	}
	dir := t.TempDir()
	nodetest.Adopt(t, out, dir)
	src := nodetest.StartWith(t, nodetest.Options{Dir: dir})
	dst := nodetest.Start(t)
	from, err := url.Parse(src.URL)
	if err != nil {
		t.Fatal(err)
	}
	from.User = url.UserPassword(src.SuperLogin, src.SuperPassword)
	importTVIP := func(args ...string) (int, string, string) {
		t.Helper()
		return runCapture(t, append([]string{"import", "tvip", "--from", from.String(), "--url", dst.URL, "--workers", "4"}, args...)...)
	}

	code, stdout, stderr := importTVIP("--verify")
	if code != exitOK || !strings.Contains(stdout, "verify: the node holds every field") {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("tvsm import tvip --verify:\n%s", stdout)
	for _, want := range []string{"accounts without a password: ", "resource", "account_subscriptions"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	if strings.Contains(stderr, "\r") || !strings.Contains(stderr, "accounts: ") {
		t.Errorf("progress on a pipe should be plain lines per resource:\n%s", stderr)
	}

	head, err := dst.Store.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = importTVIP()
	if code != exitOK || !strings.Contains(stdout, "\n0 writes in") {
		t.Fatalf("second import: exit %d\n%s%s", code, stdout, stderr)
	}
	if again, _ := dst.Store.Head(context.Background()); again != head {
		t.Errorf("the second import appended events: %v → %v", head, again)
	}
}

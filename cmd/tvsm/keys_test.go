package main

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tvsm/eventstore/embedded"
	"tvsm/eventstore/sealed"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/wiring/node"
)

// tvsm keys rotate on a demo node: every key rewrapped under the new
// master key, the node then serves with the new key (its accounts read),
// a second run rewraps nothing, and a running node's data is refused.
func TestKeysRotate(t *testing.T) {
	isolateEnv(t)
	t.Setenv("TVSM_ADMIN_LOGIN", nodetest.SuperLogin)
	t.Setenv("TVSM_ADMIN_PASSWORD", nodetest.SuperPassword)
	data := filepath.Join(t.TempDir(), "demo")
	if code, stdout, stderr := runCapture(t, "demo", "--data", data, "--quiet", "--days", "1", "--accounts", "20", "--seed", "3"); code != exitOK {
		t.Fatalf("tvsm demo: exit %d\n%s%s", code, stdout, stderr)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	newFile := filepath.Join(t.TempDir(), "new.key")
	if err := os.WriteFile(newFile, sealed.EncodeMasterKey(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	// A node running on the data holds the event store's lock: the
	// rotation is refused, and changes nothing.
	running, err := embedded.Open(filepath.Join(data, "events"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCapture(t, "keys", "rotate", "--data", data, "--new-master-key-file", newFile); code == exitOK ||
		!strings.Contains(stderr, "is the node stopped?") {
		t.Fatalf("a rotation beside a running node: exit %d, %s", code, stderr)
	}
	if err := running.Close(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCapture(t, "keys", "rotate", "--data", data, "--new-master-key-file", newFile)
	if code != exitOK || !strings.HasPrefix(stdout, "rewrapped ") || strings.HasPrefix(stdout, "rewrapped 0 ") {
		t.Fatalf("tvsm keys rotate: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCapture(t, "keys", "rotate", "--data", data, "--new-master-key-file", newFile,
		"--master-key-file", node.DefaultMasterKeyFile(data)); code != exitOK || !strings.HasPrefix(stdout, "rewrapped 0 keys") {
		t.Fatalf("a second rotation: exit %d, %s", code, stdout)
	}

	dir := t.TempDir()
	nodetest.Adopt(t, data, dir)
	master, err := sealed.LoadMasterKey(newFile)
	if err != nil {
		t.Fatal(err)
	}
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir, MasterKey: master})
	status, body := env.Super(t, http.MethodGet, "/api/provider/accounts?limit=5", nil)
	if status != http.StatusOK || bytes.Contains(body, []byte(`"erased"`)) || !bytes.Contains(body, []byte(`"login":"`)) {
		t.Fatalf("accounts after the rotation: %d %s", status, body)
	}
}

//go:build tvipcompat

// Package tvipcompat runs TVIP's own Provider API SDK (tmsproviderapisdk, a
// Python package) against a real tvsm node: `make compat TVIP_SDK=<dir>`.
// The node is the tvsm binary, built and started as its own process on a
// free loopback port with a fresh data directory, and set up through the
// Admin API; the SDK runs unchanged, with PYTHONPATH pointing at it. The
// build tag keeps the test out of `make test`, which needs no Python.
package tvipcompat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	adminLogin    = "compat-admin"
	adminPassword = "compat-password-1"
)

// node is a tvsm serve process.
type node struct {
	url string
	cmd *exec.Cmd
	log *bytes.Buffer
}

// startNode builds the binary and starts it with a fresh data directory.
func startNode(t *testing.T) *node {
	t.Helper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tvsm")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tvsm")
	build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build tvsm: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	n := &node{url: "http://" + addr, log: &bytes.Buffer{}}
	n.cmd = exec.Command(bin, "serve", "--http", addr, "--data", t.TempDir())
	n.cmd.Env = append(os.Environ(), "TVSM_ADMIN_LOGIN="+adminLogin, "TVSM_ADMIN_PASSWORD="+adminPassword)
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = n.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = n.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("node log:\n%s", n.log)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(n.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not ready: %v\n%s", err, n.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// admin calls the Admin API as the superadmin and returns the new id.
func (n *node) admin(t *testing.T, method, path string, body any) int64 {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, n.url+path, bytes.NewReader(b))
	req.SetBasicAuth(adminLogin, adminPassword)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	var v struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal(data, &v)
	return v.ID
}

// seed is what the scripts expect: the provider of the SDK example's
// admin (provider_admin / provider_password) with tariff 1, a region, a
// channel category and a channel in the tariff; and another provider.
type seed struct{ provider, region, category, channel, tariff int64 }

func (n *node) seed(t *testing.T) seed {
	t.Helper()
	var s seed
	s.region = n.admin(t, http.MethodPost, "/api/admin/regions", map[string]any{"name": "Moscow"})
	s.provider = n.admin(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "TVIP ISP", "region_tag": s.region})
	n.admin(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Other ISP"})
	n.admin(t, http.MethodPost, "/api/admin/admins", map[string]any{"login": "provider_admin", "password": "provider_password", "provider": s.provider})
	s.category = n.admin(t, http.MethodPost, "/api/admin/categories", map[string]any{"name": "News"})
	s.channel = n.admin(t, http.MethodPost, "/api/admin/channels", map[string]any{"name": "First", "number": 1, "categories": []int64{s.category}})
	s.tariff = n.admin(t, http.MethodPost, "/api/admin/tariffs", map[string]any{"provider": s.provider, "name": "Basic", "channels": []int64{s.channel}})
	if s.tariff != 1 {
		t.Fatalf("the first tariff has id %d; the SDK example subscribes to tariff 1", s.tariff)
	}
	return s
}

// runScript runs one of this package's scripts with the SDK on its path.
func runScript(t *testing.T, n *node, s seed, script string) {
	t.Helper()
	sdk := os.Getenv("TVIP_SDK")
	python := os.Getenv("PYTHON")
	if python == "" {
		python = "python3"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script)
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+sdk, "PYTHONDONTWRITEBYTECODE=1", "TVSM_URL="+n.url,
		"ADMIN_LOGIN="+adminLogin, "ADMIN_PASSWORD="+adminPassword,
		"PROVIDER_ID="+strconv.FormatInt(s.provider, 10), "REGION_ID="+strconv.FormatInt(s.region, 10),
		"CATEGORY_ID="+strconv.FormatInt(s.category, 10), "CHANNEL_ID="+strconv.FormatInt(s.channel, 10),
		"TARIFF_ID="+strconv.FormatInt(s.tariff, 10))
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", script, out)
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
}

// TestTVIPSDK runs the SDK example's flow, paging over 120 accounts, and
// every model class, each on a fresh node.
func TestTVIPSDK(t *testing.T) {
	sdk := os.Getenv("TVIP_SDK")
	if sdk == "" {
		t.Fatal("TVIP_SDK is not set: run make compat TVIP_SDK=<the directory holding tmsproviderapisdk/>")
	}
	if _, err := os.Stat(filepath.Join(sdk, "tmsproviderapisdk", "tms_account.py")); err != nil {
		t.Fatalf("TVIP_SDK=%s does not hold the SDK: %v", sdk, err)
	}
	for _, script := range []string{"flow.py", "paging.py", "models.py"} {
		t.Run(strings.TrimSuffix(script, ".py"), func(t *testing.T) {
			n := startNode(t)
			runScript(t, n, n.seed(t), script)
		})
	}
	fmt.Println("TVIP SDK against tvsm: the example flow, paging and every model class passed")
}

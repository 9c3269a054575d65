package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/testkit/nodetest"
)

// Given a node whose read model cannot apply an event of its log (one
// whose data does not decode, appended below the node), when a backup is
// asked, then the node answers 503 with Retry-After once the read model
// has not applied the copy within its bound, names both positions, keeps
// nothing staged, and still serves.
func TestBackupRefusedWhileTheReadModelIsBehind(t *testing.T) {
	dir := t.TempDir()
	env := nodetest.StartWith(t, nodetest.Options{Dir: dir, BackupReadModelWait: 300 * time.Millisecond})
	status, b := env.Super(t, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Stalled ISP"})
	var provider struct{ ID int64 }
	if status != http.StatusOK || json.Unmarshal(b, &provider) != nil {
		t.Fatalf("create provider: %d %s", status, b)
	}
	res, err := env.Store.Append(context.Background(), domain.AccountStream(1<<40), eventstore.Any,
		eventstore.EventData{ID: eventstore.NewEventID(), Type: domain.AccountUpdatedType, Data: []byte(`{"account_id":`)})
	if err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	resp, body := env.DoResponse(t, http.MethodPost, "/api/admin/backups", env.SuperLogin, env.SuperPassword,
		map[string]any{"include_master_key": false}, nil)
	took := time.Since(started)
	var e struct {
		Cause string `json:"cause"`
		Code  string `json:"error"`
	}
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || e.Code != "unavailable" {
		t.Fatalf("backup beside a stalled read model: %d %s; want 503 unavailable", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("the 503 carries no Retry-After")
	}
	copied := res.Position.Commit
	for _, want := range []string{"read model", "the copy at " + itoa(int64(copied)), "after 300ms"} {
		if !strings.Contains(e.Cause, want) {
			t.Errorf("cause %q does not say %q", e.Cause, want)
		}
	}
	if took > 30*time.Second {
		t.Errorf("the refusal took %v; the bound is 300ms", took)
	}
	staged, err := os.ReadDir(filepath.Join(dir, "node", "backups"))
	if err != nil || len(staged) != 0 {
		t.Errorf("the node kept a staged backup after refusing it: %v %v", staged, err)
	}
	if status, b := env.Super(t, http.MethodGet, "/api/admin/providers/"+itoa(provider.ID), nil); status != http.StatusOK {
		t.Errorf("the node stopped serving reads after the refusal: %d %s", status, b)
	}
}

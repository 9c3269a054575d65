package fsutil_test

import (
	"os"
	"path/filepath"
	"testing"

	"tvsm/internal/platform/fsutil"
)

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.SyncDir(dir); err != nil {
		t.Fatalf("sync of a directory: %v", err)
	}
	if err := fsutil.SyncDir(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("sync of a missing directory: %v, want not-exist", err)
	}
}

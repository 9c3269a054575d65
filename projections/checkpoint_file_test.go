package projections

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"tvsm/eventstore"
)

func TestFileCheckpointsRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "checkpoints") // created by FileCheckpoints
	cp, err := FileCheckpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := loadCheckpoint(t, cp, "readmodel.v1"); got != eventstore.Beginning {
		t.Fatalf("Load of a new name = %v, want Beginning", got)
	}
	want := map[string]eventstore.Position{
		"readmodel.v1": {Commit: 42, Prepare: 41},
		"stats.v2":     {Commit: math.MaxUint64, Prepare: math.MaxUint64 - 1},
	}
	for name, pos := range want {
		if err := cp.Save(ctx, name, pos); err != nil {
			t.Fatal(err)
		}
	}
	reopened, err := FileCheckpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, pos := range want {
		if got := loadCheckpoint(t, reopened, name); got != pos {
			t.Errorf("%s: Load after reopen = %v, want %v", name, got, pos)
		}
	}
}

func TestFileCheckpointsNeverBackwards(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cp, err := FileCheckpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	const name = "h.v1"
	high := eventstore.Position{Commit: 100, Prepare: 100}
	for _, pos := range []eventstore.Position{{Commit: 10, Prepare: 10}, high, {Commit: 50, Prepare: 50}, {Commit: 100, Prepare: 99}, eventstore.Beginning, high} {
		if err := cp.Save(ctx, name, pos); err != nil {
			t.Fatalf("Save(%v) = %v, want nil (older positions are a no-op)", pos, err)
		}
	}
	if got := loadCheckpoint(t, cp, name); got != high {
		t.Fatalf("Load = %v, want %v", got, high)
	}
	// Also across instances (the cache is not what protects it).
	other, err := FileCheckpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Save(ctx, name, eventstore.Position{Commit: 1, Prepare: 1}); err != nil {
		t.Fatal(err)
	}
	if got := loadCheckpoint(t, other, name); got != high {
		t.Fatalf("Load after older Save from another instance = %v, want %v", got, high)
	}
}

func TestFileCheckpointsIgnoresLeftoverTempFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cp, err := FileCheckpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	const name = "h.v1"
	saved := eventstore.Position{Commit: 7, Prepare: 7}
	if err := cp.Save(ctx, name, saved); err != nil {
		t.Fatal(err)
	}
	// A crash between writing the temporary file and renaming it leaves a
	// temp file (here torn and newer) next to the real one.
	leftover := filepath.Join(dir, name+checkpointExt+".123456"+tempSuffix)
	if err := os.WriteFile(leftover, []byte("tvsm-checkpoint v1 9"), 0o644); err != nil {
		t.Fatal(err)
	}
	reopened, err := FileCheckpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := loadCheckpoint(t, reopened, name); got != saved {
		t.Fatalf("Load = %v, want %v (temp file must be ignored)", got, saved)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover temp file still there after first use: %v", err)
	}
	next := eventstore.Position{Commit: 8, Prepare: 8}
	if err := reopened.Save(ctx, name, next); err != nil {
		t.Fatal(err)
	}
	if got := loadCheckpoint(t, reopened, name); got != next {
		t.Fatalf("Load = %v, want %v", got, next)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the checkpoint", len(entries))
	}
}

func TestFileCheckpointsRejectsCorruptFile(t *testing.T) {
	dir := t.TempDir()
	for i, content := range []string{"", "garbage", "tvsm-checkpoint v1 1\n", "tvsm-checkpoint v2 1 1\n", "tvsm-checkpoint v1 01 1\n", "tvsm-checkpoint v1 -1 1\n"} {
		name := "h" + string(rune('a'+i)) + ".v1"
		if err := os.WriteFile(filepath.Join(dir, name+checkpointExt), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		cp, err := FileCheckpoints(dir)
		if err != nil {
			t.Fatal(err)
		}
		if pos, err := cp.Load(context.Background(), name); err == nil {
			t.Errorf("Load of %q = %v, want an error", content, pos)
		}
	}
}

func TestFileCheckpointsRejectsBadNames(t *testing.T) {
	cp := fileCheckpoints(t)
	for _, name := range []string{"", ".hidden", "../escape", "a/b", "sp ace"} {
		if _, err := cp.Load(context.Background(), name); err == nil {
			t.Errorf("Load(%q) succeeded, want an error", name)
		}
		if err := cp.Save(context.Background(), name, eventstore.Position{Commit: 1, Prepare: 1}); err == nil {
			t.Errorf("Save(%q) succeeded, want an error", name)
		}
	}
}

func TestFileCheckpointsDelete(t *testing.T) {
	ctx := context.Background()
	cp := fileCheckpoints(t)
	if err := cp.Save(ctx, "h.v1", eventstore.Position{Commit: 5, Prepare: 5}); err != nil {
		t.Fatal(err)
	}
	if err := cp.Delete(ctx, "h.v1"); err != nil {
		t.Fatal(err)
	}
	if got := loadCheckpoint(t, cp, "h.v1"); got != eventstore.Beginning {
		t.Fatalf("Load after Delete = %v, want Beginning", got)
	}
	if err := cp.Delete(ctx, "h.v1"); err != nil {
		t.Fatalf("second Delete = %v, want nil", err)
	}
}

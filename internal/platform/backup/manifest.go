// Package backup is the format of a tvsm backup: a directory holding a
// consistent copy of a node's event store (embedded), its subjects' key
// file, its snapshots, and a manifest that names every file with its
// size and SHA-256. A node stages the files (internal/wiring/node), `tvsm
// backup` copies them and writes the manifest last, so a directory without
// one is not a backup; internal/tools/restore checks one and lays it out
// as a node's data directory.
package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Format names this layout in every manifest.
const Format = "tvsm-backup/1"

// ManifestName is the manifest's file name in a backup directory.
const ManifestName = "manifest.json"

// Paths of a backup's parts, relative to its directory (slash-separated).
// The event store's copy and the key file sit where a data directory has
// them, so that a restore copies each file to the same relative path.
const (
	EventsDir     = "events"            // the event store's copy (pebble's files)
	KeysFile      = "keys/subject-keys" // the subjects' wrapped keys
	MasterKeyFile = "master-key"        // only when asked for
)

// Snapshots are the snapshot files a backup carries, by their name in the
// data directory. The statistics' snapshots are left out: the statistics
// are recomputed from the log, and a snapshot without its fact store
// would name facts the store does not hold.
var Snapshots = []string{"readmodel.snapshot", "dispatch.snapshot"}

// Manifest describes a backup.
type Manifest struct {
	Format string `json:"format"`
	// ID is the node's name of the staged backup it was copied from.
	ID string `json:"id"`
	// TvsmVersion is the version of the node that made it.
	TvsmVersion string    `json:"tvsm_version"`
	Created     time.Time `json:"created"`
	// Store is the event store's kind ("embedded") and StoreFormat its data
	// format.
	Store       string `json:"store"`
	StoreFormat uint64 `json:"store_format"`
	// Position is the log position the copy ends at: every write the node
	// acknowledged through it is in the backup, none after it. Events is
	// how many events the copy holds.
	Position uint64 `json:"position"`
	Events   uint64 `json:"events"`
	// MasterKey says where the master key that wraps the subjects' keys
	// is, and whether the backup holds it.
	MasterKey MasterKeyNote `json:"master_key"`
	Files     []File        `json:"files"`
}

// MasterKeyNote says where a backup's master key is.
type MasterKeyNote struct {
	// Location is the node's master key file, or "TVSM_MASTER_KEY" when it
	// came from the environment.
	Location string `json:"location"`
	// Fingerprint identifies the key without revealing it (hex).
	Fingerprint string `json:"fingerprint"`
	// Included is set when the backup holds the key (MasterKeyFile).
	Included bool `json:"included"`
}

// File is one file of a backup.
type File struct {
	Path   string `json:"path"` // relative, slash-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
}

// TotalSize is the bytes of every file of m.
func (m Manifest) TotalSize() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Has reports whether m lists a file at p.
func (m Manifest) Has(p string) bool {
	for _, f := range m.Files {
		if f.Path == p {
			return true
		}
	}
	return false
}

// CheckPaths refuses a manifest whose file paths could leave the backup
// directory or collide: every path must be relative, clean and unique.
func (m Manifest) CheckPaths() error {
	if m.Format != Format {
		return fmt.Errorf("backup: format %q, this build reads %q", m.Format, Format)
	}
	seen := map[string]bool{}
	for _, f := range m.Files {
		if !ValidPath(f.Path) {
			return fmt.Errorf("backup: the manifest names a file %q outside the backup", f.Path)
		}
		if seen[f.Path] {
			return fmt.Errorf("backup: the manifest names %q twice", f.Path)
		}
		seen[f.Path] = true
		if f.Size < 0 || len(f.SHA256) != sha256.Size*2 {
			return fmt.Errorf("backup: the manifest's entry for %q has no size or SHA-256", f.Path)
		}
	}
	return nil
}

// ValidPath reports whether p is a clean relative slash-separated path
// inside a backup, not the manifest itself.
func ValidPath(p string) bool {
	return p != "" && p == path.Clean(p) && !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../") &&
		!strings.Contains(p, "\\") && !strings.ContainsRune(p, 0) && p != ManifestName
}

// HashFile returns the size and hex SHA-256 of the file at p.
func HashFile(p string) (int64, string, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// ReadManifest reads the manifest of the backup in dir.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("backup: %s has no %s: not a complete backup (one cut short never writes it)", dir, ManifestName)
	}
	if err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("backup: %s: %w", filepath.Join(dir, ManifestName), err)
	}
	return m, m.CheckPaths()
}

// WriteManifest writes m into dir last, durably: through a temporary file,
// synced, renamed, and the directory synced. Only then is dir a backup.
func WriteManifest(dir string, m Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ManifestName+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestName)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return syncDir(dir)
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

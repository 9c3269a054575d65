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
	// LastEventID is the id of the event at Position: a backup made since
	// this one checks with it that the node still has the same log.
	LastEventID string `json:"last_event_id,omitempty"`
	// Parent names the backup an incremental one was made since; nil for a
	// full backup. Files then says which files, or which first bytes of
	// them, the chain of backups before it holds.
	Parent *Parent `json:"parent,omitempty"`
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

// Parent identifies the backup an incremental one was made since.
type Parent struct {
	ID       string `json:"id"`
	Position uint64 `json:"position"`
	// ManifestSHA256 is the SHA-256 of the parent's manifest.json as it
	// was given (hex): a chain with another backup in its place is refused.
	ManifestSHA256 string `json:"manifest_sha256"`
}

// File is one file of a backup: of the data directory a restore lays out,
// with its size and SHA-256. In an incremental backup, InParent says the
// chain before it holds the file whole (an sstable: pebble never writes
// one again under the same name), and ParentPrefix that its first bytes
// are the parent's file of the same path, whole, and this backup holds the
// rest (a commit log segment or pebble's MANIFEST, which only grow);
// TailSHA256 is the SHA-256 of that rest.
type File struct {
	Path         string `json:"path"` // relative, slash-separated
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"` // hex
	InParent     bool   `json:"in_parent,omitempty"`
	ParentPrefix int64  `json:"parent_prefix,omitempty"`
	TailSHA256   string `json:"tail_sha256,omitempty"`
}

// Stored is how many bytes of f the backup itself holds, and their
// SHA-256.
func (f File) Stored() (int64, string) {
	switch {
	case f.InParent:
		return 0, ""
	case f.ParentPrefix > 0:
		return f.Size - f.ParentPrefix, f.TailSHA256
	}
	return f.Size, f.SHA256
}

// TotalSize is the bytes of every file of m.
func (m Manifest) TotalSize() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// StoredSize is the bytes m's backup holds itself: TotalSize, less what
// an incremental one leaves to the chain before it.
func (m Manifest) StoredSize() int64 {
	var n int64
	for _, f := range m.Files {
		size, _ := f.Stored()
		n += size
	}
	return n
}

// File returns m's entry for the file at p.
func (m Manifest) File(p string) (File, bool) {
	for _, f := range m.Files {
		if f.Path == p {
			return f, true
		}
	}
	return File{}, false
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
		if (f.InParent || f.ParentPrefix != 0) && m.Parent == nil {
			return fmt.Errorf("backup: the manifest's entry for %q refers to a parent backup, and it names none", f.Path)
		}
		if f.ParentPrefix < 0 || f.ParentPrefix > f.Size || (f.ParentPrefix > 0 && (f.InParent || len(f.TailSHA256) != sha256.Size*2)) {
			return fmt.Errorf("backup: the manifest's entry for %q has a parent prefix of %d bytes without the SHA-256 of the rest", f.Path, f.ParentPrefix)
		}
	}
	if p := m.Parent; p != nil && (p.ID == "" || len(p.ManifestSHA256) != sha256.Size*2) {
		return errors.New("backup: the manifest names a parent without its id and manifest SHA-256")
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
	m, _, err := ReadManifestSum(dir)
	return m, err
}

// ReadManifestSum reads the manifest of the backup in dir (or the
// manifest file dir names) and returns it with the SHA-256 of its bytes,
// which an incremental backup made since it records as its parent's.
func ReadManifestSum(dir string) (Manifest, string, error) {
	var m Manifest
	p := dir
	if info, err := os.Stat(dir); err == nil && info.IsDir() {
		p = filepath.Join(dir, ManifestName)
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return m, "", fmt.Errorf("backup: %s has no %s: not a complete backup (one cut short never writes it)", dir, ManifestName)
	}
	if err != nil {
		return m, "", fmt.Errorf("backup: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, "", fmt.Errorf("backup: %s: %w", p, err)
	}
	sum := sha256.Sum256(data)
	return m, hex.EncodeToString(sum[:]), m.CheckPaths()
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

// Request is what a client asks a node to stage.
type Request struct {
	IncludeMasterKey bool
	// Since, when set, makes the backup incremental: made since the
	// backup it describes, it leaves to that one (and its own parents)
	// the files and first bytes of files it already holds.
	Since *Since
}

// Since describes the backup an incremental one is made since: its
// manifest's id, position, last event and files, and the SHA-256 of the
// manifest itself.
type Since struct {
	ID             string
	Position       uint64
	LastEventID    string
	ManifestSHA256 string
	Files          []File
}

// SinceOf describes the backup of manifest m, whose bytes hash to sum.
func SinceOf(m Manifest, sum string) *Since {
	files := make([]File, len(m.Files))
	for i, f := range m.Files {
		files[i] = File{Path: f.Path, Size: f.Size, SHA256: f.SHA256}
	}
	return &Since{ID: m.ID, Position: m.Position, LastEventID: m.LastEventID, ManifestSHA256: sum, Files: files}
}

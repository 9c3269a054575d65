package httpapi

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
	"tvsm/internal/platform/backup"
)

// Backups stages online backups of the node's event store and serves their
// files; *node.Backups implements it.
type Backups interface {
	// Start stages a backup and returns its manifest. It fails with
	// backup.ErrNotOwned when the node does not own its event log,
	// backup.ErrRunning while another is staged, backup.ErrNoMasterKeyFile
	// when the request asks for a key the node was given by value,
	// backup.ErrNotSameLog when it is to be made since a backup of
	// another log, backup.ErrReadModelBehind when the node's read model
	// does not apply the copied log in time.
	Start(ctx context.Context, req backup.Request) (backup.Manifest, error)
	// Open opens a file of the staged backup id, backup.ErrNoBackup when
	// there is no such backup or file.
	Open(id, path string) (*os.File, error)
	// Remove removes the staged backup id (backup.ErrNoBackup).
	Remove(id string) error
}

// mountBackups adds, for superadmins only:
//
//	POST   /backups {"include_master_key":false,"since":{...}}  201 and the manifest of the staged backup
//	GET    /backups/{id}/file?path=PATH          one of its files (PATH as the manifest names it)
//	DELETE /backups/{id}                         204: the node drops it
//
// A backup is staged on the node that answered the POST: ask that node for
// its files.
func mountBackups(g *gin.RouterGroup, b Backups) {
	g = g.Group("/backups", superadminOnly)
	g.POST("", func(c *gin.Context) {
		req, err := decodeBackup(c)
		if err != nil {
			WriteError(c, err)
			return
		}
		m, err := b.Start(c.Request.Context(), req)
		switch {
		case errors.Is(err, backup.ErrNotOwned), errors.Is(err, backup.ErrRunning), errors.Is(err, backup.ErrNoMasterKeyFile),
			errors.Is(err, backup.ErrNotSameLog):
			WriteError(c, Conflict(err.Error()))
		case errors.Is(err, backup.ErrReadModelBehind):
			e := Unavailable(err.Error())
			e.RetryAfter = 30
			WriteError(c, e)
		case err != nil:
			WriteError(c, err)
		default:
			c.Header("Location", "/api/admin/backups/"+m.ID)
			c.JSON(http.StatusCreated, m)
		}
	})
	g.GET("/:id/file", func(c *gin.Context) {
		f, err := b.Open(c.Param("id"), c.Query("path"))
		if err != nil {
			WriteError(c, NotFound(backup.ErrNoBackup.Error()))
			return
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			WriteError(c, err)
			return
		}
		c.Header("Content-Type", "application/octet-stream")
		http.ServeContent(c.Writer, c.Request, "", info.ModTime(), f)
	})
	g.DELETE("/:id", func(c *gin.Context) {
		if err := b.Remove(c.Param("id")); err != nil {
			WriteError(c, NotFound(err.Error()))
			return
		}
		c.Status(http.StatusNoContent)
	})
}

// decodeBackup reads the body of POST /backups. Unknown fields are
// refused: a misspelt include_master_key would leave the key out unseen.
func decodeBackup(c *gin.Context) (backup.Request, error) {
	o, err := ReadObject(c, wire.DecodeOptions{ReadOnly: []string{}})
	if err != nil {
		return backup.Request{}, err
	}
	req := decodeBackupObject(o)
	return req, o.Err()
}

// decodeBackupObject reads the fields of a backup request from o,
// recording what is wrong with them in o.
func decodeBackupObject(o *wire.Object) backup.Request {
	var req backup.Request
	req.IncludeMasterKey, _ = o.Bool("include_master_key").Get()
	if since, ok := o.Object("since").Get(); ok {
		req.Since = decodeSince(since)
	}
	refuseUnknown(o)
	return req
}

// decodeSince reads the description of the backup an incremental one is
// made since: what tvsm backup --since sends of its manifest.
func decodeSince(o *wire.Object) *backup.Since {
	o.Require("id", "position", "manifest_sha256", "files")
	s := &backup.Since{}
	s.ID, _ = o.String("id").Get()
	pos, _ := o.Int64("position").Get()
	if pos < 0 {
		o.Fail("position", "must be 0 or more")
	}
	s.Position = uint64(max(pos, 0))
	s.LastEventID, _ = o.String("last_event_id").Get()
	if s.Position > 0 && s.LastEventID == "" {
		o.Fail("last_event_id", "required when position is past 0")
	}
	s.ManifestSHA256, _ = o.String("manifest_sha256").Get()
	if s.ManifestSHA256 != "" && !isSHA256(s.ManifestSHA256) {
		o.Fail("manifest_sha256", "must be a SHA-256 in hex (64 digits)")
	}
	files, _ := o.ObjectList("files").Get()
	seen := make(map[string]bool, len(files))
	for _, fo := range files {
		fo.Require("path", "size", "sha256")
		var f backup.File
		f.Path, _ = fo.String("path").Get()
		f.Size, _ = fo.Int64("size").Get()
		f.SHA256, _ = fo.String("sha256").Get()
		switch {
		case f.Path != "" && !backup.ValidPath(f.Path):
			fo.Fail("path", "must be a clean relative path inside the backup")
		case seen[f.Path]:
			fo.Fail("path", "named twice")
		}
		seen[f.Path] = true
		if f.Size < 0 {
			fo.Fail("size", "must be 0 or more")
		}
		if f.SHA256 != "" && !isSHA256(f.SHA256) {
			fo.Fail("sha256", "must be a SHA-256 in hex (64 digits)")
		}
		refuseUnknown(fo)
		s.Files = append(s.Files, f)
	}
	refuseUnknown(o)
	return s
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

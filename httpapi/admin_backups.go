package httpapi

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"

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
	// when includeMasterKey asks for a key the node was given by value.
	Start(ctx context.Context, includeMasterKey bool) (backup.Manifest, error)
	// Open opens a file of the staged backup id, backup.ErrNoBackup when
	// there is no such backup or file.
	Open(id, path string) (*os.File, error)
	// Remove removes the staged backup id (backup.ErrNoBackup).
	Remove(id string) error
}

// mountBackups adds, for superadmins only:
//
//	POST   /backups {"include_master_key":false}  201 and the manifest of the staged backup
//	GET    /backups/{id}/file?path=PATH          one of its files (PATH as the manifest names it)
//	DELETE /backups/{id}                         204: the node drops it
//
// A backup is staged on the node that answered the POST: ask that node for
// its files.
func mountBackups(g *gin.RouterGroup, b Backups) {
	g = g.Group("/backups", superadminOnly)
	g.POST("", func(c *gin.Context) {
		includeKey, err := decodeBackup(c)
		if err != nil {
			WriteError(c, err)
			return
		}
		m, err := b.Start(c.Request.Context(), includeKey)
		switch {
		case errors.Is(err, backup.ErrNotOwned), errors.Is(err, backup.ErrRunning), errors.Is(err, backup.ErrNoMasterKeyFile):
			WriteError(c, Conflict(err.Error()))
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
func decodeBackup(c *gin.Context) (includeMasterKey bool, err error) {
	o, err := ReadObject(c, wire.DecodeOptions{ReadOnly: []string{}})
	if err != nil {
		return false, err
	}
	includeMasterKey = decodeBackupObject(o)
	return includeMasterKey, o.Err()
}

// decodeBackupObject reads the fields of a backup request from o,
// recording what is wrong with them in o.
func decodeBackupObject(o *wire.Object) (includeMasterKey bool) {
	includeMasterKey, _ = o.Bool("include_master_key").Get()
	for _, name := range o.Unknown() {
		if name == "" || strings.HasPrefix(name, ".") {
			name = strconv.Quote(name)
		}
		o.Fail(name, "unknown field")
	}
	return includeMasterKey
}

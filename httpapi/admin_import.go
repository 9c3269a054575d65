package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
	"tvsm/internal/app"
)

// ImportIDHeader names the id a create gives its new object when an import
// copies objects from another system with their own ids (`tvsm import
// tvip`). Superadmins only; the id must lie in a range reserved for import
// (POST /api/admin/import/ids), else the create answers 409.
const ImportIDHeader = "X-TVSM-Import-ID"

// ImportIDs reserves ids for import (command.Imports).
type ImportIDs interface {
	ReserveIDs(ctx context.Context, c app.Caller, kind string, through int64) (app.ImportRanges, error)
}

// mountImport adds, for superadmins only:
//
//	POST /import/ids {"kind":"account","through":N}  reserves the ids above the highest reserved, up to N, for import; 200 and every range reserved for import
func mountImport(g *gin.RouterGroup, ids ImportIDs) {
	g.POST("/import/ids", superadminOnly, func(c *gin.Context) {
		o, err := ReadObject(c, wire.DecodeOptions{ReadOnly: []string{}})
		if err != nil {
			WriteError(c, err)
			return
		}
		o.Require("kind")
		kind, _ := o.String("kind").Get()
		through, _ := o.Int64("through").Get()
		refuseUnknown(o)
		if err := o.Err(); err != nil {
			WriteError(c, err)
			return
		}
		r, err := ids.ReserveIDs(c.Request.Context(), callerOf(c), kind, through)
		if err != nil {
			WriteError(c, err)
			return
		}
		if r.Ranges == nil {
			r.Ranges = []app.IDRange{}
		}
		c.JSON(http.StatusOK, r)
	})
}

// importIDFromHeader puts the id of ImportIDHeader, when a request carries
// it, into the request's context (app.WithImportID), where the create's
// handler takes it instead of a new id.
func importIDFromHeader(c *gin.Context) {
	v := c.GetHeader(ImportIDHeader)
	if v == "" {
		c.Next()
		return
	}
	if err := RequireSuperadmin(c); err != nil {
		WriteError(c, err)
		c.Abort()
		return
	}
	if strings.HasSuffix(c.FullPath(), "/bulk") {
		WriteError(c, ValidationFailed(map[string]string{ImportIDHeader: "gives one object its id: send it with the create of that object, not with a bulk request"}))
		c.Abort()
		return
	}
	id, err := wire.ParseInt(v)
	if err == nil && id <= 0 {
		err = strconv.ErrRange
	}
	if err != nil {
		WriteError(c, ValidationFailed(map[string]string{ImportIDHeader: "want a positive integer id, not " + strconv.Quote(v)}))
		c.Abort()
		return
	}
	c.Request = c.Request.WithContext(app.WithImportID(c.Request.Context(), id))
	c.Next()
}

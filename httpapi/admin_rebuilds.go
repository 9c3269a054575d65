package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
	"tvsm/projections"
)

// Rebuilds starts rebuilds and checks of the node's projections and
// reports on them; *node.Rebuilds implements it.
type Rebuilds interface {
	// Targets are the projections it rebuilds.
	Targets() []string
	// Start starts a rebuild of target, or a check when verify is set. It
	// fails with projections.ErrRebuildRunning while one of target runs.
	Start(target string, verify bool) (projections.RebuildStatus, error)
	Status(id string) (projections.RebuildStatus, bool)
	// List returns the jobs remembered, newest first.
	List() []projections.RebuildStatus
}

// mountRebuilds adds, for superadmins only:
//
//	POST /rebuilds {"target":"readmodel"|"stats","verify":false}  202 and the job; 409 while one of the target runs
//	GET  /rebuilds                                                the jobs the node remembers, newest first
//	GET  /rebuilds/{id}                                           one job
//
// Jobs run in the node that answered the POST: ask that node for them.
func mountRebuilds(g *gin.RouterGroup, r Rebuilds) {
	g = g.Group("/rebuilds", superadminOnly)
	g.POST("", func(c *gin.Context) {
		target, verify, err := decodeRebuild(c, r.Targets())
		if err != nil {
			WriteError(c, err)
			return
		}
		st, err := r.Start(target, verify)
		switch {
		case errors.Is(err, projections.ErrRebuildRunning):
			WriteError(c, Conflict("a rebuild or check of "+target+" is running on this node; wait for it (GET /api/admin/rebuilds)"))
		case err != nil:
			WriteError(c, Conflict(err.Error()))
		default:
			c.Header("Location", "/api/admin/rebuilds/"+st.ID)
			c.JSON(http.StatusAccepted, rebuildView(st))
		}
	})
	g.GET("", func(c *gin.Context) {
		views := []RebuildView{}
		for _, st := range r.List() {
			views = append(views, rebuildView(st))
		}
		c.JSON(http.StatusOK, gin.H{"data": views})
	})
	g.GET("/:id", func(c *gin.Context) {
		st, ok := r.Status(c.Param("id"))
		if !ok {
			WriteError(c, NotFound("no rebuild "+c.Param("id")+" on this node"))
			return
		}
		c.JSON(http.StatusOK, rebuildView(st))
	})
}

// decodeRebuild reads the body of POST /rebuilds. Unknown fields are
// refused: a misspelt "verify" would start a rebuild instead of a check.
func decodeRebuild(c *gin.Context, targets []string) (target string, verify bool, err error) {
	o, err := ReadObject(c, wire.DecodeOptions{ReadOnly: []string{}})
	if err != nil {
		return "", false, err
	}
	target, verify = decodeRebuildObject(o, targets)
	return target, verify, o.Err()
}

// decodeRebuildObject reads the fields of a rebuild request from o,
// recording what is wrong with them in o.
func decodeRebuildObject(o *wire.Object, targets []string) (target string, verify bool) {
	o.Require("target")
	if t, ok := o.String("target").Get(); ok && !slices.Contains(targets, t) {
		o.Fail("target", "must be one of "+strings.Join(targets, ", "))
	} else {
		target = t
	}
	verify, _ = o.Bool("verify").Get()
	refuseUnknown(o)
	return target, verify
}

// RebuildView is a rebuild or check as the API shows it (tvsm rebuild
// reads it too). Through and Head are commit positions of the log (the
// first part of an X-TVSM-Position).
type RebuildView struct {
	ID              string   `json:"id"`
	Target          string   `json:"target"`
	Verify          bool     `json:"verify"`
	State           string   `json:"state"`
	Phase           string   `json:"phase"`
	AppliedEvents   uint64   `json:"applied_events"`
	Through         uint64   `json:"through"`
	Head            uint64   `json:"head"`
	Started         string   `json:"started"`
	Finished        *string  `json:"finished"`
	Rate            float64  `json:"rate"`
	Differences     []string `json:"differences"`
	DifferenceCount int      `json:"difference_count"`
	Error           *string  `json:"error"`
}

func rebuildView(st projections.RebuildStatus) RebuildView {
	v := RebuildView{
		ID: st.ID, Target: st.Target, Verify: st.Verify, State: string(st.State), Phase: st.Phase,
		AppliedEvents: st.Applied, Through: st.Through.Commit, Head: st.Head.Commit,
		Started: wire.FormatDateTime(st.Started), Rate: st.Rate(time.Now()),
		Differences: st.Differences, DifferenceCount: st.DifferenceCount,
	}
	if !st.Finished.IsZero() {
		f := wire.FormatDateTime(st.Finished)
		v.Finished = &f
	}
	if st.State == projections.RebuildFailed {
		v.Error = &st.Error
	}
	if v.Differences == nil {
		v.Differences = []string{}
	}
	return v
}

package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/wire"
	"tvsm/internal/app"
)

// providerResource is one Provider API collection keyed by an integer id:
// T is the application's object, F the command's input, Q the read
// model's query and V the wire view. Its routes:
//
//	GET    {path}          list
//	GET    {path}/{id}     one object
//	POST   {path}          create; with "id": partial update (when writes is set)
//	PUT    {path}/{id}     partial update (POST {path}/{id} too; when writes is set)
//	DELETE {path}/{id}     delete (del)
type providerResource[T, F, Q, V any] struct {
	path, what string
	spec       ListSpec
	idem       Idempotency
	reads      Reads[T, Q]
	writes     Writes[T, F] // nil: no create or update
	del        func(ctx context.Context, c app.Caller, id int64) (T, error)
	// query turns a list request into the read model's query, recording
	// bad filter values in bad.
	query  func(q ListQuery, bad map[string]string) Q
	decode func(*wire.Object) F
	view   func(T) V
	// render is the answer to a create, recorded under its
	// Idempotency-Key.
	render func(T) ([]byte, error)
}

func (r providerResource[T, F, Q, V]) mount(g *gin.RouterGroup) {
	g.GET(r.path, r.list)
	g.GET(r.path+"/:id", r.get)
	g.DELETE(r.path+"/:id", r.delete)
	if r.writes != nil {
		g.POST(r.path, r.post)
		g.PUT(r.path+"/:id", r.put)
		g.POST(r.path+"/:id", r.put)
	}
}

func (r providerResource[T, F, Q, V]) list(c *gin.Context) {
	q, err := ParseListQuery(c, r.spec)
	if err != nil {
		WriteError(c, err)
		return
	}
	bad := map[string]string{}
	rq := r.query(q, bad)
	if len(bad) > 0 {
		WriteError(c, ValidationFailed(bad))
		return
	}
	l, err := r.reads.List(c.Request.Context(), callerOf(c), rq)
	if err != nil {
		WriteError(c, err)
		return
	}
	WriteList(c, q, l.Total, func(yield func(V) bool) {
		for v := range l.Items {
			if !yield(r.view(v)) {
				return
			}
		}
	})
}

func (r providerResource[T, F, Q, V]) get(c *gin.Context) {
	r.byID(c, r.reads.Get)
}

func (r providerResource[T, F, Q, V]) delete(c *gin.Context) {
	r.byID(c, r.del)
}

// byID answers with do's object for the path's id.
func (r providerResource[T, F, Q, V]) byID(c *gin.Context, do func(context.Context, app.Caller, int64) (T, error)) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	v, err := do(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	providerJSON(c, r.view(v))
}

// post creates an object, or updates one when the body carries its id.
func (r providerResource[T, F, Q, V]) post(c *gin.Context) { r.write(c, 0) }

// put updates the object of the path with a partial body.
func (r providerResource[T, F, Q, V]) put(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	r.write(c, id)
}

func (r providerResource[T, F, Q, V]) write(c *gin.Context, pathID int64) {
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	id, update := providerBodyID(obj, pathID)
	in := r.decode(obj)
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	if update {
		v, err := r.writes.Update(c.Request.Context(), callerOf(c), id, in)
		if err != nil {
			WriteError(c, err)
			return
		}
		providerJSON(c, r.view(v))
		return
	}
	createOnce(c, r.idem, r.what, fingerprintOf(r.what, in),
		func(ctx context.Context, caller app.Caller) (T, error) { return r.writes.Create(ctx, caller, in) },
		r.render)
}

package httpapi

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app"
	"tvsm/projections/readmodel"
)

// providerResource is one Provider API collection keyed by an integer id:
// T is the application's object, F the command's input, Q the read
// model's query and V the wire view. Its routes:
//
//	GET    {path}          list
//	GET    {path}/{id}     one object
//	POST   {path}          create; with "id": partial update (when writes is set)
//	PUT    {path}/{id}     partial update (POST {path}/{id} too; when writes is set)
//	DELETE {path}/{id}     delete (when del is set)
type providerResource[T, F, Q, V any] struct {
	path, what string
	spec       ListSpec
	idem       Idempotency
	reads      Reads[T, Q]
	writes     Writes[T, F] // nil: no create or update
	del        func(ctx context.Context, c app.Caller, id int64) (T, error)
	// normalize, when set, completes a create's fields as the caller means
	// them, before they are fingerprinted.
	normalize func(app.Caller, F) F
	// fields renames the fields of the application's validation errors
	// where this API's names differ ("name" is a tariff's "tarif_name").
	fields map[string]string
	// query turns a list request into the read model's query, recording
	// bad filter values in bad.
	query  func(q ListQuery, bad map[string]string) Q
	decode func(*wire.Object) F
	view   func(T) V
	// render is the answer to a create, recorded under its
	// Idempotency-Key.
	render func(T) ([]byte, error)
	// listAt and getAt, when set, answer ?as_of=<date-time>: the
	// collection as it stood then (the list's spec must name as_of).
	listAt func(ctx context.Context, c app.Caller, q Q, at time.Time) (readmodel.List[T], error)
	getAt  func(ctx context.Context, c app.Caller, id int64, at time.Time) (T, error)
}

// asOf reads ?as_of=: ok false when absent; a bad value is a 400 naming
// it.
func asOf(c *gin.Context) (at time.Time, ok bool, err error) {
	v := c.Query("as_of")
	if strings.TrimSpace(v) == "" {
		return time.Time{}, false, nil
	}
	at, err = wire.ParseDateTime(v)
	if err != nil && strings.Count(v, " ") == 1 {
		// A "+hhmm" offset sent unescaped arrives as " hhmm".
		at, err = wire.ParseDateTime(strings.Replace(v, " ", "+", 1))
	}
	if err != nil {
		return time.Time{}, false, ValidationFailed(map[string]string{"as_of": err.Error()})
	}
	return at, true, nil
}

func (r providerResource[T, F, Q, V]) mount(g *gin.RouterGroup) {
	g.GET(r.path, r.list)
	g.GET(r.path+"/:id", r.get)
	if r.del != nil {
		g.DELETE(r.path+"/:id", r.delete)
	}
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
	list := r.reads.List
	if at, ok, err := asOf(c); err != nil {
		WriteError(c, err)
		return
	} else if ok && r.listAt != nil {
		list = func(ctx context.Context, caller app.Caller, q Q) (readmodel.List[T], error) {
			return r.listAt(ctx, caller, q, at)
		}
	}
	l, err := list(c.Request.Context(), callerOf(c), rq)
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
	if r.getAt != nil {
		at, ok, err := asOf(c)
		if err != nil {
			WriteError(c, err)
			return
		}
		if ok {
			r.byID(c, func(ctx context.Context, caller app.Caller, id int64) (T, error) { return r.getAt(ctx, caller, id, at) })
			return
		}
	}
	r.byID(c, r.reads.Get)
}

func (r providerResource[T, F, Q, V]) delete(c *gin.Context) {
	r.byID(c, func(ctx context.Context, caller app.Caller, id int64) (T, error) {
		v, err := r.del(ctx, caller, id)
		return v, r.wireError(err)
	})
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
			WriteError(c, r.wireError(err))
			return
		}
		providerJSON(c, r.view(v))
		return
	}
	if r.normalize != nil {
		in = r.normalize(callerOf(c), in)
	}
	createOnce(c, r.idem, r.what, fingerprintOf(r.what, in),
		func(ctx context.Context, caller app.Caller) (T, error) {
			v, err := r.writes.Create(ctx, caller, in)
			return v, r.wireError(err)
		},
		r.render)
}

// wireError renames the fields of a validation error to this API's names.
func (r providerResource[T, F, Q, V]) wireError(err error) error {
	var v *domain.ValidationError
	if len(r.fields) == 0 || !errors.As(err, &v) {
		return err
	}
	fields := make(map[string]string, len(v.Fields))
	for name, problem := range v.Fields {
		if wire, ok := r.fields[name]; ok {
			name = wire
		}
		fields[name] = problem
	}
	return &domain.ValidationError{Fields: fields}
}

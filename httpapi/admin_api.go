package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/projections/readmodel"
)

// mountAdmin adds the Admin API routes to g:
//
//	GET    /{providers,tariffs,channels,categories,regions} list: {"data":[...],"total":N,"start":S,"limit":L}
//	GET    /{...}/{id}                                     one object
//	POST   /{...}                                          create (no id) or partial update (with id); 200 and the object
//	PUT    /{...}/{id}                                     partial update (POST /{...}/{id} too); 200 and the object
//	DELETE /{...}/{id}                                     delete; 200 and the object as it was
//	GET, POST, PUT /admins[/{login}], DELETE /admins/{login}  the same, keyed by login; POST /admins only creates
//
// Creates answer with the new object, and happen once per Idempotency-Key.
func mountAdmin(g *gin.RouterGroup, api AdminAPI, idem Idempotency) {
	if api.ProviderReads == nil {
		return
	}
	adminResource[domain.Provider, command.ProviderFields, readmodel.ProviderQuery]{
		path: "/providers", what: "provider", idem: idem, writes: api.Providers, reads: api.ProviderReads,
		spec: ListSpec{Sort: readmodel.ProviderSortFields, Filters: map[string]FilterType{"enabled": FilterBool}},
		query: func(q ListQuery) (readmodel.ProviderQuery, bool) {
			rq := readmodel.ProviderQuery{Page: adminPage(q)}
			if v, ok := q.Bool("enabled"); ok {
				rq.Enabled = &v
			}
			return rq, true
		},
		decode: decodeAdminProvider, view: func(p domain.Provider) any { return adminProviderView(p) },
	}.mount(g)

	adminResource[domain.Tariff, command.TariffFields, readmodel.TariffQuery]{
		path: "/tariffs", what: "tariff", idem: idem, writes: api.Tariffs, reads: api.TariffReads,
		spec: ListSpec{Sort: readmodel.TariffSortFields, Filters: map[string]FilterType{"provider": FilterInt, "enabled": FilterBool}},
		query: func(q ListQuery) (readmodel.TariffQuery, bool) {
			rq := readmodel.TariffQuery{Page: adminPage(q)}
			if v, ok := q.Int64("provider"); ok {
				rq.Provider = v
				if v <= 0 {
					return rq, false
				}
			}
			if v, ok := q.Bool("enabled"); ok {
				rq.Enabled = &v
			}
			return rq, true
		},
		// A scoped admin's create without a provider is a create for its
		// own provider, and is fingerprinted as such.
		normalize: func(c app.Caller, f command.TariffFields) command.TariffFields { return f.WithDefaults(c) },
		decode:    decodeAdminTariff, view: func(t domain.Tariff) any { return adminTariffView(t) },
	}.mount(g)

	adminResource[domain.Channel, command.ChannelFields, readmodel.ChannelQuery]{
		path: "/channels", what: "channel", idem: idem, writes: api.Channels, reads: api.ChannelReads,
		spec: ListSpec{Sort: readmodel.ChannelSortFields, Filters: map[string]FilterType{"category": FilterInt}},
		query: func(q ListQuery) (readmodel.ChannelQuery, bool) {
			rq := readmodel.ChannelQuery{Page: adminPage(q)}
			if v, ok := q.Int64("category"); ok {
				rq.Category = v
				if v <= 0 {
					return rq, false
				}
			}
			return rq, true
		},
		decode: decodeAdminChannel, view: func(ch domain.Channel) any { return adminChannelView(ch) },
	}.mount(g)

	adminResource[domain.Category, command.CategoryFields, readmodel.CategoryQuery]{
		path: "/categories", what: "category", idem: idem, writes: api.Categories, reads: api.CategoryReads,
		spec: ListSpec{Sort: readmodel.CategorySortFields},
		query: func(q ListQuery) (readmodel.CategoryQuery, bool) {
			return readmodel.CategoryQuery{Page: adminPage(q)}, true
		},
		decode: decodeAdminCategory, view: func(cat domain.Category) any { return adminCategoryView(cat) },
	}.mount(g)

	if api.RegionReads != nil {
		adminResource[domain.Region, command.NameFields, readmodel.RegionQuery]{
			path: "/regions", what: "region", idem: idem, writes: api.Regions, reads: api.RegionReads,
			spec: ListSpec{Sort: readmodel.NamedSortFields},
			query: func(q ListQuery) (readmodel.RegionQuery, bool) {
				return readmodel.RegionQuery{Page: adminPage(q), Search: q.QuickSearch}, true
			},
			decode: decodeAdminCategory, view: func(r domain.Region) any { return adminRegionView(r) },
		}.mount(g)
	}

	admins := adminAdmins{writes: api.Admins, reads: api.AdminReads, idem: idem}
	g.GET("/admins", admins.list)
	g.GET("/admins/:login", admins.get)
	g.POST("/admins", admins.create)
	g.PUT("/admins/:login", admins.update)
	g.POST("/admins/:login", admins.update)
	g.DELETE("/admins/:login", admins.delete)
}

// adminResource is one Admin API collection keyed by an integer id: its
// list spec, the application's writes and reads, how a list request and a
// body become their inputs, and its view. T is the domain object, F the
// command's input fields, Q the read model query.
type adminResource[T, F, Q any] struct {
	path, what string
	spec       ListSpec
	idem       Idempotency
	writes     Writes[T, F]
	reads      Reads[T, Q]
	// query turns a list request into the read model's query; false means
	// it can match nothing (a filter on a non-positive id).
	query func(ListQuery) (Q, bool)
	// normalize, when set, completes a create's fields as the caller means
	// them, before they are fingerprinted.
	normalize func(app.Caller, F) F
	decode    func(o *wire.Object) F
	view      func(T) any
}

func (r adminResource[T, F, Q]) mount(g *gin.RouterGroup) {
	g.GET(r.path, r.handleList)
	g.GET(r.path+"/:id", r.handleGet)
	g.POST(r.path, r.handlePost)
	g.PUT(r.path+"/:id", r.handlePut)
	g.POST(r.path+"/:id", r.handlePut)
	g.DELETE(r.path+"/:id", r.handleDelete)
}

func (r adminResource[T, F, Q]) handleList(c *gin.Context) {
	caller := callerOf(c)
	q, err := ParseListQuery(c, r.spec)
	if err != nil {
		WriteError(c, err)
		return
	}
	rq, matches := r.query(q)
	if !matches {
		WriteList(c, q, 0, func(func(any) bool) {})
		return
	}
	l, err := r.reads.List(c.Request.Context(), caller, rq)
	if err != nil {
		WriteError(c, err)
		return
	}
	WriteList(c, q, l.Total, func(yield func(any) bool) {
		for v := range l.Items {
			if !yield(r.view(v)) {
				return
			}
		}
	})
}

func (r adminResource[T, F, Q]) handleGet(c *gin.Context) {
	caller := callerOf(c)
	id, err := adminPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	v, err := r.reads.Get(c.Request.Context(), caller, id)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, r.view(v))
}

// handlePost creates an object, or updates the one its "id" names.
func (r adminResource[T, F, Q]) handlePost(c *gin.Context) {
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	id := adminBodyID(obj)
	f := r.decode(obj)
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	if n, ok := id.Get(); ok {
		caller := callerOf(c)
		caller.IdempotencyKey = "" // updates are idempotent by themselves
		v, err := r.writes.Update(c.Request.Context(), caller, n, f)
		if err != nil {
			WriteError(c, err)
			return
		}
		c.JSON(http.StatusOK, r.view(v))
		return
	}
	if r.normalize != nil {
		f = r.normalize(callerOf(c), f)
	}
	createOnce(c, r.idem, r.what, fingerprintOf(r.what, f),
		func(ctx context.Context, caller app.Caller) (T, error) { return r.writes.Create(ctx, caller, f) },
		func(v T) ([]byte, error) { return json.Marshal(r.view(v)) })
}

// handlePut updates the object the path names; an "id" in the body must
// name the same one.
func (r adminResource[T, F, Q]) handlePut(c *gin.Context) {
	caller := callerOf(c)
	caller.IdempotencyKey = ""
	id, err := adminPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	if n, ok := adminBodyID(obj).Get(); ok && n != id {
		obj.Fail("id", "does not match the id in the path")
	}
	f := r.decode(obj)
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	v, err := r.writes.Update(c.Request.Context(), caller, id, f)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, r.view(v))
}

func (r adminResource[T, F, Q]) handleDelete(c *gin.Context) {
	caller := callerOf(c)
	id, err := adminPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	v, err := r.writes.Delete(c.Request.Context(), caller, id)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, r.view(v))
}

// adminAdmins are the handlers of /admins, whose objects are keyed by login.
type adminAdmins struct {
	writes AdminWrites
	reads  AdminReads
	idem   Idempotency
}

var adminAdminList = ListSpec{Sort: readmodel.AdminSortFields, Filters: map[string]FilterType{"provider": FilterInt}}

func (h adminAdmins) list(c *gin.Context) {
	q, err := ParseListQuery(c, adminAdminList)
	if err != nil {
		WriteError(c, err)
		return
	}
	rq := readmodel.AdminQuery{Page: adminPage(q)}
	if v, ok := q.Int64("provider"); ok {
		if v <= 0 {
			WriteList(c, q, 0, func(func(adminAdminJSON) bool) {})
			return
		}
		rq.Provider = v
	}
	l, err := h.reads.List(c.Request.Context(), callerOf(c), rq)
	if err != nil {
		WriteError(c, err)
		return
	}
	WriteList(c, q, l.Total, func(yield func(adminAdminJSON) bool) {
		for a := range l.Items {
			if !yield(adminAdminView(a)) {
				return
			}
		}
	})
}

func (h adminAdmins) get(c *gin.Context) {
	a, err := h.reads.Get(c.Request.Context(), callerOf(c), c.Param("login"))
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, adminAdminView(a))
}

func (h adminAdmins) create(c *gin.Context) {
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	f := decodeAdminAdmin(obj)
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	createOnce(c, h.idem, "admin", fingerprintOf("admin", f.Fingerprint()),
		func(ctx context.Context, caller app.Caller) (domain.Admin, error) {
			return h.writes.Create(ctx, caller, f)
		},
		func(a domain.Admin) ([]byte, error) { return json.Marshal(adminAdminView(a)) })
}

func (h adminAdmins) update(c *gin.Context) {
	caller := callerOf(c)
	caller.IdempotencyKey = ""
	login := c.Param("login")
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	f := decodeAdminAdmin(obj)
	if v, ok := f.Login.Get(); ok && v != login {
		obj.Fail("login", "does not match the login in the path")
	}
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	a, err := h.writes.Update(c.Request.Context(), caller, login, f)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, adminAdminView(a))
}

func (h adminAdmins) delete(c *gin.Context) {
	a, err := h.writes.Delete(c.Request.Context(), callerOf(c), c.Param("login"))
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, adminAdminView(a))
}

// adminPathID parses the :id of the path: 400 naming "id" when it is not an
// integer, 404 when it cannot be an id (as the Provider API does).
func adminPathID(c *gin.Context) (int64, error) {
	id, err := wire.ParseInt(c.Param("id"))
	if err != nil {
		return 0, ValidationFailed(map[string]string{"id": err.Error()})
	}
	if id <= 0 {
		return 0, NotFound("no object with id " + c.Param("id"))
	}
	return id, nil
}

// adminBodyID reads the "id" of a POST or PUT body: absent (or null, as
// clients send on create) means none; otherwise it must be a positive
// integer (the error is recorded on the object).
func adminBodyID(obj *wire.Object) wire.Optional[int64] {
	id := obj.Int64("id")
	if v, ok := id.Get(); ok && v <= 0 {
		obj.Fail("id", "must be a positive integer")
		return wire.Optional[int64]{}
	}
	return id
}

// adminPage turns a parsed list request into the read model's page.
func adminPage(q ListQuery) readmodel.Page {
	p := readmodel.Page{Start: q.Start, Limit: q.Limit}
	for _, k := range q.Sort {
		p.Sort = append(p.Sort, readmodel.SortKey{Field: k.Field, Desc: k.Desc})
	}
	return p
}

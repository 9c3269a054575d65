package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/service"
	"tvsm/projections/readmodel"
)

// AdminService is what the Admin API (/api/admin) needs; *service.Service
// implements it. Every method checks the caller's provider scope itself
// (service.ErrForbidden, 403), and every write returns once the read model
// shows it. Creates answer with encode's rendering of the new object, which
// is recorded under the request's Idempotency-Key and replayed to retries;
// deletes return the object as it was.
type AdminService interface {
	ListProviders(ctx context.Context, c service.Caller, q readmodel.ProviderQuery) (readmodel.List[domain.Provider], error)
	Provider(ctx context.Context, c service.Caller, id int64) (domain.Provider, error)
	CreateProvider(ctx context.Context, c service.Caller, f service.ProviderFields, encode service.BodyEncoder[domain.Provider]) ([]byte, error)
	UpdateProvider(ctx context.Context, c service.Caller, id int64, f service.ProviderFields) (domain.Provider, error)
	DeleteProvider(ctx context.Context, c service.Caller, id int64) (domain.Provider, error)

	ListTariffs(ctx context.Context, c service.Caller, q readmodel.TariffQuery) (readmodel.List[domain.Tariff], error)
	Tariff(ctx context.Context, c service.Caller, id int64) (domain.Tariff, error)
	CreateTariff(ctx context.Context, c service.Caller, f service.TariffFields, encode service.BodyEncoder[domain.Tariff]) ([]byte, error)
	UpdateTariff(ctx context.Context, c service.Caller, id int64, f service.TariffFields) (domain.Tariff, error)
	DeleteTariff(ctx context.Context, c service.Caller, id int64) (domain.Tariff, error)

	ListChannels(ctx context.Context, c service.Caller, q readmodel.ChannelQuery) (readmodel.List[domain.Channel], error)
	Channel(ctx context.Context, c service.Caller, id int64) (domain.Channel, error)
	CreateChannel(ctx context.Context, c service.Caller, f service.ChannelFields, encode service.BodyEncoder[domain.Channel]) ([]byte, error)
	UpdateChannel(ctx context.Context, c service.Caller, id int64, f service.ChannelFields) (domain.Channel, error)
	DeleteChannel(ctx context.Context, c service.Caller, id int64) (domain.Channel, error)

	ListCategories(ctx context.Context, c service.Caller, q readmodel.CategoryQuery) (readmodel.List[domain.Category], error)
	Category(ctx context.Context, c service.Caller, id int64) (domain.Category, error)
	CreateCategory(ctx context.Context, c service.Caller, f service.CategoryFields, encode service.BodyEncoder[domain.Category]) ([]byte, error)
	UpdateCategory(ctx context.Context, c service.Caller, id int64, f service.CategoryFields) (domain.Category, error)
	DeleteCategory(ctx context.Context, c service.Caller, id int64) (domain.Category, error)

	ListAdmins(ctx context.Context, c service.Caller, q readmodel.AdminQuery) (readmodel.List[domain.Admin], error)
	Admin(ctx context.Context, c service.Caller, login string) (domain.Admin, error)
	CreateAdmin(ctx context.Context, c service.Caller, f service.AdminFields, encode service.BodyEncoder[domain.Admin]) ([]byte, error)
	UpdateAdmin(ctx context.Context, c service.Caller, login string, f service.AdminFields) (domain.Admin, error)
	DeleteAdmin(ctx context.Context, c service.Caller, login string) (domain.Admin, error)
}

// mountAdmin adds the Admin API routes to g (DESIGN.md §4):
//
//	GET    /{providers,tariffs,channels,categories}        list: {"data":[...],"total":N,"start":S,"limit":L}
//	GET    /{...}/{id}                                     one object
//	POST   /{...}                                          create (no id) or partial update (with id); 200 and the object
//	PUT    /{...}/{id}                                     partial update (POST /{...}/{id} too); 200 and the object
//	DELETE /{...}/{id}                                     delete; 200 and the object as it was
//	GET, POST, PUT /admins[/{login}], DELETE /admins/{login}  the same, keyed by login; POST /admins only creates
func mountAdmin(g *gin.RouterGroup, svc AdminService) {
	if svc == nil {
		return
	}
	adminResource[domain.Provider, service.ProviderFields]{
		path: "/providers", what: "provider",
		spec: ListSpec{Sort: readmodel.ProviderSortFields, Filters: map[string]FilterType{"enabled": FilterBool}},
		list: func(ctx context.Context, c service.Caller, q ListQuery) (readmodel.List[domain.Provider], error) {
			rq := readmodel.ProviderQuery{Page: adminPage(q)}
			if v, ok := q.Bool("enabled"); ok {
				rq.Enabled = &v
			}
			return svc.ListProviders(ctx, c, rq)
		},
		get: svc.Provider, create: svc.CreateProvider, update: svc.UpdateProvider, del: svc.DeleteProvider,
		decode: decodeAdminProvider, view: func(p domain.Provider) any { return adminProviderView(p) },
	}.mount(g)

	adminResource[domain.Tariff, service.TariffFields]{
		path: "/tariffs", what: "tariff",
		spec: ListSpec{Sort: readmodel.TariffSortFields, Filters: map[string]FilterType{"provider": FilterInt, "enabled": FilterBool}},
		list: func(ctx context.Context, c service.Caller, q ListQuery) (readmodel.List[domain.Tariff], error) {
			rq := readmodel.TariffQuery{Page: adminPage(q)}
			if v, ok := q.Int64("provider"); ok {
				rq.Provider = v
				if v <= 0 {
					return readmodel.List[domain.Tariff]{Items: func(func(domain.Tariff) bool) {}}, nil
				}
			}
			if v, ok := q.Bool("enabled"); ok {
				rq.Enabled = &v
			}
			return svc.ListTariffs(ctx, c, rq)
		},
		get: svc.Tariff, create: svc.CreateTariff, update: svc.UpdateTariff, del: svc.DeleteTariff,
		decode: decodeAdminTariff, view: func(t domain.Tariff) any { return adminTariffView(t) },
	}.mount(g)

	adminResource[domain.Channel, service.ChannelFields]{
		path: "/channels", what: "channel",
		spec: ListSpec{Sort: readmodel.ChannelSortFields, Filters: map[string]FilterType{"category": FilterInt}},
		list: func(ctx context.Context, c service.Caller, q ListQuery) (readmodel.List[domain.Channel], error) {
			rq := readmodel.ChannelQuery{Page: adminPage(q)}
			if v, ok := q.Int64("category"); ok {
				rq.Category = v
				if v <= 0 {
					return readmodel.List[domain.Channel]{Items: func(func(domain.Channel) bool) {}}, nil
				}
			}
			return svc.ListChannels(ctx, c, rq)
		},
		get: svc.Channel, create: svc.CreateChannel, update: svc.UpdateChannel, del: svc.DeleteChannel,
		decode: decodeAdminChannel, view: func(ch domain.Channel) any { return adminChannelView(ch) },
	}.mount(g)

	adminResource[domain.Category, service.CategoryFields]{
		path: "/categories", what: "category",
		spec: ListSpec{Sort: readmodel.CategorySortFields},
		list: func(ctx context.Context, c service.Caller, q ListQuery) (readmodel.List[domain.Category], error) {
			return svc.ListCategories(ctx, c, readmodel.CategoryQuery{Page: adminPage(q)})
		},
		get: svc.Category, create: svc.CreateCategory, update: svc.UpdateCategory, del: svc.DeleteCategory,
		decode: decodeAdminCategory, view: func(cat domain.Category) any { return adminCategoryView(cat) },
	}.mount(g)

	mountAdminAdmins(g, svc)
}

// adminResource is one Admin API collection keyed by an integer id: its
// list spec, its service calls, how a body becomes its fields, and its
// view. T is the domain object, F the service's input fields.
type adminResource[T, F any] struct {
	path, what string
	spec       ListSpec
	list       func(ctx context.Context, c service.Caller, q ListQuery) (readmodel.List[T], error)
	get        func(ctx context.Context, c service.Caller, id int64) (T, error)
	create     func(ctx context.Context, c service.Caller, f F, encode service.BodyEncoder[T]) ([]byte, error)
	update     func(ctx context.Context, c service.Caller, id int64, f F) (T, error)
	del        func(ctx context.Context, c service.Caller, id int64) (T, error)
	decode     func(o *wire.Object) F
	view       func(T) any
}

func (r adminResource[T, F]) mount(g *gin.RouterGroup) {
	g.GET(r.path, r.handleList)
	g.GET(r.path+"/:id", r.handleGet)
	g.POST(r.path, r.handlePost)
	g.PUT(r.path+"/:id", r.handlePut)
	g.POST(r.path+"/:id", r.handlePut)
	g.DELETE(r.path+"/:id", r.handleDelete)
}

func (r adminResource[T, F]) handleList(c *gin.Context) {
	caller := callerOf(c)
	q, err := ParseListQuery(c, r.spec)
	if err != nil {
		WriteError(c, err)
		return
	}
	l, err := r.list(c.Request.Context(), caller, q)
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

func (r adminResource[T, F]) handleGet(c *gin.Context) {
	caller := callerOf(c)
	id, err := adminPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	v, err := r.get(c.Request.Context(), caller, id)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, r.view(v))
}

// handlePost creates an object, or updates the one its "id" names.
func (r adminResource[T, F]) handlePost(c *gin.Context) {
	caller := callerOf(c)
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
		caller.IdempotencyKey = "" // updates are idempotent by themselves
		v, err := r.update(c.Request.Context(), caller, n, f)
		if err != nil {
			WriteError(c, err)
			return
		}
		c.JSON(http.StatusOK, r.view(v))
		return
	}
	body, err := r.create(c.Request.Context(), caller, f, func(v T) ([]byte, error) { return json.Marshal(r.view(v)) })
	if err != nil {
		WriteError(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}

// handlePut updates the object the path names; an "id" in the body must
// name the same one.
func (r adminResource[T, F]) handlePut(c *gin.Context) {
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
	v, err := r.update(c.Request.Context(), caller, id, f)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, r.view(v))
}

func (r adminResource[T, F]) handleDelete(c *gin.Context) {
	caller := callerOf(c)
	id, err := adminPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	v, err := r.del(c.Request.Context(), caller, id)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, r.view(v))
}

// mountAdminAdmins adds /admins, whose objects are keyed by login.
func mountAdminAdmins(g *gin.RouterGroup, svc AdminService) {
	g.GET("/admins", func(c *gin.Context) {
		caller := callerOf(c)
		q, err := ParseListQuery(c, ListSpec{Sort: readmodel.AdminSortFields, Filters: map[string]FilterType{"provider": FilterInt}})
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
		l, err := svc.ListAdmins(c.Request.Context(), caller, rq)
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
	})
	g.GET("/admins/:login", func(c *gin.Context) {
		caller := callerOf(c)
		a, err := svc.Admin(c.Request.Context(), caller, c.Param("login"))
		if err != nil {
			WriteError(c, err)
			return
		}
		c.JSON(http.StatusOK, adminAdminView(a))
	})
	g.POST("/admins", func(c *gin.Context) {
		caller := callerOf(c)
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
		body, err := svc.CreateAdmin(c.Request.Context(), caller, f, func(a domain.Admin) ([]byte, error) {
			return json.Marshal(adminAdminView(a))
		})
		if err != nil {
			WriteError(c, err)
			return
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	})
	updateAdmin := func(c *gin.Context) {
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
		a, err := svc.UpdateAdmin(c.Request.Context(), caller, login, f)
		if err != nil {
			WriteError(c, err)
			return
		}
		c.JSON(http.StatusOK, adminAdminView(a))
	}
	g.PUT("/admins/:login", updateAdmin)
	g.POST("/admins/:login", updateAdmin)
	g.DELETE("/admins/:login", func(c *gin.Context) {
		caller := callerOf(c)
		a, err := svc.DeleteAdmin(c.Request.Context(), caller, c.Param("login"))
		if err != nil {
			WriteError(c, err)
			return
		}
		c.JSON(http.StatusOK, adminAdminView(a))
	})
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

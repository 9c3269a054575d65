package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/httpapi/statsdoc"
	"tvsm/httpapi/wire"
	"tvsm/internal/app/query"
	"tvsm/projections/stats"
)

// StatsService is what the Statistics API (/api/stats) needs:
// *query.Statistics implements it.
type StatsService interface {
	// ClosedThrough is the last closed day (ok false: none yet): a day
	// appears in the answers once it is closed.
	ClosedThrough() (day stats.Day, ok bool)
	Subscriptions(ctx context.Context, q query.StatsQuery, w query.SubscriptionWriter) error
	Devices(ctx context.Context, q query.StatsQuery) ([]query.ProviderDevices, error)
	Accounts(ctx context.Context, q query.StatsQuery, w query.AccountWriter) error
}

// StatsWriteTimeout is how long a statistics answer may take to write: an
// analyst's export of a long range outlasts the server's default write
// timeout, so the statistics routes get a longer one of their own.
const StatsWriteTimeout = 10 * time.Minute

// MountStats adds the Statistics API to g, the /api/stats group:
//
//	GET /subscription?from=&to=[&provider_id=]   behind auth, streamed
//	GET /device?from=&to=[&provider_id=]         behind auth
//	GET /account?from=&to=[&provider_id=]        behind auth, streamed
//	GET /openapi.json, /openapi.yaml             the OpenAPI 3 document
//	GET /swagger-ui/index.html (and its files)   Swagger UI
//
// auth (BasicAuth in a node) guards the statistics; the documentation is
// public. Without a Principal in the request (no auth given) the caller
// counts as a superadmin.
func MountStats(g *gin.RouterGroup, svc StatsService, auth ...gin.HandlerFunc) error {
	doc, err := statsdoc.OpenAPIJSON()
	if err != nil {
		return err
	}
	h := &statsHandlers{svc: svc}
	auth = slices.Clip(auth) // each append below makes its own chain
	g.GET("/subscription", append(auth, h.closedThrough, h.subscription)...)
	g.GET("/device", append(auth, h.closedThrough, h.device)...)
	g.GET("/account", append(auth, h.closedThrough, h.account)...)
	g.GET("/openapi.json", func(c *gin.Context) { c.Data(http.StatusOK, "application/json; charset=utf-8", doc) })
	g.GET("/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml; charset=utf-8", statsdoc.OpenAPIYAML()) })
	g.GET("/swagger-ui", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, c.Request.URL.Path+"/index.html") })
	g.GET("/swagger-ui/*file", func(c *gin.Context) { statsdoc.ServeAsset(c.Writer, c.Request, c.Param("file")) })
	return nil
}

type statsHandlers struct{ svc StatsService }

// HeaderClosedThrough names the last closed day on every statistics
// answer, so that a client asking for today (not closed yet: not in the
// answer) can tell why.
const HeaderClosedThrough = "X-TVSM-Closed-Through"

// closedThrough sets HeaderClosedThrough: the last closed day, or "none"
// before the first day has closed.
func (h *statsHandlers) closedThrough(c *gin.Context) {
	v := "none"
	if d, ok := h.svc.ClosedThrough(); ok {
		v = d.String()
	}
	c.Header(HeaderClosedThrough, v)
	c.Next()
}

// ParseStatsQuery parses the Statistics API's query parameters: from and
// to (required dates YYYY-MM-DD, from <= to, at most query.MaxRangeDays
// days) and provider_id (optional, positive). Bad input gives a 400
// naming each bad parameter.
func ParseStatsQuery(values url.Values) (query.StatsQuery, error) {
	var q query.StatsQuery
	bad := map[string]string{}
	for _, p := range []struct {
		name string
		day  *stats.Day
	}{{"from", &q.From}, {"to", &q.To}} {
		v, ok := single(values, p.name, bad)
		switch {
		case ok:
			d, err := stats.ParseDay(v)
			if err != nil {
				bad[p.name] = err.Error()
			}
			*p.day = d
		case bad[p.name] == "":
			bad[p.name] = "required"
		}
	}
	if v, ok := single(values, "provider_id", bad); ok {
		n, err := wire.ParseInt(v)
		if err != nil || n <= 0 {
			bad["provider_id"] = "must be a positive integer"
		}
		q.Provider = n
	}
	if len(bad) == 0 {
		if err := q.Validate(); err != nil {
			return query.StatsQuery{}, err
		}
		return q, nil
	}
	return query.StatsQuery{}, ValidationFailed(bad)
}

// statsQuery parses the request and applies the admin's scope: a
// provider-scoped admin asking for another provider gets a 403, and one
// asking for none gets its own.
func statsQuery(c *gin.Context) (query.StatsQuery, error) {
	q, err := ParseStatsQuery(c.Request.URL.Query())
	if err != nil {
		return q, err
	}
	p, ok := CurrentPrincipal(c)
	if !ok {
		return q, nil
	}
	if scope, scoped := p.Scope(); scoped {
		if q.Provider == 0 {
			q.Provider = scope
		}
		if err := RequireProvider(c, q.Provider); err != nil {
			return q, err
		}
	}
	return q, nil
}

// statsError maps the fact store's unavailability to a 503.
func statsError(err error) error {
	if errors.Is(err, stats.ErrUnavailable) {
		e := Unavailable("the statistics store is unavailable; retry later")
		e.Err = err
		return e
	}
	return err
}

// extendWriteDeadline lets a long answer outlast the server's write
// timeout, where the connection supports it.
func extendWriteDeadline(c *gin.Context) {
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(StatsWriteTimeout))
}

// The answers are written with append-style encoders rather than
// encoding/json: three years of a provider's subscription rows are over a
// hundred thousand objects, and reflection would cost several times the
// fact store's query. Field names and order are the Statistics API's.

func (h *statsHandlers) subscription(c *gin.Context) {
	q, err := statsQuery(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	w := &subscriptionStream{statsStream: newStatsStream(c, q), names: map[int64][]byte{}}
	w.finish(h.svc.Subscriptions(c.Request.Context(), q, w))
}

// subscriptionStream writes the subscription statistic as the service
// yields it (query.SubscriptionWriter).
type subscriptionStream struct {
	*statsStream
	days, tariffs int
	names         map[int64][]byte // tariff names, JSON-encoded once per tariff
}

func (w *subscriptionStream) BeginProvider(provider int64) error {
	w.days = 0
	w.beginProvider(`{"provider_id":`, provider, `,"subscriptions_stat":[`)
	return nil
}

func (w *subscriptionStream) Day(d stats.Day) error {
	if w.days > 0 {
		w.buf = append(w.buf, "]},"...)
	}
	w.days++
	w.tariffs = 0
	w.buf = append(append(append(w.buf, `{"date":"`...), d.String()...), `","subscriptions":[`...)
	return w.maybeFlush()
}

func (w *subscriptionStream) Tariff(t *stats.SubscriptionDay, name string) error {
	encoded, ok := w.names[t.Tariff]
	if !ok {
		encoded = jsonString(name)
		w.names[t.Tariff] = encoded
	}
	w.comma(w.tariffs)
	w.tariffs++
	w.tariff(t, encoded)
	return nil
}

func (w *subscriptionStream) EndProvider() error {
	if w.days > 0 {
		w.buf = append(w.buf, "]}"...)
	}
	w.buf = append(w.buf, "]}"...)
	return w.maybeFlush()
}

func (h *statsHandlers) device(c *gin.Context) {
	q, err := statsQuery(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	providers, err := h.svc.Devices(c.Request.Context(), q)
	if err != nil {
		WriteError(c, statsError(err))
		return
	}
	w := newStatsStream(c, q)
	for _, p := range providers {
		w.beginProvider(`{"provider_id":`, p.Provider, `,"device_stat":[`)
		for j, cl := range p.Classes {
			w.comma(j)
			w.buf = append(append(append(w.buf, `{"class":`...), jsonString(cl.Class)...), ',')
			w.viewing(cl.LiveSeconds, cl.DVRSeconds)
			w.buf = strconv.AppendInt(append(w.buf, `,"unique_devices":`...), cl.UniqueDevices, 10)
			w.buf = append(w.buf, '}')
		}
		w.buf = append(w.buf, "]}"...)
	}
	w.finish(nil)
}

func (h *statsHandlers) account(c *gin.Context) {
	q, err := statsQuery(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	w := &accountStream{statsStream: newStatsStream(c, q)}
	w.finish(h.svc.Accounts(c.Request.Context(), q, w))
}

// statsStream writes a JSON answer in pieces of about statsFlushBytes, so
// that a long range is never held whole. Until the first piece is sent an
// error can still be answered properly; after it the answer is cut short,
// its JSON left unterminated so that no client takes it for complete.
type statsStream struct {
	c         *gin.Context
	buf       []byte
	sent      bool
	providers int // provider_stat elements begun
}

const statsFlushBytes = 32 << 10

// newStatsStream starts the envelope {"from":..,"to":..,"provider_stat":[.
func newStatsStream(c *gin.Context, q query.StatsQuery) *statsStream {
	extendWriteDeadline(c)
	w := &statsStream{c: c, buf: make([]byte, 0, statsFlushBytes+4<<10)}
	w.buf = append(append(w.buf, `{"from":"`...), q.From.String()...)
	w.buf = append(append(w.buf, `","to":"`...), q.To.String()...)
	w.buf = append(w.buf, `","provider_stat":[`...)
	return w
}

// beginProvider opens the next provider_stat element: idKey, the
// provider's id, then listKey opening its list.
func (w *statsStream) beginProvider(idKey string, provider int64, listKey string) {
	w.comma(w.providers)
	w.providers++
	w.buf = strconv.AppendInt(append(w.buf, idKey...), provider, 10)
	w.buf = append(w.buf, listKey...)
}

// comma separates array elements: before every one but the first.
func (w *statsStream) comma(i int) {
	if i > 0 {
		w.buf = append(w.buf, ',')
	}
}

func (w *statsStream) maybeFlush() error {
	if len(w.buf) < statsFlushBytes {
		return nil
	}
	if err := w.flush(); err != nil {
		return err
	}
	return w.c.Request.Context().Err() // the client went away
}

func (w *statsStream) flush() error {
	if !w.sent {
		w.c.Header("Content-Type", "application/json; charset=utf-8")
		w.c.Status(http.StatusOK)
		w.sent = true
	}
	_, err := w.c.Writer.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// finish ends the envelope and sends the rest, or answers err.
func (w *statsStream) finish(err error) {
	if err == nil {
		w.buf = append(w.buf, "]}"...)
		err = w.flush()
	}
	if err != nil {
		w.fail(err)
	}
}

func (w *statsStream) fail(err error) {
	if !w.sent {
		WriteError(w.c, statsError(err))
		return
	}
	_ = w.c.Error(fmt.Errorf("stats answer cut short: %w", err))
	w.c.Abort()
}

// tariff appends a tariff's row; name is its JSON string.
func (w *statsStream) tariff(t *stats.SubscriptionDay, name []byte) {
	b := strconv.AppendInt(append(w.buf, `{"tariff_id":`...), t.Tariff, 10)
	b = append(append(b, `,"name":`...), name...)
	b = strconv.AppendInt(append(b, `,"enabled_count":`...), t.Enabled, 10)
	b = strconv.AppendInt(append(b, `,"enabled_device_count":`...), t.EnabledDevices, 10)
	b = strconv.AppendInt(append(b, `,"active_count":`...), t.Active, 10)
	b = strconv.AppendInt(append(b, `,"disabled_count":`...), t.Disabled, 10)
	b = strconv.AppendInt(append(b, `,"enabled_account_with_devices":`...), t.EnabledWithDevices, 10)
	w.buf = append(b, '}')
}

// viewing appends viewing time in the Statistics API's units: the deprecated
// hours, rounded to two decimals, then minutes, rounded to the nearest whole
// minute (half up).
func (w *statsStream) viewing(live, dvr int64) {
	b := strconv.AppendFloat(append(w.buf, `"live_hours":`...), hours(live), 'f', -1, 64)
	b = strconv.AppendFloat(append(b, `,"dvr_hours":`...), hours(dvr), 'f', -1, 64)
	b = strconv.AppendInt(append(b, `,"live_minutes":`...), minutes(live), 10)
	w.buf = strconv.AppendInt(append(b, `,"dvr_minutes":`...), minutes(dvr), 10)
}

func minutes(seconds int64) int64 { return (seconds + 30) / 60 }

func hours(seconds int64) float64 { return math.Round(float64(seconds)/36) / 100 }

// jsonString returns s as a JSON string, HTML-escaped as c.JSON does.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// accountStream writes the account statistic as the service yields it
// (query.AccountWriter).
type accountStream struct {
	*statsStream
	accounts int
}

func (w *accountStream) BeginProvider(provider int64) error {
	w.accounts = 0
	w.beginProvider(`{"providerId":`, provider, `,"account_stat":[`)
	return nil
}

func (w *accountStream) Account(a query.AccountStat) error {
	w.comma(w.accounts)
	w.accounts++
	w.buf = strconv.AppendInt(append(w.buf, `{"account_id":`...), a.Account, 10)
	w.buf = append(append(append(w.buf, `,"account_contract":`...), jsonString(a.Contract)...), `,"channels":[`...)
	for i, ch := range a.Channels {
		w.comma(i)
		w.buf = strconv.AppendInt(append(w.buf, `{"channel_id":`...), ch.Channel, 10)
		w.buf = append(w.buf, ',')
		w.viewing(ch.LiveSeconds, ch.DVRSeconds)
		w.buf = append(w.buf, '}')
	}
	w.buf = append(w.buf, "]}"...)
	return w.maybeFlush()
}

func (w *accountStream) EndProvider(channels []query.ChannelInfo, categories []query.CategoryInfo) error {
	w.buf = append(w.buf, `],"channels":[`...)
	for i, ch := range channels {
		w.comma(i)
		w.buf = strconv.AppendInt(append(w.buf, `{"id":`...), ch.ID, 10)
		w.buf = append(append(append(w.buf, `,"name":`...), jsonString(ch.Name)...), `,"favorites":[`...)
		for j, cat := range ch.Categories {
			w.comma(j)
			w.buf = strconv.AppendInt(w.buf, cat, 10)
		}
		w.buf = append(w.buf, "]}"...)
	}
	w.buf = append(w.buf, `],"favorites":[`...)
	for i, cat := range categories {
		w.comma(i)
		w.buf = strconv.AppendInt(append(w.buf, `{"id":`...), cat.ID, 10)
		w.buf = append(append(append(w.buf, `,"name":`...), jsonString(cat.Name)...), '}')
	}
	w.buf = append(w.buf, "]}"...)
	return w.maybeFlush()
}

package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

var accountsSpec = ListSpec{
	Sort: []string{"id", "login", "fullname"},
	Filters: map[string]FilterType{
		"provider": FilterInt, "enabled": FilterBool, "login": FilterString, "remote_custom_field": FilterString,
	},
}

func TestParseListQuery(t *testing.T) {
	type filters struct {
		provider *int64
		enabled  *bool
		login    *string
	}
	i64 := func(v int64) *int64 { return &v }
	bl := func(v bool) *bool { return &v }
	str := func(v string) *string { return &v }

	good := []struct {
		query string
		want  ListQuery
		f     filters
	}{
		{"", ListQuery{}, filters{}},
		{"start=40&limit=20", ListQuery{Start: 40, Limit: 20}, filters{}},
		{"start=0&limit=0", ListQuery{}, filters{}},
		{"start=&limit=&provider=&quick_search=", ListQuery{}, filters{}}, // blank = absent
		{"page=3&limit=25", ListQuery{Start: 50, Limit: 25}, filters{}},
		{"page=3&start=10&limit=25", ListQuery{Start: 10, Limit: 25}, filters{}}, // start wins
		{"page=3", ListQuery{}, filters{}},                                       // no limit: all
		{"sort=login", ListQuery{Sort: []SortKey{{Field: "login"}}}, filters{}},
		{"sort=-login", ListQuery{Sort: []SortKey{{Field: "login", Desc: true}}}, filters{}},
		{"sort=%2Blogin", ListQuery{Sort: []SortKey{{Field: "login"}}}, filters{}},
		{"sort=fullname,-id", ListQuery{Sort: []SortKey{{Field: "fullname"}, {Field: "id", Desc: true}}}, filters{}},
		{"sort=login&dir=DESC", ListQuery{Sort: []SortKey{{Field: "login", Desc: true}}}, filters{}},
		{"sort=login&dir=asc", ListQuery{Sort: []SortKey{{Field: "login"}}}, filters{}},
		{`sort=[{"property":"login","direction":"DESC"},{"property":"id"}]`, ListQuery{Sort: []SortKey{{Field: "login", Desc: true}, {Field: "id"}}}, filters{}},
		{`sort={"property":"login","direction":"desc"}`, ListQuery{Sort: []SortKey{{Field: "login", Desc: true}}}, filters{}},
		{"quick_search=%20anna%20", ListQuery{QuickSearch: "anna"}, filters{}},
		{"provider=7&enabled=1&login=anna", ListQuery{}, filters{i64(7), bl(true), str("anna")}},
		{"provider=%2007%20&enabled=false", ListQuery{}, filters{provider: i64(7), enabled: bl(false)}},
		{"enabled=TRUE&provider=7&provider=7", ListQuery{}, filters{provider: i64(7), enabled: bl(true)}},
		{"_dc=1764000000&page=1&start=0&limit=25", ListQuery{Limit: 25}, filters{}}, // ExtJS extras
		{`filter=[{"property":"provider","value":7},{"property":"enabled","value":"0"},{"property":"login","operator":"eq","value":"anna"}]`,
			ListQuery{}, filters{i64(7), bl(false), str("anna")}},
		{`filter=[{"property":"enabled","value":true},{"property":"provider","value":null}]`, ListQuery{}, filters{enabled: bl(true)}},
		{`provider=7&filter=[{"property":"provider","value":"7"}]`, ListQuery{}, filters{provider: i64(7)}},
	}
	for _, tc := range good {
		values, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := accountsSpec.Parse(values)
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.query, err)
			continue
		}
		gotF := filters{}
		if v, ok := got.Int64("provider"); ok {
			gotF.provider = &v
		}
		if v, ok := got.Bool("enabled"); ok {
			gotF.enabled = &v
		}
		if v, ok := got.String("login"); ok {
			gotF.login = &v
		}
		if !reflect.DeepEqual(gotF, tc.f) {
			t.Errorf("Parse(%s) filters = %+v, want %+v", tc.query, gotF, tc.f)
		}
		got.filters = nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%s) = %+v, want %+v", tc.query, got, tc.want)
		}
	}

	bad := []struct {
		query  string
		fields map[string]string
	}{
		{"start=-1", map[string]string{"start": "must be a non-negative integer"}},
		{"limit=-1", map[string]string{"limit": "must be a non-negative integer (0: every item)"}},
		{"start=abc", map[string]string{"start": "must be a non-negative integer"}},
		{"start=1.5", map[string]string{"start": "must be a non-negative integer"}},
		{"limit=ten", map[string]string{"limit": "must be an integer"}},
		{"limit=99999999999999999999", map[string]string{"limit": "is out of range for a 64-bit integer"}},
		{"page=0&limit=10", map[string]string{"page": "must be a positive integer"}},
		{"start=1&start=2", map[string]string{"start": "given more than once with different values"}},
		{"sort=password", map[string]string{"sort": `unknown field "password"; one of id, login, fullname`}},
		{"sort=login,", map[string]string{"sort": `unknown field ""; one of id, login, fullname`}},
		{"sort=login&dir=sideways", map[string]string{"sort": `dir "sideways" must be ASC or DESC`}},
		{`sort=[{"property":"login","direction":"UP"}]`, map[string]string{"sort": `direction "UP" must be ASC or DESC`}},
		{`sort=[{"property":`, map[string]string{"sort": `must be a field name, -field for descending, or [{"property":"field","direction":"ASC|DESC"}]`}},
		{"quick_search=" + strings.Repeat("x", MaxQuickSearch+1), map[string]string{"quick_search": "must be at most 1000 bytes"}},
		{"provider=abc", map[string]string{"provider": "must be an integer"}},
		{"provider=1e3", map[string]string{"provider": "must be an integer"}},
		{"provider=NaN", map[string]string{"provider": "must be an integer"}},
		{"enabled=maybe", map[string]string{"enabled": "must be a boolean (true/false or 1/0)"}},
		{"enabled=1&enabled=0", map[string]string{"enabled": "given more than once with different values"}},
		{`filter=[{"property":"password","value":"x"}]`, map[string]string{"filter": `unknown property "password"`}},
		{`filter=[{"property":"provider","operator":"like","value":"7"}]`, map[string]string{"filter": `operator "like" is not supported (only eq)`}},
		{`filter=[{"property":"provider","value":[1,2]}]`, map[string]string{"provider": "must be a single value"}},
		{`filter=[{"property":"provider","value":1.5}]`, map[string]string{"provider": "must be an integer"}},
		{`filter={"property":"provider"}`, map[string]string{"filter": `must be [{"property":"name","value":...}]`}},
		{`provider=7&filter=[{"property":"provider","value":8}]`, map[string]string{"provider": "given more than once with different values"}},
		// A filter the list does not know is refused, not ignored (ExtJS
		// tree stores' node among them): ignoring it would list everything.
		{"node=root", map[string]string{"node": "unknown parameter; this list takes dir, enabled, filter, limit, login, page, provider, quick_search, remote_custom_field, sort, start"}},
		{"region=7&limit=5", map[string]string{"region": "unknown parameter; this list takes dir, enabled, filter, limit, login, page, provider, quick_search, remote_custom_field, sort, start"}},
		{"start=-5&limit=x&provider=y&sort=z", map[string]string{ // every bad parameter is named
			"start": "must be a non-negative integer", "limit": "must be an integer", "provider": "must be an integer",
			"sort": `unknown field "z"; one of id, login, fullname`,
		}},
	}
	for _, tc := range bad {
		values, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		_, err = accountsSpec.Parse(values)
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || apiErr.Code != CodeValidationFailed {
			t.Errorf("Parse(%s) = %v, want a 400 validation error", tc.query, err)
			continue
		}
		if !reflect.DeepEqual(apiErr.Fields, tc.fields) {
			t.Errorf("Parse(%s) fields = %q, want %q", tc.query, apiErr.Fields, tc.fields)
		}
	}

	// A list without sort fields rejects sort; the default limit applies.
	q, err := ListSpec{DefaultLimit: 25}.Parse(url.Values{})
	if err != nil || q.Limit != 25 {
		t.Errorf("DefaultLimit: %+v, %v", q, err)
	}
	if _, err := (ListSpec{}).Parse(url.Values{"sort": {"id"}}); err == nil || !strings.Contains(err.Error(), "cannot be sorted") {
		t.Errorf("sort on an unsortable list: %v", err)
	}
	// Huge page numbers do not overflow.
	if q, err := (ListSpec{}).Parse(url.Values{"page": {"9223372036854775807"}, "limit": {"1000"}}); err != nil || q.Start != math.MaxInt {
		t.Errorf("huge page: %+v, %v", q, err)
	}
}

func TestWindowAndPage(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, tc := range []struct {
		start, limit int
		want         []int
	}{
		{0, 0, all},
		{0, -1, all},
		{3, 0, all[3:]},
		{3, 4, []int{3, 4, 5, 6}},
		{8, 4, []int{8, 9}},
		{10, 4, []int{}},
		{99, 0, []int{}},
		{0, math.MaxInt, all},
		{math.MaxInt, math.MaxInt, []int{}},
	} {
		got := Page(ListQuery{Start: tc.start, Limit: tc.limit}, all)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Page(start=%d, limit=%d) = %v, want %v", tc.start, tc.limit, got, tc.want)
		}
	}
	var q ListQuery
	q.SetFilter("provider", int64(3))
	if v, ok := q.Int64("provider"); !ok || v != 3 {
		t.Errorf("SetFilter: %d, %v", v, ok)
	}
}

type listItem struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Note  any    `json:"note,omitempty"`
}

// seqOf yields n generated items from offset on, never holding them.
func seqOf(offset, n int) iter.Seq[listItem] {
	return func(yield func(listItem) bool) {
		for i := offset; i < offset+n; i++ {
			if !yield(listItem{ID: int64(i), Login: fmt.Sprintf("user-%06d", i)}) {
				return
			}
		}
	}
}

type envelope struct {
	Data  []listItem `json:"data"`
	Total int        `json:"total"`
	Start int        `json:"start"`
	Limit int        `json:"limit"`
}

func TestWriteList(t *testing.T) {
	const total = 95
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.GET("/accounts", func(c *gin.Context) {
			q, err := ParseListQuery(c, accountsSpec)
			if err != nil {
				WriteError(c, err)
				return
			}
			lo, hi := q.Window(total)
			WriteList(c, q, total, seqOf(lo, hi-lo))
		})
		e.GET("/overlong", func(c *gin.Context) {
			// The handler yields more than the page; WriteList stops at the limit.
			WriteList(c, ListQuery{Limit: 3}, total, seqOf(0, total))
		})
		e.GET("/empty", func(c *gin.Context) {
			WriteList(c, ListQuery{}, 1, seqOf(0, 0))
		})
	})

	for _, tc := range []struct {
		query             string
		first, n          int
		wantStart, wantLm int
	}{
		{"", 0, total, 0, 0},
		{"?start=90&limit=10", 90, 5, 90, 10},
		{"?start=10&limit=20", 10, 20, 10, 20},
		{"?limit=0", 0, total, 0, 0},
		{"?start=200&limit=10", 0, 0, 200, 10},
	} {
		resp, body := srv.get(t, "/accounts"+tc.query)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Fatalf("%s: status %d, Content-Type %q", tc.query, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var env envelope
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatalf("%s: %v: %s", tc.query, err, body)
		}
		if env.Data == nil || len(env.Data) != tc.n || env.Total != total || env.Start != tc.wantStart || env.Limit != tc.wantLm {
			t.Errorf("%s: %d items, total %d, start %d, limit %d", tc.query, len(env.Data), env.Total, env.Start, env.Limit)
		}
		if tc.n > 0 && env.Data[0].ID != int64(tc.first) {
			t.Errorf("%s: first id %d, want %d", tc.query, env.Data[0].ID, tc.first)
		}
	}

	_, body := srv.get(t, "/accounts?start=94&limit=5")
	if want := `{"data":[{"id":94,"login":"user-000094"}],"total":95,"start":94,"limit":5}`; string(body) != want {
		t.Errorf("envelope = %s\nwant       %s", body, want)
	}
	_, body = srv.get(t, "/empty")
	if want := `{"data":[],"total":1,"start":0,"limit":0}`; string(body) != want {
		t.Errorf("empty envelope = %s", body)
	}
	_, body = srv.get(t, "/overlong")
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) != 3 {
		t.Errorf("overlong: %d items, %v", len(env.Data), err)
	}

	resp, body := srv.get(t, "/accounts?start=-1&sort=nope")
	assertJSONResponse(t, resp, body, http.StatusBadRequest, map[string]any{
		"error": CodeValidationFailed, "cause": `sort: unknown field "nope"; one of id, login, fullname; start: must be a non-negative integer`,
	})
}

// TestWriteListStreams shows that a list of 100k items with limit<=0 is
// streamed: the client reads the first items while the handler's iterator
// is blocked half way, which a writer that buffered the whole list would
// deadlock on.
func TestWriteListStreams(t *testing.T) {
	const total = 100_000
	release := make(chan struct{})
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.GET("/devices", func(c *gin.Context) {
			items := func(yield func(listItem) bool) {
				for i := range total {
					if i == total/2 {
						select {
						case <-release:
						case <-time.After(10 * time.Second):
							panic("the client never saw the first half: the list is not streamed")
						}
					}
					if !yield(listItem{ID: int64(i), Login: fmt.Sprintf("device-%06d", i)}) {
						return
					}
				}
			}
			WriteList(c, ListQuery{Limit: 0}, total, items)
		})
	})

	resp, err := srv.Client().Get(srv.URL + "/devices")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.TransferEncoding == nil || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("TransferEncoding = %v, want chunked", resp.TransferEncoding)
	}
	br := bufio.NewReader(resp.Body)
	head := make([]byte, 64<<10)
	if _, err := io.ReadFull(br, head); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(head), `{"data":[{"id":0,"login":"device-000000"},{"id":1,`) {
		t.Fatalf("stream starts %.60s", head)
	}
	close(release) // only now may the handler go on

	dec := json.NewDecoder(io.MultiReader(strings.NewReader(string(head)), br))
	var env envelope
	if err := dec.Decode(&env); err != nil {
		t.Fatal(err)
	}
	if len(env.Data) != total || env.Total != total || env.Data[total-1].ID != total-1 {
		t.Fatalf("got %d items, total %d", len(env.Data), env.Total)
	}
}

func TestWriteListClientGone(t *testing.T) {
	var yielded atomic.Int64
	done := make(chan struct{})
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.GET("/endless", func(c *gin.Context) {
			defer close(done)
			WriteList(c, ListQuery{}, math.MaxInt, func(yield func(listItem) bool) {
				for i := int64(0); ; i++ {
					yielded.Store(i)
					if !yield(listItem{ID: i, Login: "x"}) {
						return
					}
				}
			})
		})
	})
	resp, err := srv.Client().Get(srv.URL + "/endless")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the handler still writes after the client left (%d items)", yielded.Load())
	}
	// The request log line follows the handler's return.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(srv.logs.String(), "write list"); {
		if time.Now().After(deadline) {
			t.Fatalf("the broken write is not in the request log:\n%s", srv.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWriteListEncodeError(t *testing.T) {
	srv := newTestServer(t, nil, func(e *gin.Engine) {
		e.GET("/first", func(c *gin.Context) {
			WriteList(c, ListQuery{}, 2, func(yield func(listItem) bool) {
				yield(listItem{ID: 1, Note: math.NaN()}) // json cannot encode NaN
			})
		})
		e.GET("/later", func(c *gin.Context) {
			WriteList(c, ListQuery{}, 100_000, func(yield func(listItem) bool) {
				for i := range 100_000 {
					item := listItem{ID: int64(i), Login: "x"}
					if i == 50_000 {
						item.Note = math.Inf(1)
					}
					if !yield(item) {
						return
					}
				}
			})
		})
	})

	// Nothing sent yet: a proper 500.
	resp, body := srv.get(t, "/first", HeaderRequestID, "r1")
	assertJSONResponse(t, resp, body, http.StatusInternalServerError, map[string]any{
		"error": CodeInternal, "cause": "internal error (request id r1)",
	})
	// Half sent: the body is cut short and is not valid JSON.
	resp, body = srv.get(t, "/later")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if json.Valid(body) || len(body) < listFlushBytes {
		t.Errorf("a failed list reads as valid JSON (%d bytes)", len(body))
	}
	if !strings.Contains(srv.logs.String(), "encode list item 50000") {
		t.Errorf("the encode error is not logged:\n%.3000s", srv.logs.String())
	}
}

// BenchmarkWriteList measures streaming a 10k-item list through gin.
func BenchmarkWriteList(b *testing.B) {
	engine := New(Options{Logger: discardLogger()})
	engine.GET("/l", func(c *gin.Context) { WriteList(c, ListQuery{}, 10_000, seqOf(0, 10_000)) })
	req, _ := http.NewRequest(http.MethodGet, "/l", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := &countingWriter{header: http.Header{}}
		engine.ServeHTTP(w, req)
		b.SetBytes(int64(w.n))
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

type countingWriter struct {
	header http.Header
	n      int
}

func (w *countingWriter) Header() http.Header         { return w.header }
func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
func (w *countingWriter) WriteHeader(int)             {}

package tvipimport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"tvsm/internal/platform/schedule"
)

// Endpoint is a server and the admin it is asked as (HTTP Basic).
type Endpoint struct {
	// URL is the server's base URL, e.g. http://tms.example.net.
	URL             string
	Login, Password string
}

// Retry bounds the retries of a request that got no answer (the network)
// or a 5xx or 429 answer: Attempts in all, pausing First, then twice as long
// each time up to Max (or as long as Retry-After asks, up to Max).
type Retry struct {
	Attempts   int
	First, Max time.Duration
}

// DefaultRetry rides out a restart of either server.
var DefaultRetry = Retry{Attempts: 8, First: 250 * time.Millisecond, Max: 8 * time.Second}

// StatusError is an answer other than 2xx, after the retries it allowed.
type StatusError struct {
	Method, Path string
	Status       int
	// Cause is the server's own words: the Error object's cause and
	// fields, or the start of its body.
	Cause    string
	Attempts int
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Cause)
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// client asks one server, retrying what may succeed later.
type client struct {
	ep    Endpoint
	http  *http.Client
	retry Retry
}

func newClient(ep Endpoint, hc *http.Client, retry Retry) *client {
	if retry.Attempts <= 0 {
		retry = DefaultRetry
	}
	ep.URL = strings.TrimRight(ep.URL, "/")
	return &client{ep: ep, http: hc, retry: retry}
}

// answer is a server's answer to one request.
type answer struct {
	status   int
	body     []byte
	attempts int
}

// do sends one request (body as JSON when not nil) and returns the answer;
// an error only when no answer came after every attempt.
func (c *client) do(ctx context.Context, method, path string, header http.Header, body any) (answer, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return answer{}, err
		}
	}
	pause := c.retry.First
	for attempt := 1; ; attempt++ {
		a, wait, err := c.once(ctx, method, path, header, data)
		a.attempts = attempt
		retriable := err != nil || a.status >= 500 || a.status == http.StatusTooManyRequests
		if !retriable || attempt >= c.retry.Attempts || ctx.Err() != nil {
			if err != nil {
				return a, fmt.Errorf("%s %s: %w (after %d attempts)", method, path, err, attempt)
			}
			return a, nil
		}
		if wait <= 0 || wait > c.retry.Max {
			wait = min(pause, c.retry.Max)
		}
		pause *= 2
		if !schedule.Sleep(ctx, wait) {
			return a, ctx.Err()
		}
	}
}

// once sends a request once; wait is the answer's Retry-After.
func (c *client) once(ctx context.Context, method, path string, header http.Header, data []byte) (answer, time.Duration, error) {
	var rd io.Reader
	if data != nil {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.ep.URL+path, rd)
	if err != nil {
		return answer{}, 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.ep.Login != "" || c.ep.Password != "" {
		req.SetBasicAuth(c.ep.Login, c.ep.Password)
	}
	req.Header.Set("Accept", "application/json")
	if data != nil || method != http.MethodGet {
		// tvsm refuses a POST that does not declare JSON, bodiless ones too.
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return answer{}, 0, err
	}
	var wait time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		wait = time.Duration(s) * time.Second
	}
	return answer{status: resp.StatusCode, body: body}, wait, nil
}

// call is do for a request that must answer 2xx: the JSON answer is
// decoded into out (when not nil); another status is a *StatusError.
func (c *client) call(ctx context.Context, method, path string, header http.Header, body, out any) error {
	a, err := c.do(ctx, method, path, header, body)
	if err != nil {
		return err
	}
	if a.status/100 != 2 {
		return &StatusError{Method: method, Path: path, Status: a.status, Cause: cause(a.body), Attempts: a.attempts}
	}
	if out == nil {
		return nil
	}
	return decodeJSON(a.body, out)
}

func decodeJSON(data []byte, out any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(out)
}

// cause is what a server said of a refusal: tvsm's Error object (cause and
// the fields named), else the start of the body.
func cause(body []byte) string {
	var e struct {
		Cause  string            `json:"cause"`
		Fields map[string]string `json:"fields"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Cause != "" || len(e.Fields) > 0) {
		s := e.Cause
		for _, k := range sortedKeys(e.Fields) {
			// tvsm's cause already lists its fields so; each is named once.
			if f := fmt.Sprintf("%s: %s", k, e.Fields[k]); !strings.Contains(s, f) {
				s += "; " + f
			}
		}
		return strings.TrimPrefix(s, "; ")
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// object is one object of a Provider API list, numbers kept as written.
type object map[string]any

// id is the object's id; ok false when it has none that is a positive
// integer.
func (o object) id() (int64, bool) {
	n, ok := o["id"].(json.Number)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(string(n), 10, 64)
	return id, err == nil && id > 0
}

// errNotServed: the server answers 404 for a whole collection.
var errNotServed = errors.New("not served")

// list reads a whole collection, a page of pageSize at a time (start and
// limit, sorted by id, as TVIP's SDK example pages: an unsorted list may
// change its order between pages). A page that fails after its retries
// ends the read with the error, naming the page.
func (c *client) list(ctx context.Context, path string, pageSize int) ([]object, error) {
	var all []object
	for start := 0; ; {
		q := url.Values{"start": {strconv.Itoa(start)}, "limit": {strconv.Itoa(pageSize)}, "sort": {"id"}}
		var page struct {
			Data  []object    `json:"data"`
			Total json.Number `json:"total"`
		}
		err := c.call(ctx, http.MethodGet, path+"?"+q.Encode(), nil, nil, &page)
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound && start == 0 {
			return nil, fmt.Errorf("%w: %w", errNotServed, err)
		}
		if err != nil {
			return all, fmt.Errorf("page at start=%d: %w", start, err)
		}
		all = append(all, page.Data...)
		total, _ := strconv.Atoi(string(page.Total))
		start += len(page.Data)
		if len(page.Data) == 0 || (total > 0 && start >= total) {
			return all, nil
		}
	}
}

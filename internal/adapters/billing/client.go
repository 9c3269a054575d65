package billing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultMaxRequestBody  = 64 << 10
	DefaultMaxResponseBody = 1 << 20
	DefaultMaxConnsPerHost = 64
	userAgent              = "tvsm-billing-proxy"
)

// Why a call failed. Client.Do wraps one of them; the proxy answers 413
// for ErrRequestTooLarge, 504 for ErrTimeout and 502 for the others.
var (
	ErrRequestTooLarge  = errors.New("request body too large")
	ErrBadBillingURL    = errors.New("billing url is not an absolute http or https URL")
	ErrTimeout          = errors.New("billing did not answer in time")
	ErrUnreachable      = errors.New("billing unreachable")
	ErrResponseTooLarge = errors.New("billing response too large")
	ErrRedirect         = errors.New("billing answered with a redirect, which is not followed")
	// ErrCanceled: the caller gave up (the device went away) before billing
	// answered.
	ErrCanceled = errors.New("call canceled by the caller")
)

// Failure returns the journal's word for err: timeout, unreachable,
// response_too_large, redirect, canceled, bad_url, request_too_large,
// forbidden_address or failed.
func Failure(err error) string {
	for _, f := range []struct {
		err  error
		name string
	}{
		{ErrTimeout, "timeout"}, {ErrUnreachable, "unreachable"}, {ErrResponseTooLarge, "response_too_large"},
		{ErrRedirect, "redirect"}, {ErrCanceled, "canceled"}, {ErrBadBillingURL, "bad_url"},
		{ErrRequestTooLarge, "request_too_large"}, {ErrForbiddenAddress, "forbidden_address"},
	} {
		if errors.Is(err, f.err) {
			return f.name
		}
	}
	return "failed"
}

// Options configure a Client; zero fields take the defaults.
type Options struct {
	// HeaderPrefix starts the account and provider headers
	// (DefaultHeaderPrefix).
	HeaderPrefix string
	// Timeout bounds a whole call: connecting, sending, and reading the
	// entire response (DefaultTimeout).
	Timeout time.Duration
	// MaxRequestBody is the largest body forwarded to billing
	// (DefaultMaxRequestBody bytes).
	MaxRequestBody int64
	// MaxResponseBody is the largest billing answer passed back
	// (DefaultMaxResponseBody bytes).
	MaxResponseBody int64
	// MaxConnsPerHost bounds the connections to one billing host
	// (DefaultMaxConnsPerHost); calls beyond it wait, within Timeout.
	MaxConnsPerHost int
	// Addresses decides which addresses calls may connect to (Policy: by
	// default none of the operator's own hosts and networks).
	Addresses Policy
}

func (o Options) withDefaults() Options {
	if o.HeaderPrefix == "" {
		o.HeaderPrefix = DefaultHeaderPrefix
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = DefaultMaxRequestBody
	}
	if o.MaxResponseBody <= 0 {
		o.MaxResponseBody = DefaultMaxResponseBody
	}
	if o.MaxConnsPerHost <= 0 {
		o.MaxConnsPerHost = DefaultMaxConnsPerHost
	}
	return o
}

// Client calls operator billing systems. One Client serves every provider
// and is safe for concurrent use; its connections are pooled per billing
// host. Close releases the idle ones.
type Client struct {
	opts      Options
	transport *http.Transport
	http      *http.Client
}

// NewClient returns a Client; it fails on a bad header prefix.
func NewClient(opts Options) (*Client, error) {
	opts = opts.withDefaults()
	if err := ValidateHeaderPrefix(opts.HeaderPrefix); err != nil {
		return nil, err
	}
	// The policy is checked on the address each connection goes to, after
	// name resolution. So no outbound proxy either: its address would be
	// checked instead of billing's.
	dialer := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second, Control: opts.Addresses.control}
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    16,
		MaxConnsPerHost:        opts.MaxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    min(opts.Timeout, 10*time.Second),
		ResponseHeaderTimeout:  opts.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// The body goes back to the device byte for byte: no transparent
		// gzip that would change it and hide its length.
		DisableCompression: true,
	}
	return &Client{opts: opts, transport: t, http: &http.Client{
		Transport: t,
		// A redirect would carry the signature and the ids to another
		// address: never followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// Options returns the client's options with the defaults filled in.
func (c *Client) Options() Options { return c.opts }

// Close closes the client's idle connections. Calls in flight finish.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// Request is one call to an operator's billing.
type Request struct {
	// BaseURL and Token are the provider's billing settings.
	BaseURL string
	Token   string
	Method  string
	// Path is the billing interface path (/api/cabinet), appended to
	// BaseURL's own path.
	Path string
	// RawQuery is forwarded as is (the device's query).
	RawQuery string
	// Body is forwarded as is; when not empty it is sent as JSON with its
	// Content-Length, which the signature covers.
	Body              []byte
	Account, Provider int64
	// AcceptLanguage is the device's locale; dropped when it is not a sane
	// header value.
	AcceptLanguage string
	// AuthToken, when set, replaces the computed signature (for checking
	// that billing refuses a wrong one).
	AuthToken string
}

// Response is billing's answer, read whole.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Endpoint returns the URL a call to path goes to: base with path appended
// to its own path (a trailing slash of base dropped), the given query, and
// no fragment. A base with user information (user:password@) is refused
// (ErrUserInfo): the HTTP client would send it to billing as Basic
// authorisation.
func Endpoint(base, path, rawQuery string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, ErrBadBillingURL
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBillingURL, ErrUserInfo)
	}
	out := *u
	out.Path = strings.TrimRight(u.Path, "/") + path
	if u.RawPath != "" {
		out.RawPath = strings.TrimRight(u.RawPath, "/") + path
	}
	out.RawQuery, out.ForceQuery = rawQuery, false
	out.Fragment, out.RawFragment = "", ""
	return &out, nil
}

// NewHTTPRequest builds the signed request for r, bound to ctx. Only the
// identifying headers, Accept-Language, X-AUTH-TOKEN and the ones describing
// the body are set: nothing of the device's request but its locale reaches
// billing.
func (c *Client) NewHTTPRequest(ctx context.Context, r Request) (*http.Request, error) {
	if int64(len(r.Body)) > c.opts.MaxRequestBody {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrRequestTooLarge, len(r.Body), c.opts.MaxRequestBody)
	}
	target, err := Endpoint(r.BaseURL, r.Path, r.RawQuery)
	if err != nil {
		return nil, err
	}
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, target.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBillingURL, err)
	}
	// Exact-case names: the wire shows the documented spelling, for billing
	// code that matches header names case-sensitively.
	h := req.Header
	h[AccountHeader(c.opts.HeaderPrefix)] = []string{strconv.FormatInt(r.Account, 10)}
	h[ProviderHeader(c.opts.HeaderPrefix)] = []string{strconv.FormatInt(r.Provider, 10)}
	if lang := headerValue(r.AcceptLanguage); lang != "" {
		h.Set(HeaderAcceptLanguage, lang)
	}
	sig := r.AuthToken
	if sig == "" {
		sig = Sign(req.URL.EscapedPath(), r.Token, req.ContentLength)
	}
	h[HeaderAuthToken] = []string{sig}
	h.Set("Accept", "application/json")
	h.Set("User-Agent", userAgent)
	if req.ContentLength > 0 {
		h.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Do makes the call and reads billing's whole answer, within the client's
// Timeout. Billing's status is returned as it is, success or not; err is
// set (wrapping one of the Err values) only when there is no usable answer:
// a bad request or billing URL, a timeout, a transport failure, a body over
// MaxResponseBody, a redirect, or ctx ending first (ErrCanceled).
func (c *Client) Do(ctx context.Context, r Request) (Response, error) {
	callCtx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := c.NewHTTPRequest(callCtx, r)
	if err != nil {
		return Response{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Response{}, classify(ctx, callCtx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return Response{}, fmt.Errorf("%w: status %d", ErrRedirect, resp.StatusCode)
	}
	limit := c.opts.MaxResponseBody
	if resp.ContentLength > limit {
		return Response{}, fmt.Errorf("%w: Content-Length %d, limit %d", ErrResponseTooLarge, resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return Response{}, classify(ctx, callCtx, err)
	}
	if int64(len(data)) > limit {
		return Response{}, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, limit)
	}
	return Response{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: data}, nil
}

// classify names a transport error: the caller's context ended, the call's
// own deadline passed (or a network timeout), or anything else, which is
// billing being unreachable or breaking the connection.
func classify(parent, call context.Context, err error) error {
	var netErr net.Error
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return err
	case parent.Err() != nil:
		return fmt.Errorf("%w: %v", ErrCanceled, err)
	case errors.Is(call.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	return fmt.Errorf("%w: %v", ErrUnreachable, err)
}

package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/internal/platform/throttle"
	"tvsm/wsgateway"
)

// Device API: the routes client devices call. Login gives a
// token; every other route takes it (DeviceAuth).

// Error codes of the Device API.
const (
	CodeDeviceLimit = "device_limit"
	CodeNoServices  = "no_services"
)

// Body limits of the Device API: a login is small; a viewing report holds
// up to command.MaxViewingSessions sessions.
const (
	deviceLoginMaxBytes   = 16 << 10
	deviceViewingMaxBytes = 256 << 10
)

// DeviceIdentity is the device a request acts for (CurrentDevice).
type DeviceIdentity = query.DeviceIdentity

// DeviceSockets upgrades an authenticated device's request to its
// websocket; *wsgateway.Hub implements it.
type DeviceSockets interface {
	Upgrade(w http.ResponseWriter, r *http.Request, id wsgateway.Identity) error
}

type deviceKey struct{}

// DeviceFromContext returns the device DeviceAuth authenticated.
func DeviceFromContext(ctx context.Context) (DeviceIdentity, bool) {
	d, ok := ctx.Value(deviceKey{}).(DeviceIdentity)
	return d, ok
}

// CurrentDevice returns the device DeviceAuth authenticated for c.
func CurrentDevice(c *gin.Context) (DeviceIdentity, bool) {
	return DeviceFromContext(c.Request.Context())
}

// DeviceAuth authenticates every request of the routes it is used on with
// a device token, from "Authorization: Bearer <token>" or, for clients
// that cannot set headers (browsers opening a websocket), the query
// parameter token. The device is stored in the request's context
// (CurrentDevice). A missing, invalid, expired or revoked token is
// answered 401 with the JSON error body and WWW-Authenticate: Bearer.
func DeviceAuth(auth DeviceAuthenticator) gin.HandlerFunc {
	return func(c *gin.Context) {
		token, msg := deviceToken(c.Request)
		if msg != "" {
			deviceUnauthorized(c, msg)
			return
		}
		d, err := auth.Authenticate(c.Request.Context(), token)
		switch {
		case errors.Is(err, query.ErrDeviceUnauthorized):
			deviceUnauthorized(c, "invalid, expired or revoked device token; log in again")
			return
		case err != nil:
			WriteError(c, err)
			return
		}
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), deviceKey{}, d))
		if !AwaitMinPosition(c) {
			return
		}
		c.Next()
	}
}

// deviceToken returns the request's token, or msg saying what is wrong.
func deviceToken(r *http.Request) (token, msg string) {
	if h := strings.TrimSpace(r.Header.Get("Authorization")); h != "" {
		scheme, token, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return "", "Bearer authentication required"
		}
		if token = strings.TrimSpace(token); token == "" {
			return "", "empty Bearer token"
		}
		return token, ""
	}
	if token = r.URL.Query().Get("token"); token != "" {
		return token, ""
	}
	return "", "device token required (Authorization: Bearer <token> or ?token=)"
}

func deviceUnauthorized(c *gin.Context, cause string) {
	c.Header("WWW-Authenticate", `Bearer realm="`+BasicRealm+`"`)
	WriteError(c, Unauthorized(cause))
}

// mountDevice adds the Device API's routes to g (/api/device).
//
//	POST /login     device login → token (no auth; throttled)
//	GET  /channels  channels of the account's active tariffs
//	POST /viewing   viewing sessions → 204
//	GET  /ws        the device's websocket (when sockets is set)
func mountDevice(g *gin.RouterGroup, api DeviceAPI, sockets DeviceSockets, logins *throttle.Guard) {
	if api.Writes == nil || api.Sessions == nil {
		return
	}
	h := &deviceHandlers{api: api, sockets: sockets, logins: logins}
	auth := DeviceAuth(api.Sessions)
	g.POST("/login", h.login)
	g.GET("/channels", auth, h.channels)
	g.POST("/viewing", auth, h.viewing)
	if sockets != nil {
		g.GET("/ws", auth, h.websocket)
	}
}

type deviceHandlers struct {
	api     DeviceAPI
	sockets DeviceSockets
	logins  *throttle.Guard
}

// deviceLoginAnswer is the body of a successful login.
type deviceLoginAnswer struct {
	Token             string        `json:"token"`
	AccountID         int64         `json:"account_id"`
	DeviceID          int64         `json:"device_id"`
	ServicesAvailable bool          `json:"services_available"`
	Message           string        `json:"message"`
	Expires           wire.DateTime `json:"expires"`
}

// deviceLimitAnswer is the 403 of a login refused by the device limit.
type deviceLimitAnswer struct {
	*Error
	Devices []deviceView `json:"devices"`
}

type deviceView struct {
	ID       int64  `json:"id"`
	UniqueID string `json:"unique_id"`
	Class    string `json:"class"`
	Model    string `json:"model"`
}

func (h *deviceHandlers) login(c *gin.Context) {
	obj, err := ReadObject(c, wire.DecodeOptions{MaxBytes: deviceLoginMaxBytes})
	if err != nil {
		WriteError(c, err)
		return
	}
	in := decodeDeviceLogin(obj)
	if err := validated(obj, h.api.Writes.ValidateLogin(in)); err != nil {
		WriteError(c, err)
		return
	}
	// The login checks the credentials against the read model: a device
	// whose account was just created on another node waits for it here.
	if !AwaitMinPosition(c) {
		return
	}
	in.RequestID = RequestID(c.Request.Context())
	in.Address = c.ClientIP()
	login, addr := strconv.FormatInt(in.Provider, 10)+"/"+in.Login, c.ClientIP()
	s, err := h.throttledLogin(c.Request.Context(), login, addr, in)
	var (
		limit     *domain.DeviceLimitError
		throttled *ThrottledError
	)
	switch {
	case errors.As(err, &throttled):
		writeAuthError(c, err)
		return
	case errors.Is(err, command.ErrBadDeviceCredentials):
		WriteError(c, Unauthorized("invalid provider, login or password"))
		return
	case errors.As(err, &limit):
		writeDeviceLimit(c, limit)
		return
	case err != nil:
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, deviceLoginAnswer{
		Token: s.Token, AccountID: s.Account, DeviceID: s.Device,
		ServicesAvailable: s.ServicesAvailable, Message: s.Message, Expires: wire.NewDateTime(s.Expires, nil),
	})
}

// throttledLogin logs the device in unless the login guard refuses the
// attempt (a *ThrottledError), and records the outcome with the guard: a
// refusal by the device limit is a success, since the password matched.
func (h *deviceHandlers) throttledLogin(ctx context.Context, login, addr string, in command.DeviceLoginInput) (command.DeviceSession, error) {
	attempt, refusal, ok := h.logins.Begin(ctx, login, addr)
	if !ok {
		return command.DeviceSession{}, Refused(refusal)
	}
	var (
		s        command.DeviceSession
		err      error
		returned bool
	)
	defer func() {
		outcome := err
		if limit := (*domain.DeviceLimitError)(nil); errors.As(err, &limit) {
			outcome = nil
		}
		finishAttempt(attempt, returned, outcome, command.ErrBadDeviceCredentials)
	}()
	s, err = h.api.Writes.Login(ctx, in)
	returned = true
	return s, err
}

// decodeDeviceLogin reads a login body; type errors and missing fields are
// recorded on obj (provider, device.unique_id, ...). A body with neither
// login nor password_md5 asks to log in by the account network of the
// client's address.
func decodeDeviceLogin(obj *wire.Object) command.DeviceLoginInput {
	obj.Require("provider", "device")
	in := command.DeviceLoginInput{
		Provider:    obj.Int64("provider").Or(0),
		Login:       obj.String("login").Or(""),
		PasswordMD5: obj.String("password_md5").Or(""),
	}
	if dev, ok := obj.Object("device").Get(); ok {
		dev.Require("unique_id", "class")
		in.UniqueID = dev.String("unique_id").Or("")
		in.Class = domain.DeviceClass(dev.String("class").Or(""))
		in.Model = dev.String("model").Or("")
		in.Firmware = dev.String("firmware").Or("")
		in.OS = dev.String("os").Or("")
	}
	return in
}

// validated merges the service's verdict on a decoded body's values into
// the body's own type errors and returns them all (nil when there are
// none). A value problem of a field that has a type error, or lies inside
// one ("device.class" when "device" is not an object), is left out: it
// only echoes the type error.
func validated(obj *wire.Object, verdict error) error {
	var ve *domain.ValidationError
	if !errors.As(verdict, &ve) {
		if err := obj.Err(); err != nil {
			return err
		}
		return verdict
	}
	typeErrs, _ := obj.Err().(wire.FieldErrors)
	for field, problem := range ve.Fields {
		if !coveredBy(typeErrs, field) {
			obj.Fail(field, problem)
		}
	}
	return obj.Err()
}

// coveredBy reports whether field or an object holding it has an error.
func coveredBy(errs wire.FieldErrors, field string) bool {
	for f := field; ; {
		if _, ok := errs[f]; ok {
			return true
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			return false
		}
		f = f[:i]
	}
}

func writeDeviceLimit(c *gin.Context, e *domain.DeviceLimitError) {
	body := deviceLimitAnswer{Error: Forbidden(e.Error()), Devices: make([]deviceView, len(e.Bound))}
	body.Code = CodeDeviceLimit
	for i, d := range e.Bound {
		body.Devices[i] = deviceView{ID: d.ID, UniqueID: d.UniqueID, Class: string(d.Class), Model: d.Model}
	}
	_ = c.Error(e)
	c.AbortWithStatusJSON(http.StatusForbidden, body)
}

// deviceChannelsAnswer is the body of GET /api/device/channels.
type deviceChannelsAnswer struct {
	Channels []deviceChannelView `json:"channels"`
	// Categories names the categories the channels list, keyed by id.
	Categories map[string]string `json:"categories"`
}

type deviceChannelView struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Number     int     `json:"number"`
	LogoURL    string  `json:"logo_url"`
	Categories []int64 `json:"categories"`
}

// noServicesAnswer is the 403 of a device without services; message is
// what the device shows.
type noServicesAnswer struct {
	*Error
	Message string `json:"message"`
}

func (h *deviceHandlers) channels(c *gin.Context) {
	d, _ := CurrentDevice(c)
	l, err := h.api.Sessions.Channels(c.Request.Context(), d)
	var none *query.NoServicesError
	switch {
	case errors.As(err, &none):
		body := noServicesAnswer{Error: Forbidden(none.Message), Message: none.Message}
		body.Code = CodeNoServices
		_ = c.Error(err)
		c.AbortWithStatusJSON(http.StatusForbidden, body)
		return
	case errors.Is(err, query.ErrDeviceUnauthorized):
		deviceUnauthorized(c, "the device's account is gone; log in again")
		return
	case err != nil:
		WriteError(c, err)
		return
	}
	body := deviceChannelsAnswer{Channels: make([]deviceChannelView, len(l.Channels)), Categories: make(map[string]string, len(l.Categories))}
	for i, ch := range l.Channels {
		body.Channels[i] = deviceChannelView{ID: ch.ID, Name: ch.Name, Number: ch.Number, LogoURL: ch.LogoURL, Categories: ch.Categories}
	}
	for id, name := range l.Categories {
		body.Categories[strconv.FormatInt(id, 10)] = name
	}
	c.JSON(http.StatusOK, body)
}

func (h *deviceHandlers) viewing(c *gin.Context) {
	d, _ := CurrentDevice(c)
	obj, err := ReadObject(c, wire.DecodeOptions{MaxBytes: deviceViewingMaxBytes})
	if err != nil {
		WriteError(c, err)
		return
	}
	sessions := decodeViewing(obj)
	if err := validated(obj, h.api.Writes.ValidateViewing(sessions)); err != nil {
		WriteError(c, err)
		return
	}
	r := command.ViewingReport{
		Sessions:       sessions,
		RequestID:      RequestID(c.Request.Context()),
		IdempotencyKey: strings.TrimSpace(c.GetHeader(IdempotencyKeyHeader)),
	}
	if err := h.api.Writes.ReportViewing(c.Request.Context(), d, r); err != nil {
		WriteError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// decodeViewing reads a viewing report's sessions; type errors and missing
// fields are recorded on obj as sessions[3].start. The command checks the
// values.
func decodeViewing(obj *wire.Object) []command.ViewingSession {
	obj.Require("sessions")
	items, _ := obj.ObjectList("sessions").Get()
	if len(items) > command.MaxViewingSessions {
		obj.Fail("sessions", "must hold at most "+strconv.Itoa(command.MaxViewingSessions)+" sessions")
		return nil
	}
	out := make([]command.ViewingSession, len(items))
	for i, s := range items {
		s.Require("channel_id", "mode", "start", "seconds")
		out[i] = command.ViewingSession{
			Channel: s.Int64("channel_id").Or(0),
			Mode:    s.String("mode").Or(""),
			Start:   s.DateTime("start").Or(time.Time{}),
			Seconds: s.Int64("seconds").Or(0),
		}
	}
	return out
}

func (h *deviceHandlers) websocket(c *gin.Context) {
	d, _ := CurrentDevice(c)
	id := wsgateway.Identity{Device: d.Device, Account: d.Account, Provider: d.Provider, Address: c.ClientIP()}
	err := h.sockets.Upgrade(c.Writer, c.Request, id)
	switch {
	case errors.Is(err, wsgateway.ErrAddressFull):
		writeAddressFull(c, err)
	case err != nil:
		_ = c.Error(err) // the upgrader answered the client
	}
	c.Abort()
}

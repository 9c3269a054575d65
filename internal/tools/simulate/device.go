package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"tvsm/internal/platform/schedule"
)

// errDenied ends a device for good: its login is refused for a reason a
// retry cannot fix (bad credentials, device limit).
var errDenied = errors.New("login denied")

// device runs virtual device i until ctx is done: log in, connect, serve
// commands; after a drop, reconnect (logging in again when told to).
func (s *Sim) device(ctx context.Context, i int) {
	if s.opts.CentrifugoChannel != "" {
		s.centrifugoDevice(ctx)
		return
	}
	backoff := 100 * time.Millisecond
	token := ""
	for ctx.Err() == nil {
		if token == "" {
			t, err := s.doLogin(ctx, i)
			if errors.Is(err, errDenied) {
				s.fail(err)
				return
			}
			if err != nil {
				s.fail(err)
				// A refusal's Retry-After is a floor: the node knows when
				// it may have room.
				wait := jitter(backoff)
				if se := (*ServerError)(nil); errors.As(err, &se) && se.RetryAfter > wait {
					wait = se.RetryAfter + jitter(se.RetryAfter/2)
				}
				schedule.Sleep(ctx, wait)
				backoff = min(2*backoff, 10*time.Second)
				continue
			}
			token = t
			s.c.LoggedIn.Add(1)
		}
		relogin, err := s.session(ctx, i, token)
		if ctx.Err() != nil {
			return
		}
		if relogin {
			token = ""
			s.c.LoggedIn.Add(-1)
		}
		if err != nil {
			s.fail(err)
		}
		s.c.Reconnects.Add(1)
		schedule.Sleep(ctx, jitter(backoff))
		backoff = min(2*backoff, 10*time.Second)
	}
}

type loginResponse struct {
	Token string `json:"token"`
	raw   []byte
	// retryAfter is the Retry-After of a refusal, in whole seconds.
	retryAfter time.Duration
}

// UnmarshalJSON keeps the body, for an error's cause.
func (l *loginResponse) UnmarshalJSON(data []byte) error {
	l.raw = append(l.raw[:0], data...)
	var v struct {
		Token string `json:"token"`
	}
	err := json.Unmarshal(data, &v)
	l.Token = v.Token
	return err
}

// doLogin logs device i in and returns its token.
func (s *Sim) doLogin(ctx context.Context, i int) (string, error) {
	body, _ := json.Marshal(map[string]any{
		"provider":     s.opts.Provider,
		"login":        s.login(i),
		"password_md5": s.passwordMD5(),
		"device": map[string]string{
			"unique_id": fmt.Sprintf("%s%d", s.opts.UniquePrefix, i),
			"class":     classes[i%len(classes)],
			"model":     "tvsm-simulate",
		},
	})
	if s.logins != nil {
		select {
		case s.logins <- struct{}{}:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		defer func() { <-s.logins }()
	}
	var out loginResponse
	status, err := s.call(ctx, http.MethodPost, "/api/device/login", "", body, &out)
	switch {
	case err != nil:
		return "", err
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "", fmt.Errorf("%w: login of %s: %w", errDenied, s.login(i), serverError(status, out.raw))
	case status != http.StatusOK || out.Token == "":
		se := serverError(status, out.raw)
		se.RetryAfter = out.retryAfter
		return "", fmt.Errorf("login of %s: %w", s.login(i), se)
	}
	return out.Token, nil
}

// call makes a JSON request and decodes a JSON answer into out (when not
// nil and the status is 2xx). It returns the status.
func (s *Sim) call(ctx context.Context, method, path, token string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.opts.URL+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if lr, ok := out.(*loginResponse); ok && resp.StatusCode/100 != 2 {
		lr.raw, _ = io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			lr.retryAfter = time.Duration(min(secs, 3600)) * time.Second
		}
		return resp.StatusCode, nil
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// serverMessage is a server → device message.
type serverMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Command json.RawMessage `json:"command"`
}

type commandFields struct {
	Command string `json:"command"`
	Type    string `json:"type"`
}

// session holds one websocket until it ends. relogin is true when the
// server dropped the device's authorisation.
func (s *Sim) session(ctx context.Context, i int, token string) (relogin bool, err error) {
	wsURL := "ws" + strings.TrimPrefix(s.opts.URL, "http") + "/api/device/ws"
	connected := false
	stopViewing := func() {}
	unauthorized, err := s.run(ctx, session{
		url: wsURL, header: http.Header{"Authorization": {"Bearer " + token}},
		h: newDeviceHandler(s),
		connected: func() {
			connected = true
			s.c.Connected.Add(1)
			if s.opts.ViewEvery > 0 {
				vctx, cancel := context.WithCancel(ctx)
				stopViewing = cancel
				go s.view(vctx, token)
			}
		},
	})
	stopViewing()
	if connected {
		s.c.Connected.Add(-1)
	}
	switch {
	case unauthorized:
		return true, nil
	case closeCode(err) == 4003:
		return true, nil
	}
	return false, err
}

// The simulator receives a message for little CPU, so that a load of many
// devices measures the server rather than itself: the message is read into
// a buffer the connection reuses, a command in the form the server writes
// is taken apart by hand, and the replies are assembled in another buffer.

// replyRoom is the room made for a reply at connection (the server's
// delivery ids are short): a connection's first message allocates nothing.
const replyRoom = 128

// deviceHandler acknowledges a device's commands.
type deviceHandler struct {
	s   *Sim
	got int
	buf []byte
}

func newDeviceHandler(s *Sim) *deviceHandler {
	return &deviceHandler{s: s, buf: make([]byte, 0, replyRoom)}
}

func (h *deviceHandler) message(data []byte, out replies) error {
	id, command, ok := parseCommand(data)
	if !ok {
		return nil
	}
	// When it arrived, before the replies: a Centrifugo client replies
	// nothing, and the two are compared.
	arrived := time.Now()
	s := h.s
	s.c.Commands.Add(1)
	if !s.opts.NoReceipts {
		if err := h.receipts(id, command, out); err != nil {
			return err
		}
	}
	h.got++
	s.gotCommand(h.got, arrived)
	if h.got == s.opts.StopAfterCommands {
		s.gotAll(arrived)
	}
	return nil
}

// receipts acknowledges command id and confirms it when it asks for it.
func (h *deviceHandler) receipts(id, command []byte, out replies) error {
	s := h.s
	if err := out.send(h.reply("ack", id)); err != nil {
		return err
	}
	s.c.Acks.Add(1)
	if wantsConfirm(command) {
		if err := out.send(h.reply("confirm", id)); err != nil {
			return err
		}
		s.c.Confirms.Add(1)
	}
	return nil
}

// commandHead is how the server's command messages begin, up to the
// delivery id: {"type":"command","id":"...","command":{...}}.
const commandHead = `{"type":"command","id":"`

// parseCommand returns the delivery id and the command object of a command
// message; ok is false for any other message.
func parseCommand(data []byte) (id, command []byte, ok bool) {
	if rest, found := bytes.CutPrefix(data, []byte(commandHead)); found {
		if i := bytes.IndexByte(rest, '"'); i > 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			if cmd, found := bytes.CutPrefix(rest[i:], []byte(`","command":`)); found && len(cmd) > 0 && cmd[len(cmd)-1] == '}' {
				// A scan, not a decode: the object must end where the
				// message does.
				if command := cmd[:len(cmd)-1]; json.Valid(command) {
					return rest[:i], command, true
				}
			}
		}
	}
	// Another form: decode it.
	var m serverMessage
	if json.Unmarshal(data, &m) != nil || m.Type != "command" {
		return nil, nil, false
	}
	return []byte(m.ID), m.Command, true
}

// wantsConfirm reports whether command is a user_message that asks to be
// confirmed. Only a command that mentions "confirm" is decoded.
func wantsConfirm(command []byte) bool {
	if !bytes.Contains(command, []byte(`"confirm"`)) {
		return false
	}
	var f commandFields
	_ = json.Unmarshal(command, &f)
	return f.Command == "user_message" && f.Type == "confirm"
}

// reply returns the reply of kind to delivery id, in a buffer reused.
func (h *deviceHandler) reply(kind string, id []byte) []byte {
	if !plain(id) {
		msg, _ := json.Marshal(map[string]string{"type": kind, "id": string(id)})
		return msg
	}
	h.buf = append(h.buf[:0], `{"type":"`...)
	h.buf = append(h.buf, kind...)
	h.buf = append(h.buf, `","id":"`...)
	h.buf = append(h.buf, id...)
	h.buf = append(h.buf, `"}`...)
	return h.buf
}

// plain reports whether s goes between JSON quotes as it is: printable
// ASCII without quote or backslash (the server's delivery ids are).
func plain(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// channelList is the answer of GET /api/device/channels.
type channelList struct {
	Channels []struct {
		ID int64 `json:"id"`
	} `json:"channels"`
}

// view reports a viewing session every ViewEvery, on a channel of the
// account's list.
func (s *Sim) view(ctx context.Context, token string) {
	var answer channelList
	if status, err := s.call(ctx, http.MethodGet, "/api/device/channels", token, nil, &answer); err != nil || status != http.StatusOK || len(answer.Channels) == 0 {
		return // no services: nothing to watch
	}
	list := answer.Channels
	t := time.NewTicker(jitter(s.opts.ViewEvery))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		secs := int64(s.opts.ViewEvery / time.Second)
		start := time.Now().Add(-s.opts.ViewEvery).UTC().Format("2006-01-02T15:04:05-0700")
		mode := "live"
		if rand.IntN(4) == 0 {
			mode = "dvr"
		}
		body, _ := json.Marshal(map[string]any{"sessions": []map[string]any{{
			"channel_id": list[rand.IntN(len(list))].ID, "mode": mode, "start": start, "seconds": max(secs, 1),
		}}})
		if status, err := s.call(ctx, http.MethodPost, "/api/device/viewing", token, body, nil); err != nil || status != http.StatusNoContent {
			if ctx.Err() == nil {
				s.fail(fmt.Errorf("viewing report: status %d: %v", status, err))
			}
			continue
		}
		s.c.Viewing.Add(1)
	}
}

// jitter returns a duration in [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

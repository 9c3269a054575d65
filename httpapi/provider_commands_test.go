package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/httpapi"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// Black-box tests of the command endpoint and the receipts view, over real
// HTTP on a real node. Deliveries and receipts are appended to the store
// directly, as the dispatcher would.

// commandsT0 is when every test's clock starts.
var commandsT0 = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// cmdWorld is a node with two providers: A with accounts a1 (devices d1,
// d2) and a2 (device d3), B with account b1 (device d4); a channel; and an
// admin scoped to A.
type cmdWorld struct {
	env        *nodetest.Env
	clock      *testutil.Clock
	su, adminA papi
	pA, pB     int64
	a1, a2, b1 int64
	d1, d2, d3 int64
	d4         int64
	channel    int64
}

func newCmdWorld(t *testing.T) *cmdWorld {
	t.Helper()
	clock := testutil.NewClock(commandsT0)
	env := nodetest.StartWith(t, nodetest.Options{Clock: clock.Now, Timers: clock})
	w := &cmdWorld{env: env, clock: clock, su: superClient(env)}
	w.pA, w.pB = mustProvider(t, env, "A"), mustProvider(t, env, "B")
	w.a1 = w.su.ok(t, http.MethodPost, "/accounts", accountBody(w.pA, "a1")).id(t)
	w.a2 = w.su.ok(t, http.MethodPost, "/accounts", accountBody(w.pA, "a2")).id(t)
	w.b1 = w.su.ok(t, http.MethodPost, "/accounts", accountBody(w.pB, "b1")).id(t)
	w.d1, w.d2 = bindDevice(t, env, w.a1, "d1"), bindDevice(t, env, w.a1, "d2")
	w.d3, w.d4 = bindDevice(t, env, w.a2, "d3"), bindDevice(t, env, w.b1, "d4")
	w.adminA = scopedClient(t, env, "ops-a", w.pA)
	w.channel = admID(t, admSuper(env).ok(t, http.MethodPost, "/channels", map[string]any{"name": "News", "number": 1}))
	return w
}

// notify is a valid command object.
func notify(text string) map[string]any {
	return map[string]any{"command": "user_message", "type": "notify", "text": text}
}

func sendBody(ids []any, commands ...any) map[string]any {
	return map[string]any{"ids": ids, "commands": commands}
}

// sent posts a send that must succeed and returns its id.
func (p papi) sent(t testing.TB, recipients string, body any) int64 {
	t.Helper()
	resp := p.ok(t, http.MethodPost, "/commands/send/"+recipients+"?broadcast=false", body)
	if resp["response"] != true {
		t.Fatalf("response = %v, want true", resp["response"])
	}
	return resp.int(t, "send_id")
}

// issued reads command-{id} and returns its only event, which must be the
// CommandsIssued, with its metadata.
func issued(t testing.TB, env *nodetest.Env, id int64) (domain.CommandsIssued, domain.Metadata) {
	t.Helper()
	recs, err := env.Store.ReadStream(context.Background(), domain.CommandStream(id), eventstore.Start, 0)
	if err != nil {
		t.Fatalf("read command-%d: %v", id, err)
	}
	// The dispatcher appends its claims after the send.
	issues := 0
	for _, r := range recs {
		if r.Type == domain.CommandsIssuedType {
			issues++
		}
	}
	if len(recs) == 0 || recs[0].Type != domain.CommandsIssuedType || issues != 1 {
		t.Fatalf("command-%d holds %d events, %d of them %s; want one, first", id, len(recs), issues, domain.CommandsIssuedType)
	}
	e, err := env.Node.Registry.Decode(recs[0].Type, recs[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	md, err := domain.DecodeMetadata(recs[0].Metadata)
	if err != nil {
		t.Fatal(err)
	}
	return e.(domain.CommandsIssued), md
}

// roundRecorded waits until the dispatcher has recorded the send-time
// round of send id's command 0 (a CommandsSent, with or without devices).
func roundRecorded(t testing.TB, env *nodetest.Env, id int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := env.Store.ReadStream(context.Background(), domain.CommandStream(id), eventstore.Start, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Type == domain.CommandsSentType {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("command-%d: no round recorded within 10s", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSendToEachRecipientClass(t *testing.T) {
	w := newCmdWorld(t)
	tests := []struct {
		recipients string
		ids        []int64
	}{
		{"providers", []int64{w.pA}},
		{"accounts", []int64{w.a1, w.a2}},
		{"devices", []int64{w.d1, w.d3}},
	}
	seen := map[int64]bool{}
	for _, tt := range tests {
		t.Run(tt.recipients, func(t *testing.T) {
			ids := make([]any, len(tt.ids))
			for i, id := range tt.ids {
				ids[i] = id
			}
			id := w.su.sent(t, tt.recipients, sendBody(ids, notify("hi "+tt.recipients)))
			if seen[id] {
				t.Fatalf("send id %d given twice", id)
			}
			seen[id] = true
			e, md := issued(t, w.env, id)
			if e.SendID != id || string(e.Recipients) != tt.recipients || fmt.Sprint(e.IDs) != fmt.Sprint(tt.ids) {
				t.Errorf("issued %+v, want send %d to %s %v", e, id, tt.recipients, tt.ids)
			}
			if e.Scope == nil || *e.Scope != w.pA {
				t.Errorf("scope %v, want provider %d: every target is A's", e.Scope, w.pA)
			}
			if !e.IssuedAt.Equal(commandsT0) || !md.OccurredAt.Equal(commandsT0) {
				t.Errorf("issued at %v (metadata %v), want %v", e.IssuedAt, md.OccurredAt, commandsT0)
			}
			if md.Actor != domain.AdminActor(w.env.SuperLogin) || md.RequestID == "" {
				t.Errorf("metadata %+v, want actor admin:%s and a request id", md, w.env.SuperLogin)
			}
			want := `{"command":"user_message","text":"hi ` + tt.recipients + `","type":"notify"}`
			if len(e.Commands) != 1 || string(e.Commands[0].Object) != want {
				t.Errorf("commands %+v, want one object %s", e.Commands, want)
			}
		})
	}
}

// Several commands in one request, in the lenient forms integrations send:
// each object reaches the event exactly as sent (compacted), unknown fields
// and all.
func TestSendSeveralCommandsAsSent(t *testing.T) {
	w := newCmdWorld(t)
	ttl := commandsT0.Add(2 * time.Hour).Unix()
	body := fmt.Sprintf(`{"ids": ["%d", %d.0],
	  "commands": [
	    {"command": "user_message", "type": "confirm", "title": "Bill", "text": "Pay <now> & \u00e9", "use_as_push": 1, "ttl": "%d", "x-extra": [1, 2]},
	    {"command": "user_message", "type": "ticker", "text": "t", "post_time": "2026-05-04T11:00:00"},
	    {"command": "user_message", "type": "notify", "text": "n", "delay": "30", "post_time": "2026-05-04T13:30:00+03:00", "ttl": %d},
	    {"command": "switch_to_channel", "channel": "%d"},
	    {"command": "refresh_channel_list"}, {"command": "reinit"}, {"command": "restart", "ttl": 0}, {"command": "update"}
	  ]}`, w.a1, w.a2, ttl, ttl, w.channel)
	status, resp := w.su.do(t, http.MethodPost, "/commands/send/accounts?broadcast=", body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, resp)
	}
	e, _ := issued(t, w.env, decodeObj(t, resp).int(t, "send_id"))
	if fmt.Sprint(e.IDs) != fmt.Sprint([]int64{w.a1, w.a2}) || len(e.Commands) != 8 {
		t.Fatalf("issued %+v", e)
	}
	// The same JSON value byte for byte, except that the event encoding
	// writes <, > and & in strings as \u003c, \u003e and \u0026.
	wantObjects := []string{
		`{"command":"user_message","type":"confirm","title":"Bill","text":"Pay \u003cnow\u003e \u0026 \u00e9","use_as_push":1,"ttl":"` +
			strconv.FormatInt(ttl, 10) + `","x-extra":[1,2]}`,
		`{"command":"user_message","type":"ticker","text":"t","post_time":"2026-05-04T11:00:00"}`,
	}
	for i, want := range wantObjects {
		if got := string(e.Commands[i].Object); got != want {
			t.Errorf("commands[%d].Object\n got %s\nwant %s", i, got, want)
		}
	}
	c := e.Commands
	checks := []struct {
		name     string
		ok       bool
		got, exp any
	}{
		{"confirm", c[0].Kind == domain.CommandUserMessage && c[0].MessageType == domain.MessageConfirm && c[0].TTL.Unix() == ttl, c[0], "confirm with ttl"},
		{"ticker post_time in GMT", c[1].PostTime.Equal(commandsT0.Add(time.Hour)), c[1].PostTime, commandsT0.Add(time.Hour)},
		{"post_time with an offset", c[2].PostTime.Equal(commandsT0.Add(30 * time.Minute)), c[2].PostTime, commandsT0.Add(30 * time.Minute)},
		{"channel as a string", c[3].Kind == domain.CommandSwitchToChannel && c[3].Channel == w.channel, c[3].Channel, w.channel},
		{"ttl 0 is none", c[6].Kind == domain.CommandRestart && c[6].TTL.IsZero(), c[6].TTL, "zero"},
		{"update", c[7].Kind == domain.CommandUpdate, c[7].Kind, domain.CommandUpdate},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.exp)
		}
	}
}

// TestSendValidation: every bad request is a 4xx naming the field, and
// appends nothing.
func TestSendValidation(t *testing.T) {
	w := newCmdWorld(t)
	past := commandsT0.Add(-time.Minute).Unix()
	soon := commandsT0.Add(time.Hour).Unix()
	acct := []any{w.a1}
	with := func(kv ...any) map[string]any {
		m := notify("hello")
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	tooManyIDs := make([]any, 10001)
	for i := range tooManyIDs {
		tooManyIDs[i] = i + 1
	}
	tooManyCommands := make([]any, 17)
	for i := range tooManyCommands {
		tooManyCommands[i] = map[string]any{"command": "restart"}
	}
	tests := []struct {
		name, path string
		body       any
		field      string
	}{
		{"message without type", "accounts", sendBody(acct, with("type", nil)), "commands[0].type"},
		{"message of unknown type", "accounts", sendBody(acct, with("type", "alert")), "commands[0].type"},
		{"message without text", "accounts", sendBody(acct, with("text", nil)), "commands[0].text"},
		{"text too long", "accounts", sendBody(acct, with("text", strings.Repeat("x", 4097))), "commands[0].text"},
		{"text not a string", "accounts", sendBody(acct, with("text", []int{1})), "commands[0].text"},
		{"negative delay", "accounts", sendBody(acct, with("delay", -1)), "commands[0].delay"},
		{"delay not an integer", "accounts", sendBody(acct, with("delay", "soon")), "commands[0].delay"},
		{"title too long, second command", "accounts",
			sendBody(acct, notify("ok"), with("type", "confirm", "title", strings.Repeat("t", 257))), "commands[1].title"},
		{"use_as_push not a boolean", "accounts", sendBody(acct, with("use_as_push", "maybe")), "commands[0].use_as_push"},
		{"switch without channel", "accounts", sendBody(acct, map[string]any{"command": "switch_to_channel"}), "commands[0].channel"},
		{"switch to an unknown channel", "accounts", sendBody(acct, map[string]any{"command": "switch_to_channel", "channel": 999999}),
			"commands[0].channel"},
		{"switch to channel -2", "accounts", sendBody(acct, map[string]any{"command": "switch_to_channel", "channel": -2}), "commands[0].channel"},
		{"ttl in the past", "accounts", sendBody(acct, with("ttl", past)), "commands[0].ttl"},
		{"ttl before post_time", "accounts", sendBody(acct, with("ttl", soon, "post_time", "2026-05-04T12:00:00")), "commands[0].ttl"},
		{"ttl in milliseconds", "accounts", sendBody(acct, with("ttl", soon*1000)), "commands[0].ttl"},
		{"ttl beyond int64 seconds", "accounts", sendBody(acct, with("ttl", "9223372036854775807")), "commands[0].ttl"},
		{"ttl not an integer", "accounts", sendBody(acct, with("ttl", "tomorrow")), "commands[0].ttl"},
		{"post_time in another form", "accounts", sendBody(acct, with("post_time", "04.05.2026 12:00")), "commands[0].post_time"},
		{"unknown command", "accounts", sendBody(acct, map[string]any{"command": "reboot"}), "commands[0].command"},
		{"no command", "accounts", sendBody(acct, map[string]any{"text": "x"}), "commands[0].command"},
		{"commands not a list", "accounts", map[string]any{"ids": acct, "commands": "restart"}, "commands"},
		{"commands empty", "accounts", sendBody(acct), "commands"},
		{"commands missing", "accounts", map[string]any{"ids": acct}, "commands"},
		{"a command that is not an object", "accounts", sendBody(acct, "restart"), "commands"},
		{"too many commands", "accounts", sendBody(acct, tooManyCommands...), "commands"},
		{"ids missing", "accounts", map[string]any{"commands": []any{notify("x")}}, "ids"},
		{"ids empty", "accounts", sendBody([]any{}, notify("x")), "ids"},
		{"ids not a list", "accounts", map[string]any{"ids": 5, "commands": []any{notify("x")}}, "ids"},
		{"too many ids", "accounts", sendBody(tooManyIDs, notify("x")), "ids"},
		{"non-positive id", "accounts", sendBody([]any{w.a1, 0}, notify("x")), "ids[1]"},
		{"id not an integer", "accounts", sendBody([]any{w.a1, w.a2, "a3"}, notify("x")), "ids[2]"},
		{"id a fraction", "accounts", sendBody([]any{1.5}, notify("x")), "ids[0]"},
		{"id null", "accounts", sendBody([]any{nil}, notify("x")), "ids[0]"},
		{"unknown account", "accounts", sendBody([]any{w.a1, 424242}, notify("x")), "ids[1]"},
		{"unknown provider", "providers", sendBody([]any{424242}, notify("x")), "ids[0]"},
		{"unknown device", "devices", sendBody([]any{424242}, notify("x")), "ids[0]"},
		{"an account id as a device", "devices", sendBody([]any{w.d1, w.a1 + 1000}, notify("x")), "ids[1]"},
		{"unknown recipients", "channels", sendBody(acct, notify("x")), "recipients"},
		{"broadcast", "accounts?broadcast=true", sendBody(acct, notify("x")), "broadcast"},
		{"broadcast not a boolean", "accounts?broadcast=maybe", sendBody(acct, notify("x")), "broadcast"},
	}
	before := head(t, w.env)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := w.su.fails(t, http.StatusBadRequest, http.MethodPost, "/commands/send/"+tt.path, tt.body)
			e.field(t, tt.field)
			if e.Code != httpapi.CodeValidationFailed {
				t.Errorf("error code %q", e.Code)
			}
		})
	}
	t.Run("names unknown ids", func(t *testing.T) {
		e := w.su.fails(t, http.StatusBadRequest, http.MethodPost, "/commands/send/accounts", sendBody([]any{w.a1, 424242}, notify("x")))
		if got := e.field(t, "ids[1]"); got != "unknown account 424242" {
			t.Errorf("ids[1]: %q", got)
		}
	})
	t.Run("bad JSON", func(t *testing.T) {
		e := w.su.fails(t, http.StatusBadRequest, http.MethodPost, "/commands/send/accounts", `{"ids":[1],"commands":[{"command":"restart"}]`)
		if e.Code != httpapi.CodeBadRequest {
			t.Errorf("error %+v", e)
		}
	})
	t.Run("every bad field at once", func(t *testing.T) {
		e := w.su.fails(t, http.StatusBadRequest, http.MethodPost, "/commands/send/accounts?broadcast=1",
			sendBody([]any{w.a1, -1}, with("type", "x"), map[string]any{"command": "switch_to_channel", "channel": 999999}))
		for _, f := range []string{"broadcast", "ids[1]", "commands[0].type", "commands[1].channel"} {
			e.field(t, f)
		}
	})
	if after := head(t, w.env); after != before {
		t.Errorf("bad sends appended events: head %v → %v", before, after)
	}
}

func TestSendScope(t *testing.T) {
	w := newCmdWorld(t)
	before := head(t, w.env)
	forbidden := []struct{ recipients, id string }{
		{"providers", fmt.Sprint(w.pB)},
		{"accounts", fmt.Sprint(w.b1)},
		{"devices", fmt.Sprint(w.d4)},
	}
	for _, f := range forbidden {
		body := fmt.Sprintf(`{"ids":[%s],"commands":[{"command":"restart"}]}`, f.id)
		if f.recipients != "providers" {
			// A's own target first: one foreign id forbids the whole send.
			body = fmt.Sprintf(`{"ids":[%d,%s],"commands":[{"command":"restart"}]}`, map[string]int64{"accounts": w.a1, "devices": w.d1}[f.recipients], f.id)
		}
		e := w.adminA.fails(t, http.StatusForbidden, http.MethodPost, "/commands/send/"+f.recipients, body)
		if e.Code != httpapi.CodeForbidden {
			t.Errorf("%s: %+v", f.recipients, e)
		}
	}
	status, _ := w.env.Do(t, http.MethodPost, "/api/provider/commands/send/accounts", "", "", sendBody([]any{w.a1}, notify("x")))
	if status != http.StatusUnauthorized {
		t.Errorf("without credentials: status %d, want 401", status)
	}
	status, _ = w.env.Do(t, http.MethodPost, "/api/provider/commands/send/accounts", w.env.SuperLogin, "wrong", sendBody([]any{w.a1}, notify("x")))
	if status != http.StatusUnauthorized {
		t.Errorf("with a wrong password: status %d, want 401", status)
	}
	if after := head(t, w.env); after != before {
		t.Errorf("refused sends appended events: head %v → %v", before, after)
	}

	own := w.adminA.sent(t, "devices", sendBody([]any{w.d1, w.d3}, notify("x")))
	if e, md := issued(t, w.env, own); e.Scope == nil || *e.Scope != w.pA || md.Actor != domain.AdminActor("ops-a") {
		t.Errorf("scoped admin's send: scope %v, actor %v", e.Scope, md.Actor)
	}
	both := w.su.sent(t, "accounts", sendBody([]any{w.a1, w.b1}, notify("x")))
	if e, _ := issued(t, w.env, both); e.Scope != nil {
		t.Errorf("a send to two providers has scope %d, want none", *e.Scope)
	}
}

func TestSendIdempotencyKey(t *testing.T) {
	w := newCmdWorld(t)
	key := http.Header{"Idempotency-Key": {"send-1"}}
	body := sendBody([]any{w.a1}, notify("once"))
	send := func() (int, []byte) {
		return w.su.doHeader(t, http.MethodPost, "/commands/send/accounts?broadcast=false", body, key)
	}
	status, first := send()
	if status != http.StatusOK {
		t.Fatalf("first: %d %s", status, first)
	}
	id := decodeObj(t, first).int(t, "send_id")
	roundRecorded(t, w.env, id) // the dispatcher's append, not the retry's
	before := head(t, w.env)
	status, again := send()
	if status != http.StatusOK || string(again) != string(first) {
		t.Fatalf("retry: %d %s, want 200 %s", status, again, first)
	}
	if after := head(t, w.env); after != before {
		t.Errorf("retry appended events: head %v → %v", before, after)
	}
	issued(t, w.env, id) // still exactly one CommandsIssued
	if _, err := w.env.Store.ReadStream(context.Background(), domain.CommandStream(id+1), eventstore.Start, 0); err == nil {
		t.Errorf("a second send exists after the retry")
	}
	status, _ = w.su.doHeader(t, http.MethodPost, "/commands/send/accounts", sendBody([]any{w.a1}, notify("other")), key)
	if status != http.StatusUnprocessableEntity {
		t.Errorf("same key, other body: status %d, want 422", status)
	}
	other := w.su.sent(t, "accounts", body)
	if other == id {
		t.Errorf("a send without the key got the keyed send's id %d", id)
	}
}

// appendAs appends events to stream as the dispatcher would, at time at.
func appendAs(t testing.TB, env *nodetest.Env, stream string, at time.Time, events ...domain.Event) {
	t.Helper()
	data := make([]eventstore.EventData, len(events))
	for i, e := range events {
		typ, body, err := env.Node.Registry.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		md, err := domain.EncodeMetadata(domain.Envelope{Event: e, OccurredAt: at, Actor: domain.SystemActor(), RequestID: "dispatch"})
		if err != nil {
			t.Fatal(err)
		}
		data[i] = eventstore.EventData{ID: eventstore.DeriveEventID(fmt.Sprintf("test|%s|%v", stream, at), i), Type: typ, Data: body, Metadata: md}
	}
	if _, err := env.Store.Append(context.Background(), stream, eventstore.Any, data...); err != nil {
		t.Fatal(err)
	}
}

// receiptView is the decoded answer of GET /commands/{id}.
type receiptView struct {
	SendID     int64   `json:"send_id"`
	Recipients string  `json:"recipients"`
	IDs        []int64 `json:"ids"`
	Issued     string  `json:"issued"`
	IssuedBy   *string `json:"issued_by"`
	Commands   []struct {
		Index    int             `json:"index"`
		Command  json.RawMessage `json:"command"`
		PostTime *string         `json:"post_time"`
		TTL      *int64          `json:"ttl"`
		State    string          `json:"state"`
		Counts   struct{ Sent, Acked, Confirmed int }
		Receipts []struct {
			Device                 int64
			Status                 string
			Sent, Acked, Confirmed *string
		}
	} `json:"commands"`
}

func (p papi) receipts(t testing.TB, id int64) receiptView {
	t.Helper()
	return p.receiptsPage(t, id, "")
}

// receiptsPage reads the receipts with the query string query.
func (p papi) receiptsPage(t testing.TB, id int64, query string) receiptView {
	t.Helper()
	status, body := p.do(t, http.MethodGet, "/commands/"+strconv.FormatInt(id, 10)+query, nil)
	if status != http.StatusOK {
		t.Fatalf("receipts of %d: %d %s", id, status, body)
	}
	var v receiptView
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return v
}

// statuses renders a command's receipts as "device:status ...".
func (v receiptView) statuses(i int) string {
	var parts []string
	for _, r := range v.Commands[i].Receipts {
		parts = append(parts, fmt.Sprintf("%d:%s", r.Device, r.Status))
	}
	return strings.Join(parts, " ")
}

func TestReceiptsView(t *testing.T) {
	w := newCmdWorld(t)
	ttl1, ttl2, ttl3 := commandsT0.Add(time.Hour), commandsT0.Add(2*time.Hour), commandsT0.Add(30*time.Minute)
	id := w.adminA.sent(t, "accounts", sendBody([]any{w.a1, w.a2},
		notify("now"),
		map[string]any{"command": "user_message", "type": "confirm", "title": "T", "text": "ok?", "ttl": ttl1.Unix()},
		map[string]any{"command": "restart", "post_time": "2026-05-04T10:10:00", "ttl": ttl2.Unix()},
		map[string]any{"command": "reinit", "ttl": ttl3.Unix()},
	))
	sentAt, ackAt, confirmAt := commandsT0.Add(time.Second), commandsT0.Add(2*time.Second), commandsT0.Add(time.Minute)
	cmd, rcp := domain.CommandStream(id), domain.ReceiptStream(id)
	appendAs(t, w.env, cmd, sentAt,
		domain.CommandsSent{SendID: id, Index: 0, Devices: []int64{w.d2, w.d1}},
		domain.CommandsSent{SendID: id, Index: 1, Devices: []int64{w.d1, w.d2}},
		domain.CommandsSent{SendID: id, Index: 3, Devices: []int64{w.d1}})
	appendAs(t, w.env, cmd, sentAt.Add(time.Second), domain.CommandsSent{SendID: id, Index: 1, Devices: []int64{w.d3}})
	appendAs(t, w.env, rcp, ackAt, domain.CommandsAcked{SendID: id, Index: 1, Devices: []int64{w.d1, w.d2}})
	appendAs(t, w.env, rcp, confirmAt, domain.CommandsConfirmed{SendID: id, Index: 1, Devices: []int64{w.d1}})
	appendAs(t, w.env, cmd, ttl3, domain.CommandExpired{SendID: id, Index: 3})
	w.clock.Advance(5 * time.Minute)

	v := w.su.receipts(t, id)
	if v.SendID != id || v.Recipients != "accounts" || fmt.Sprint(v.IDs) != fmt.Sprint([]int64{w.a1, w.a2}) ||
		v.Issued != "2026-05-04T10:00:00+0000" || v.IssuedBy == nil || *v.IssuedBy != "ops-a" || len(v.Commands) != 4 {
		t.Fatalf("view %+v", v)
	}
	if got := string(v.Commands[0].Command); got != `{"command":"user_message","text":"now","type":"notify"}` {
		t.Errorf("command object %s", got)
	}
	wantStates := []string{"done", "sending", "queued", "expired"}
	for i, want := range wantStates {
		if v.Commands[i].State != want || v.Commands[i].Index != i {
			t.Errorf("commands[%d]: index %d state %q, want %q", i, v.Commands[i].Index, v.Commands[i].State, want)
		}
	}
	if c := v.Commands[2]; c.PostTime == nil || *c.PostTime != "2026-05-04T10:10:00" || c.TTL == nil || *c.TTL != ttl2.Unix() {
		t.Errorf("restart schedule: post_time %v ttl %v", c.PostTime, c.TTL)
	}
	if c := v.Commands[0]; c.PostTime != nil || c.TTL != nil {
		t.Errorf("immediate command: post_time %v ttl %v, want null", c.PostTime, c.TTL)
	}
	wantReceipts := []string{
		fmt.Sprintf("%d:sent %d:sent", w.d1, w.d2),
		fmt.Sprintf("%d:confirmed %d:acked %d:sent", w.d1, w.d2, w.d3),
		"",
		fmt.Sprintf("%d:expired", w.d1),
	}
	for i, want := range wantReceipts {
		if got := v.statuses(i); got != want {
			t.Errorf("commands[%d] receipts %q, want %q", i, got, want)
		}
	}
	if c := v.Commands[1].Counts; c.Sent != 3 || c.Acked != 2 || c.Confirmed != 1 {
		t.Errorf("confirm counts %+v, want 3 sent, 2 acked, 1 confirmed", c)
	}
	r := v.Commands[1].Receipts[0]
	if r.Sent == nil || *r.Sent != "2026-05-04T10:00:01+0000" || r.Acked == nil || *r.Acked != "2026-05-04T10:00:02+0000" ||
		r.Confirmed == nil || *r.Confirmed != "2026-05-04T10:01:00+0000" {
		t.Errorf("d1's confirm receipt %+v", r)
	}
	if r := v.Commands[1].Receipts[2]; r.Acked != nil || r.Confirmed != nil {
		t.Errorf("d3's receipt %+v: acked and confirmed should be null", r)
	}

	// Each command's receipts page with start/limit (page), in device order;
	// counts stay the totals.
	for query, want := range map[string]string{
		"?limit=2":         fmt.Sprintf("%d:confirmed %d:acked", w.d1, w.d2),
		"?start=1&limit=1": fmt.Sprintf("%d:acked", w.d2),
		"?page=2&limit=2":  fmt.Sprintf("%d:sent", w.d3),
		"?start=2":         fmt.Sprintf("%d:sent", w.d3),
		"?limit=0":         fmt.Sprintf("%d:confirmed %d:acked %d:sent", w.d1, w.d2, w.d3),
		"?start=9":         "",
	} {
		v := w.su.receiptsPage(t, id, query)
		if got := v.statuses(1); got != want || v.Commands[1].Counts.Sent != 3 || v.Commands[1].Receipts == nil {
			t.Errorf("%s: receipts %q (counts %+v), want %q", query, got, v.Commands[1].Counts, want)
		}
	}
	for query, field := range map[string]string{"?limit=x": "limit", "?start=-1": "start", "?start=1&start=2": "start"} {
		w.su.fails(t, http.StatusBadRequest, http.MethodGet, "/commands/"+strconv.FormatInt(id, 10)+query, nil).field(t, field)
	}

	// After the confirm's ttl, a device that never acknowledged it shows
	// expired; the others keep what they did.
	w.clock.Advance(time.Hour)
	v = w.adminA.receipts(t, id)
	if v.Commands[1].State != "expired" || v.Commands[2].State != "sending" {
		t.Errorf("states %q, %q after an hour, want expired, sending", v.Commands[1].State, v.Commands[2].State)
	}
	if got, want := v.statuses(1), fmt.Sprintf("%d:confirmed %d:acked %d:expired", w.d1, w.d2, w.d3); got != want {
		t.Errorf("receipts after ttl %q, want %q", got, want)
	}
}

func TestReceiptsScopeAndErrors(t *testing.T) {
	w := newCmdWorld(t)
	adminB := scopedClient(t, w.env, "ops-b", w.pB)
	ofA := w.su.sent(t, "devices", sendBody([]any{w.d1}, notify("x")))
	spanning := w.su.sent(t, "providers", sendBody([]any{w.pA, w.pB}, notify("x")))

	w.adminA.receipts(t, ofA) // a superadmin's send to A's devices is A's
	w.su.receipts(t, spanning)
	adminB.fails(t, http.StatusForbidden, http.MethodGet, "/commands/"+strconv.FormatInt(ofA, 10), nil)
	w.adminA.fails(t, http.StatusForbidden, http.MethodGet, "/commands/"+strconv.FormatInt(spanning, 10), nil)
	w.su.fails(t, http.StatusNotFound, http.MethodGet, "/commands/987654", nil)
	w.su.fails(t, http.StatusNotFound, http.MethodGet, "/commands/0", nil)
	w.su.fails(t, http.StatusBadRequest, http.MethodGet, "/commands/abc", nil).field(t, "id")
	if status, _ := w.env.Do(t, http.MethodGet, "/api/provider/commands/"+strconv.FormatInt(ofA, 10), "", "", nil); status != http.StatusUnauthorized {
		t.Errorf("receipts without credentials: %d, want 401", status)
	}
}

// TestPastSendsList: GET /commands lists past sends, paged, each as its
// receipts route shows it without the per-device receipts; a scoped admin
// sees its provider's sends only.
func TestPastSendsList(t *testing.T) {
	w := newCmdWorld(t)
	sA := w.su.sent(t, "accounts", sendBody([]any{w.a1}, notify("to A")))
	sB := w.su.sent(t, "accounts", sendBody([]any{w.b1}, notify("to B")))
	sBoth := w.su.sent(t, "accounts", sendBody([]any{w.a1, w.b1}, map[string]any{"command": "restart"}))
	sOwn := w.adminA.sent(t, "devices", sendBody([]any{w.d1}, notify("own"), map[string]any{"command": "reinit"}))

	all := w.su.ok(t, http.MethodGet, "/commands", nil)
	if got := keysOf(t, all, "send_id"); fmt.Sprint(got) != fmt.Sprint([]int64{sA, sB, sBoth, sOwn}) || all.int(t, "total") != 4 {
		t.Fatalf("superadmin's list: %v", all)
	}
	first := all.list(t)[0]
	cmds, _ := first["commands"].([]any)
	if first.str(t, "recipients") != "accounts" || len(cmds) != 1 {
		t.Fatalf("first send: %v", first)
	}
	c0 := cmds[0].(map[string]any)
	if _, has := c0["receipts"]; has || c0["counts"] == nil || c0["state"] == nil || c0["command"] == nil {
		t.Fatalf("a listed command: %v", c0)
	}
	if reason, has := c0["reason"]; !has || reason != nil {
		t.Fatalf("a listed command: %v", c0)
	}
	page := w.su.ok(t, http.MethodGet, "/commands/?start=1&limit=2&sort=-id", nil)
	if got := keysOf(t, page, "send_id"); fmt.Sprint(got) != fmt.Sprint([]int64{sBoth, sB}) || page.int(t, "total") != 4 {
		t.Fatalf("second page of two, newest first: %v", page)
	}
	scoped := w.adminA.ok(t, http.MethodGet, "/commands", nil)
	if got := keysOf(t, scoped, "send_id"); fmt.Sprint(got) != fmt.Sprint([]int64{sA, sOwn}) {
		t.Fatalf("A's admin lists %v, want its provider's sends %v", got, []int64{sA, sOwn})
	}
	w.su.fails(t, http.StatusBadRequest, http.MethodGet, "/commands?account=1", nil).field(t, "account")
}

// keysOf returns the given key of each item of a list answer.
func keysOf(t testing.TB, l obj, key string) []int64 {
	t.Helper()
	var out []int64
	for _, it := range l.list(t) {
		out = append(out, it.int(t, key))
	}
	return out
}

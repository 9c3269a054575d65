package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/internal/app/query"
	"tvsm/projections/readmodel"
)

// mountCommands adds the Provider API's command routes to g, the
// /api/provider group behind Basic authentication:
//
//	POST /commands/send/{providers|accounts|devices}?broadcast=false   {"ids":[...],"commands":[...]} → {"response":true,"send_id":N}
//	GET  /commands/{send_id}                                           the send and its per-device receipts
//	GET  /commands?start=&limit=&sort=-id                              past sends, without receipts
func mountCommands(g gin.IRoutes, sends Sender, receipts ReceiptReader, idem Idempotency) {
	if sends == nil || receipts == nil {
		return
	}
	h := &commandHandlers{sends: sends, receipts: receipts, idem: idem}
	g.POST("/commands/send/:recipients", h.send)
	g.GET("/commands/:id", h.receiptsOf)
	g.GET("/commands", h.list)
}

// sendList is what GET /commands accepts: paging and sort by id; 50 a
// page unless limit says otherwise (each send is read from the log).
var sendList = ListSpec{Sort: readmodel.SendSortFields, DefaultLimit: 50}

// list answers the past sends the caller may see, a page of them, each as
// GET /commands/{send_id} shows it without the per-device receipts.
func (h *commandHandlers) list(c *gin.Context) {
	q, err := ParseListQuery(c, sendList)
	if err != nil {
		WriteError(c, err)
		return
	}
	l, err := h.receipts.List(c.Request.Context(), callerOf(c), providerPage(q))
	if err != nil {
		WriteError(c, err)
		return
	}
	WriteList(c, q, l.Total, func(yield func(sendJSON[commandSummaryJSON]) bool) {
		for v := range l.Items {
			if !yield(sendJSONOf(v, commandSummary)) {
				return
			}
		}
	})
}

type commandHandlers struct {
	sends    Sender
	receipts ReceiptReader
	idem     Idempotency
}

// sendResponseJSON is the answer to a send: {"response": true}, as TVIP's
// API answers, plus the id that names the send for its receipts.
type sendResponseJSON struct {
	Response bool  `json:"response"`
	SendID   int64 `json:"send_id"`
}

func encodeSendResponse(id int64) ([]byte, error) {
	return json.Marshal(sendResponseJSON{Response: true, SendID: id})
}

func (h *commandHandlers) send(c *gin.Context) {
	// The body is read through a tee: wire.Object decodes it for the typed
	// getters, and the bytes give each command object as the provider wrote
	// it, which is what devices receive.
	var body bytes.Buffer
	c.Request.Body = teeBody{Reader: io.TeeReader(c.Request.Body, &body), Closer: c.Request.Body}
	obj, err := ReadObject(c, wire.DecodeOptions{})
	if err != nil {
		WriteError(c, err)
		return
	}
	in := readSend(obj, body.Bytes())
	readSendQuery(c, obj, &in)
	if err := obj.Err(); err != nil {
		WriteError(c, err)
		return
	}
	createOnce(c, h.idem, command.SendIDKind,
		func() ([]byte, error) {
			b, err := json.Marshal(in)
			return append([]byte("send "), b...), err
		},
		func(ctx context.Context, caller app.Caller) (int64, error) { return h.sends.Send(ctx, caller, in) },
		encodeSendResponse)
}

// teeBody is a request body read through a tee, closed as the original.
type teeBody struct {
	io.Reader
	io.Closer
}

// readSendQuery reads the path's recipients and the broadcast parameter
// (absent or empty: false), recording their problems with the body's.
func readSendQuery(c *gin.Context, obj *wire.Object, in *command.SendInput) {
	r, err := domain.ParseRecipients(c.Param("recipients"))
	if err != nil {
		obj.Fail("recipients", err.Error())
	}
	in.Recipients = r
	if v, ok := c.GetQuery("broadcast"); ok && strings.TrimSpace(v) != "" {
		b, err := wire.ParseBool(v)
		if err != nil {
			obj.Fail("broadcast", err.Error())
		}
		in.Broadcast = b
	}
}

// decodeSendBody decodes a send's body as the handler does, for tests and
// fuzzing: the input of the service, or the error answered with 400.
func decodeSendBody(data []byte) (command.SendInput, error) {
	obj, err := wire.DecodeObject(data, wire.DecodeOptions{})
	if err != nil {
		return command.SendInput{}, err
	}
	in := readSend(obj, data)
	return in, obj.Err()
}

// readSend reads ids and commands from a send's body; data is the body's
// bytes, from which each command object is kept as sent. Problems are
// recorded in obj under their wire names (ids[3], commands[1].ttl).
func readSend(obj *wire.Object, data []byte) command.SendInput {
	var in command.SendInput
	in.IDs = readSendIDs(obj)
	list, ok := obj.ObjectList("commands").Get()
	if !ok {
		return in
	}
	raws := rawCommands(data)
	if len(raws) != len(list) {
		obj.Fail("commands", wire.MsgObjectList) // cannot happen: both decode one body
		return in
	}
	in.Commands = make([]domain.CommandSpec, len(list))
	for i, o := range list {
		in.Commands[i] = readCommand(o, raws[i])
	}
	return in
}

// readSendIDs reads the ids list, naming a bad element by its index. Each
// element is an integer as wire's Int64 reads one (12, "12", 1.2e1).
func readSendIDs(obj *wire.Object) []int64 {
	v, ok := obj.Raw("ids")
	if !ok || v == nil {
		return nil
	}
	items, isList := v.([]any)
	if !isList {
		obj.Fail("ids", wire.MsgIntList)
		return nil
	}
	ids := make([]int64, len(items))
	bad := 0
	for i, item := range items {
		n, msg := sendID(item)
		if msg != "" {
			if bad++; bad <= domain.MaxReportedIDs {
				obj.Fail(domain.SendIDField(i), msg)
			}
			continue
		}
		ids[i] = n
	}
	return ids
}

// sendID reads one element of ids: a plain JSON integer directly, any
// other form through wire's Int64 getter, so that the rules are wire's.
func sendID(item any) (int64, string) {
	if n, ok := item.(json.Number); ok {
		if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return v, ""
		}
	}
	if item == nil {
		return 0, wire.MsgInt
	}
	wrapped, err := json.Marshal(map[string]any{"v": item})
	if err != nil {
		return 0, wire.MsgInt
	}
	o, err := wire.DecodeObject(wrapped, wire.DecodeOptions{})
	if err != nil {
		return 0, wire.MsgInt
	}
	v, ok := o.Int64("v").Get()
	if err := o.Err(); err != nil || !ok {
		return 0, firstProblem(err, wire.MsgInt)
	}
	return v, ""
}

// firstProblem returns the problem a FieldErrors holds for its one field,
// or def.
func firstProblem(err error, def string) string {
	var fe wire.FieldErrors
	if errors.As(err, &fe) {
		for _, p := range fe {
			return p
		}
	}
	return def
}

// rawCommands returns the compacted JSON of each element of the body's
// commands list; nil when there is no such list.
func rawCommands(data []byte) []json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(top["commands"], &list) != nil {
		return nil
	}
	for i, r := range list {
		var b bytes.Buffer
		if json.Compact(&b, r) == nil {
			list[i] = b.Bytes()
		}
	}
	return list
}

// readCommand reads a command object of the Provider API.
func readCommand(o *wire.Object, raw json.RawMessage) domain.CommandSpec {
	return domain.CommandSpec{
		Kind:        domain.CommandKind(o.String("command").Or("")),
		MessageType: domain.MessageType(o.String("type").Or("")),
		Text:        o.String("text").Or(""),
		Title:       o.String("title").Or(""),
		Delay:       commandDelay(o.Int64("delay")),
		UseAsPush:   o.Bool("use_as_push").Ptr(),
		Channel:     o.Int64("channel").Or(0),
		PostTime:    o.PostTime("post_time").Or(time.Time{}),
		TTL:         commandTTL(o.Int64("ttl")),
		Object:      raw,
	}
}

// commandDelay converts a delay to the domain's *int; values outside int32
// become -1, which the domain refuses.
func commandDelay(o wire.Optional[int64]) *int {
	v, ok := o.Get()
	if !ok {
		return nil
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		v = -1
	}
	n := int(v)
	return &n
}

// maxUnixSeconds is 9999-12-31T23:59:59Z: a ttl past it is clamped there,
// which the domain refuses as too far ahead (time.Unix would overflow).
const maxUnixSeconds = 253402300799

// commandTTL converts a ttl in Unix seconds to a time; 0, like absent and
// null, means no ttl (clients with a primitive field send 0 for none).
func commandTTL(o wire.Optional[int64]) time.Time {
	v, ok := o.Get()
	if !ok || v == 0 {
		return time.Time{}
	}
	return time.Unix(min(v, maxUnixSeconds), 0).UTC()
}

// receipts answers GET /commands/{id}, the id being a send_id.
func (h *commandHandlers) receiptsOf(c *gin.Context) {
	id, err := providerPathID(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	page, err := receiptsPage.Parse(c.Request.URL.Query())
	if err != nil {
		WriteError(c, err)
		return
	}
	v, err := h.receipts.Receipts(c.Request.Context(), callerOf(c), id)
	if err != nil {
		WriteError(c, err)
		return
	}
	out := sendJSONOf(v, commandView)
	for i := range out.Commands {
		out.Commands[i].Receipts = Page(page, out.Commands[i].Receipts)
	}
	providerJSON(c, out)
}

// receiptsPage pages each command's receipts (in device id order) with the
// list parameters start, limit and page; by default every receipt is
// listed. A provider-wide broadcast has a receipt per device, and counts.sent
// is the total a client pages through.
var receiptsPage = ListSpec{}

// sendJSON is a send: with its receipts (C commandViewJSON, GET
// /commands/{send_id}) or without them (C commandSummaryJSON, the list of
// past sends).
type sendJSON[C any] struct {
	SendID     int64         `json:"send_id"`
	Recipients string        `json:"recipients"`
	IDs        []int64       `json:"ids"`
	Issued     wire.DateTime `json:"issued"`
	IssuedBy   *string       `json:"issued_by"` // the admin's login
	Commands   []C           `json:"commands"`
}

// commandSummaryJSON is one command of a send: the object as sent, its
// schedule in the forms it was given in (post_time GMT, ttl Unix seconds),
// its state and its receipt counts.
type commandSummaryJSON struct {
	Index    int               `json:"index"`
	Command  json.RawMessage   `json:"command"`
	PostTime wire.PostTime     `json:"post_time"`
	TTL      *int64            `json:"ttl"`
	State    string            `json:"state"`
	Reason   *string           `json:"reason"` // why an expired command expired; null otherwise
	Counts   receiptCountsJSON `json:"counts"`
}

// commandViewJSON is a command with its receipts.
type commandViewJSON struct {
	commandSummaryJSON
	Receipts []receiptJSON `json:"receipts"`
}

type receiptCountsJSON struct {
	Sent      int `json:"sent"`
	Acked     int `json:"acked"`
	Confirmed int `json:"confirmed"`
}

type receiptJSON struct {
	Device    int64         `json:"device"`
	Status    string        `json:"status"`
	Sent      wire.DateTime `json:"sent"`
	Acked     wire.DateTime `json:"acked"`
	Confirmed wire.DateTime `json:"confirmed"`
}

// sendJSONOf renders v with each command rendered by command.
func sendJSONOf[C any](v query.SendView, command func(query.CommandView) C) sendJSON[C] {
	out := sendJSON[C]{
		SendID:     v.SendID,
		Recipients: string(v.Recipients),
		IDs:        v.IDs,
		Issued:     wire.NewDateTime(v.Issued, nil),
		Commands:   make([]C, len(v.Commands)),
	}
	if v.IssuedBy.Kind == domain.ActorAdmin {
		out.IssuedBy = &v.IssuedBy.ID
	}
	for i, c := range v.Commands {
		out.Commands[i] = command(c)
	}
	return out
}

func commandSummary(c query.CommandView) commandSummaryJSON {
	out := commandSummaryJSON{
		Index:    c.Index,
		Command:  c.Command.Object,
		PostTime: wire.PostTime{Time: c.Command.PostTime},
		State:    string(c.State),
		Counts:   receiptCountsJSON{Sent: c.Sent, Acked: c.Acked, Confirmed: c.Confirmed},
	}
	if !c.Command.TTL.IsZero() {
		ttl := c.Command.TTL.Unix()
		out.TTL = &ttl
	}
	if c.Reason != "" {
		out.Reason = &c.Reason
	}
	return out
}

func commandView(c query.CommandView) commandViewJSON {
	out := commandViewJSON{commandSummaryJSON: commandSummary(c), Receipts: make([]receiptJSON, len(c.Receipts))}
	for i, r := range c.Receipts {
		out.Receipts[i] = receiptJSON{
			Device:    r.Device,
			Status:    string(r.Status),
			Sent:      wire.NewDateTime(r.Sent, nil),
			Acked:     wire.NewDateTime(r.Acked, nil),
			Confirmed: wire.NewDateTime(r.Confirmed, nil),
		}
	}
	return out
}

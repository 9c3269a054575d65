package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/domain"
	"tvsm/httpapi/wire"
	"tvsm/internal/app"
	"tvsm/internal/app/command"
	"tvsm/projections/readmodel"
)

// POST /api/provider/accounts/bulk: a provider's whole account list in one
// request, as NDJSON (one account object a line, the keys of POST
// /accounts), each record created or updated by its login: a login the
// provider has is updated with the keys present (a whole record re-sent
// unchanged appends nothing), another one is created. The answer is NDJSON
// too, a line a record in the order sent, streamed as the records are done:
//
//	{"line":1,"login":"anna","status":200,"result":"created","id":7}
//	{"line":2,"login":"bob","status":200,"result":"unchanged","id":8}
//	{"line":3,"status":400,"error":{"statusCode":400,"cause":"fullname: required",...}}
//
// The HTTP status is 200 once the body is being read; a body that cannot be
// read as NDJSON ends the answer with a line {"status":400,...} and no
// "line". Records are written by BulkWorkers at a time, so the store's
// group commit carries many; two records of one login in a request are
// written in order.

// BulkWorkers is how many records of a bulk request are written at once.
const BulkWorkers = 32

// bulkMaxLine is the longest record line, in bytes.
const bulkMaxLine = wire.DefaultMaxBytes

// bulkResultJSON is one line of a bulk answer.
type bulkResultJSON struct {
	Line   int    `json:"line,omitempty"`
	Login  string `json:"login,omitempty"`
	Status int    `json:"status"`
	Result string `json:"result,omitempty"` // created, updated, unchanged
	ID     int64  `json:"id,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// bulkResult is the result of record seq.
type bulkResult struct {
	seq int
	bulkResultJSON
}

// bulkRecord is one decoded line.
type bulkRecord struct {
	seq   int // records read before this one
	line  int
	login string
	in    command.AccountInput
	err   error // a decode error: answered without writing
}

// accountsBulk serves POST /accounts/bulk.
func (h *providerHandlers) accountsBulk(c *gin.Context) {
	provider, err := bulkProvider(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	// The body streams in over the whole request; answers stream out as
	// records are done, so the request must outlive the server's defaults.
	rc := http.NewResponseController(c.Writer)
	// Results are written while records are still read: without full
	// duplex an HTTP/1 server would discard the unread body first.
	_ = rc.EnableFullDuplex()
	_ = rc.SetReadDeadline(time.Now().Add(30 * time.Minute))
	_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Minute))
	c.Header("Content-Type", "application/x-ndjson; charset=utf-8")
	// The answer starts before the last record is written: its
	// X-TVSM-Position header names where the first records reached, the
	// trailer of the same name where all of them did.
	c.Header("Trailer", HeaderPosition)
	c.Status(http.StatusOK)

	ctx := c.Request.Context()
	caller := callerOf(c)
	out := newBulkWriter(c.Writer, rc)
	records := make(chan bulkRecord)
	readErr := make(chan error, 1)
	go func() {
		defer close(records)
		readErr <- readBulk(ctx, c.Request.Body, provider, records)
	}()
	results := make(chan bulkResult, 4*BulkWorkers)
	go func() {
		defer close(results)
		h.writeBulk(ctx, caller, records, results)
	}()
	for r := range results {
		out.add(r.seq, r.bulkResultJSON)
	}
	if err := <-readErr; err != nil {
		out.encode(bulkResultJSON{Status: http.StatusBadRequest, Error: AsError(err)})
	}
	out.flush()
}

// bulkProvider returns the provider whose logins the records name: the
// query's provider, else the scoped admin's, else 0 (each record says).
func bulkProvider(c *gin.Context) (int64, error) {
	spec := ListSpec{Filters: map[string]FilterType{"provider": FilterInt}}
	q, err := ParseListQuery(c, spec)
	if err != nil {
		return 0, err
	}
	p, _ := q.Int64("provider")
	return p, nil
}

// readBulk decodes the body's lines into records, in order; blank lines
// are skipped. It stops at the end of the body, at a line longer than
// bulkMaxLine, or when ctx ends.
func readBulk(ctx context.Context, body io.Reader, provider int64, records chan<- bulkRecord) error {
	r := bufio.NewReaderSize(body, 64<<10)
	seq := 0
	for line := 1; ; line++ {
		data, err := readLine(r)
		if len(bytes.TrimSpace(data)) > 0 {
			rec := bulkRecord{seq: seq, line: line}
			seq++
			obj, derr := wire.DecodeObject(data, wire.DecodeOptions{})
			if derr == nil {
				rec.in = readProviderAccount(obj)
				if !rec.in.Provider.Present && provider != 0 {
					rec.in.Provider = domain.Some(provider)
				}
				rec.login, _ = rec.in.Login.Get()
				derr = obj.Err()
				if rec.login == "" && derr == nil {
					derr = domain.NewValidationError("login", "required: a bulk record is matched by its login")
				}
			}
			rec.err = derr
			select {
			case records <- rec:
			case <-ctx.Done():
				return nil
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}

var errBulkLine = fmt.Errorf("a record line is longer than %d bytes", bulkMaxLine)

// readLine returns the next line without its end; io.EOF with the last
// line when the body ends.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > bulkMaxLine {
			return nil, BadRequest(errBulkLine.Error())
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return line, io.EOF
		default:
			return nil, err
		}
	}
}

// writeBulk writes the records with BulkWorkers workers and sends each
// result, in any order. Records of one login go to one worker, in order.
func (h *providerHandlers) writeBulk(ctx context.Context, caller app.Caller, records <-chan bulkRecord, results chan<- bulkResult) {
	queues := make([]chan bulkRecord, BulkWorkers)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan bulkRecord, 16)
		wg.Go(func() {
			for rec := range queues[i] {
				results <- bulkResult{rec.seq, h.writeRecord(ctx, caller, rec)}
			}
		})
	}
	for rec := range records {
		queues[loginShard(rec.login)] <- rec
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
}

func loginShard(login string) int {
	var h uint32 = 2166136261
	for i := 0; i < len(login); i++ {
		h = (h ^ uint32(login[i])) * 16777619
	}
	return int(h % BulkWorkers)
}

// writeRecord creates or updates one record's account.
func (h *providerHandlers) writeRecord(ctx context.Context, caller app.Caller, rec bulkRecord) bulkResultJSON {
	res := bulkResultJSON{Line: rec.line, Login: rec.login}
	fail := func(err error) bulkResultJSON {
		e := AsError(err)
		res.Status, res.Error = e.Status, e
		return res
	}
	if rec.err != nil {
		return fail(rec.err)
	}
	provider, ok := rec.in.Provider.Get()
	if !ok && caller.Scope != nil {
		provider = *caller.Scope
	}
	if provider <= 0 {
		return fail(domain.NewValidationError("provider", "required: give it in each record or as ?provider="))
	}
	for attempt := 0; ; attempt++ {
		cur, found, err := h.accountByLogin(ctx, caller, provider, rec.login)
		if err != nil {
			return fail(err)
		}
		if !found {
			a, err := h.api.Accounts.Create(ctx, caller, rec.in)
			var ve *domain.ValidationError
			if errors.As(err, &ve) && ve.Fields["login"] != "" && attempt == 0 {
				continue // taken meanwhile (another request): update it
			}
			if err != nil {
				return fail(err)
			}
			res.Status, res.Result, res.ID = http.StatusOK, "created", a.ID
			return res
		}
		a, err := h.api.Accounts.Update(ctx, caller, cur.ID, rec.in)
		if err != nil {
			return fail(err)
		}
		res.Status, res.ID, res.Result = http.StatusOK, a.ID, "updated"
		if a.Revision == cur.Revision {
			res.Result = "unchanged"
		}
		return res
	}
}

// accountByLogin finds provider's account with login, within the caller's
// scope (another provider's: 403).
func (h *providerHandlers) accountByLogin(ctx context.Context, caller app.Caller, provider int64, login string) (readmodel.Account, bool, error) {
	if err := caller.CheckScope(provider); err != nil {
		return readmodel.Account{}, false, err
	}
	l, err := h.api.AccountReads.List(ctx, caller, readmodel.AccountQuery{Provider: provider, Login: login})
	if err != nil {
		return readmodel.Account{}, false, err
	}
	for a := range l.Items {
		return a.Account, true, nil
	}
	return readmodel.Account{}, false, nil
}

// bulkWriter writes results in the order their records were read, as
// they arrive in any order, flushing every few kilobytes. The reader
// numbers the records (seq, from 0); the workers of other records run
// ahead of a slow one only as far as their queues reach, which bounds what
// waits here.
type bulkWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	buf     bytes.Buffer
	next    int // the seq written next
	pending map[int]bulkResultJSON
}

func newBulkWriter(w io.Writer, rc *http.ResponseController) *bulkWriter {
	return &bulkWriter{w: w, rc: rc, pending: map[int]bulkResultJSON{}}
}

// add takes the result of record seq.
func (b *bulkWriter) add(seq int, r bulkResultJSON) {
	b.pending[seq] = r
	for {
		r, ok := b.pending[b.next]
		if !ok {
			break
		}
		delete(b.pending, b.next)
		b.next++
		b.encode(r)
	}
	if b.buf.Len() >= listFlushBytes {
		b.flush()
	}
}

func (b *bulkWriter) encode(r bulkResultJSON) {
	data, err := json.Marshal(r)
	if err != nil { // unreachable: every field encodes
		data = []byte(`{"status":500}`)
	}
	b.buf.Write(data)
	b.buf.WriteByte('\n')
}

// flush writes what is buffered.
func (b *bulkWriter) flush() {
	if b.buf.Len() > 0 {
		_, _ = b.w.Write(b.buf.Bytes())
		b.buf.Reset()
	}
	_ = b.rc.Flush()
}

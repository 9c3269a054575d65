package apicheck

import (
	"bufio"
	"net"
	"net/http"
	"testing"
)

// Handler returns h with every answer of an API checked against the
// documents; t fails (Errorf, from the server's goroutine) on a mismatch.
// Benchmarks get h itself: they measure the node, not the checking.
func Handler(t testing.TB, h http.Handler) http.Handler {
	if _, bench := t.(*testing.B); bench {
		return h
	}
	c, err := Load()
	if err != nil {
		t.Fatalf("apicheck: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Route(r.URL.Path) == "" {
			h.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		// An upgraded websocket is checked by its own tests; an answer to
		// a client that hung up (499) reaches nobody.
		if rec.hijacked || r.Context().Err() != nil {
			return
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		if err := c.Check(r, status, w.Header(), rec.body, rec.truncated); err != nil {
			t.Errorf("apicheck: %v\nbody: %.600s", err, rec.body)
		}
	})
}

// recorder passes an answer through while keeping its status and (the
// first MaxBody bytes of) its body. It flushes and hijacks as the writer
// it wraps does, so streamed answers stream and websockets upgrade.
type recorder struct {
	http.ResponseWriter
	status    int
	body      []byte
	truncated bool
	hijacked  bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if room := MaxBody - len(r.body); room < len(p) {
		r.body, r.truncated = append(r.body, p[:max(room, 0)]...), true
	} else {
		r.body = append(r.body, p...)
	}
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the server's writer (write
// deadlines of long answers).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

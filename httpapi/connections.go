package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"tvsm/internal/platform/connlimit"
)

// connectionRetry is the Retry-After of a connection or websocket refused
// by a cap: places free up as other clients' connections end.
const connectionRetry = 5

// ConnectionRefusal is the answer written to a connection the listener
// refuses (connlimit.Options.Refusal), before the server reads anything
// from it: a whole HTTP/1.1 response with the API's error body, 429 when
// the client's address holds its share, 503 when the node holds all it
// may, with Retry-After.
func ConnectionRefusal(reason connlimit.Reason) []byte {
	e := Unavailable("the server holds as many connections as it may; retry later")
	if reason == connlimit.PerAddress {
		e = &Error{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests,
			Cause: "too many connections from your address; close some or retry later"}
	}
	body, _ := json.Marshal(e)
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: %d\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", e.Status, http.StatusText(e.Status), connectionRetry, len(body), body)
}

// writeAddressFull answers a websocket upgrade refused because the
// client's address holds as many websockets as it may.
func writeAddressFull(c *gin.Context, err error) {
	c.Header("Retry-After", strconv.Itoa(connectionRetry))
	WriteError(c, &Error{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests,
		Cause: "too many websockets from your address; retry later", Err: err})
}

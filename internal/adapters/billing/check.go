package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"time"
)

// CheckTarget is the billing `tvsm billing-check` examines, and who it
// calls as.
type CheckTarget struct {
	BaseURL, Token    string
	Account, Provider int64
	AcceptLanguage    string
}

// CheckOptions adjust Check.
type CheckOptions struct {
	Models ModelOptions
	// MaxTariffs bounds the tariff details fetched (default 20).
	MaxTariffs int
}

// CheckedCall is one call Check made and the deviations found in its
// answer. Deviations about the exchange rather than the body have a Path
// naming the part: "HTTP status", "Content-Type", "X-AUTH-TOKEN".
type CheckedCall struct {
	Method, Path string
	// Note says what is special about the call ("with a wrong
	// X-AUTH-TOKEN"); empty for plain calls.
	Note       string
	Status     int // 0 when billing did not answer
	Latency    time.Duration
	Err        error // no usable answer (timeout, unreachable, ...)
	Deviations []Deviation
}

// Failed reports whether the call has an error, or a warning when strict.
func (c CheckedCall) Failed(strict bool) bool {
	if c.Err != nil {
		return true
	}
	for _, d := range c.Deviations {
		if d.Severity == SeverityError || strict {
			return true
		}
	}
	return false
}

// Check calls an operator's billing the way the proxy does (same headers,
// same signature) and validates its answers: GET /api/cabinet, GET
// /api/tariff/{id} for each tariff the cabinet mentions (up to
// MaxTariffs), and the cabinet once more with a wrong X-AUTH-TOKEN, which
// billing must refuse. It changes nothing on the billing side: only GET
// routes are called.
func Check(ctx context.Context, c *Client, t CheckTarget, opts CheckOptions) []CheckedCall {
	if opts.MaxTariffs <= 0 {
		opts.MaxTariffs = 20
	}
	cabinet, body := checkCall(ctx, c, t, RouteCabinet.Path, "", func(data []byte) []Deviation {
		return ValidateCabinet(data, opts.Models)
	})
	calls := []CheckedCall{cabinet}
	ids := TariffIDs(body)
	for i, id := range ids {
		if i == opts.MaxTariffs {
			calls[0].Deviations = append(calls[0].Deviations, Deviation{Path: "$", Severity: SeverityWarning,
				Problem: fmt.Sprintf("%d more tariffs not fetched (limit %d)", len(ids)-i, opts.MaxTariffs)})
			break
		}
		detail, _ := checkCall(ctx, c, t, TariffPath(id), "", func(data []byte) []Deviation {
			return append(ValidateTariffDetail(data, opts.Models), checkDetailID(data, id)...)
		})
		calls = append(calls, detail)
	}
	return append(calls, checkSignatureRefused(ctx, c, t))
}

// checkCall makes one GET call and validates a 200 answer's body with
// validate; it returns the body of a 200 answer.
func checkCall(ctx context.Context, c *Client, t CheckTarget, path, authToken string, validate func([]byte) []Deviation) (CheckedCall, []byte) {
	call := CheckedCall{Method: http.MethodGet, Path: path}
	started := time.Now()
	resp, err := c.Do(ctx, Request{
		BaseURL: t.BaseURL, Token: t.Token, Method: http.MethodGet, Path: path,
		Account: t.Account, Provider: t.Provider, AcceptLanguage: t.AcceptLanguage, AuthToken: authToken,
	})
	call.Latency = time.Since(started)
	if err != nil {
		call.Err = err
		return call, nil
	}
	call.Status = resp.Status
	if validate == nil {
		return call, nil
	}
	if resp.Status != http.StatusOK {
		call.Deviations = append(call.Deviations, Deviation{Path: "HTTP status", Severity: SeverityError,
			Problem: fmt.Sprintf("%d; billing answers 200 when it carries a request out", resp.Status)})
		return call, nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.ContentType); mt != "application/json" {
		call.Deviations = append(call.Deviations, Deviation{Path: "Content-Type", Severity: SeverityWarning,
			Problem: fmt.Sprintf("%q; the answer is JSON: application/json", resp.ContentType)})
	}
	call.Deviations = append(call.Deviations, validate(resp.Body)...)
	return call, resp.Body
}

// checkDetailID reports a tariff detail that describes another tariff than
// the one asked for.
func checkDetailID(data []byte, want int64) []Deviation {
	var d struct {
		Tariff struct {
			ID json.Number `json:"id"`
		} `json:"tariff"`
	}
	if json.Unmarshal(data, &d) != nil || d.Tariff.ID == "" || d.Tariff.ID.String() == fmt.Sprint(want) {
		return nil // malformed answers are ValidateTariffDetail's to report
	}
	return []Deviation{{Path: "$.tariff.id", Severity: SeverityError,
		Problem: fmt.Sprintf("%s, but tariff %d was asked for", d.Tariff.ID, want)}}
}

// checkSignatureRefused calls the cabinet with a wrong signature: billing
// must not answer 2xx.
func checkSignatureRefused(ctx context.Context, c *Client, t CheckTarget) CheckedCall {
	wrong := Sign(RouteCabinet.Path, "not the shared token "+t.Token, 0)
	call, _ := checkCall(ctx, c, t, RouteCabinet.Path, wrong, nil)
	call.Note = "with a wrong X-AUTH-TOKEN"
	if call.Err == nil && call.Status >= 200 && call.Status < 300 {
		call.Deviations = append(call.Deviations, Deviation{Path: "X-AUTH-TOKEN", Severity: SeverityError,
			Problem: fmt.Sprintf("a call with a wrong signature was answered %d; billing must verify X-AUTH-TOKEN", call.Status)})
	}
	return call
}

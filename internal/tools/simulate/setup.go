package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// setupWorkers bounds concurrent account creations.
const setupWorkers = 32

// catalogName names what CreateCatalog makes.
const catalogName = "Simulation"

// CreateCatalog makes sure a provider, a channel and a tariff of that
// provider holding the channel, each named "Simulation", exist, creating
// what is missing through the Admin API, and makes the simulation use
// them. Running it again finds them.
func (s *Sim) CreateCatalog(ctx context.Context) error {
	provider, err := s.findOrCreate(ctx, "/api/admin/providers", "", map[string]any{"name": catalogName})
	if err != nil {
		return err
	}
	channel, err := s.findOrCreate(ctx, "/api/admin/channels", "", map[string]any{"name": catalogName + " TV", "number": 1})
	if err != nil {
		return err
	}
	tariff, err := s.findOrCreate(ctx, "/api/admin/tariffs", fmt.Sprintf("provider=%d", provider),
		map[string]any{"name": catalogName, "provider": provider, "channels": []int64{channel}})
	if err != nil {
		return err
	}
	s.opts.Provider, s.opts.Tariff = provider, tariff
	return nil
}

// findOrCreate returns the id of the object of collection path named
// body["name"] (among those the filter selects), creating it from body
// when there is none.
func (s *Sim) findOrCreate(ctx context.Context, path, filter string, body map[string]any) (int64, error) {
	name := body["name"].(string)
	q := url.Values{"quick_search": {name}, "limit": {"0"}}
	if filter != "" {
		k, v, _ := strings.Cut(filter, "=")
		q.Set(k, v)
	}
	var list struct {
		Data []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"data"`
	}
	if err := s.adminCall(ctx, http.MethodGet, path+"?"+q.Encode(), nil, &list); err != nil {
		return 0, err
	}
	for _, o := range list.Data {
		if o.Name == name {
			return o.ID, nil
		}
	}
	var created struct {
		ID int64 `json:"id"`
	}
	if err := s.adminCall(ctx, http.MethodPost, path, body, &created); err != nil {
		return 0, err
	}
	return created.ID, nil
}

// Setup creates the accounts the devices log in to, through the Provider
// API, with a subscription to Tariff each. Accounts that exist already
// (their login is taken) are left as they are.
func (s *Sim) Setup(ctx context.Context) error {
	accounts := (s.opts.First+s.opts.Devices-1)/s.opts.DevicesPerAccount - s.opts.First/s.opts.DevicesPerAccount + 1
	firstAccount := s.opts.First / s.opts.DevicesPerAccount
	jobs := make(chan int)
	errs := make(chan error, setupWorkers)
	var wg sync.WaitGroup
	for range setupWorkers {
		wg.Go(func() {
			for n := range jobs {
				if err := s.ensureAccount(ctx, n); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for n := firstAccount; n < firstAccount+accounts; n++ {
		select {
		case jobs <- n:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// ensureAccount creates account n unless its login is taken.
func (s *Sim) ensureAccount(ctx context.Context, n int) error {
	login := fmt.Sprintf(s.opts.LoginFormat, n)
	var created struct {
		ID int64 `json:"id"`
	}
	err := s.adminCall(ctx, http.MethodPost, "/api/provider/accounts", map[string]any{
		"login": login, "pin_md5": s.passwordMD5(), "fullname": "Simulated " + login,
		"provider": s.opts.Provider, "enabled": true,
	}, &created)
	var se *ServerError
	if errors.As(err, &se) && se.Status == http.StatusBadRequest && strings.HasPrefix(se.Cause, "login: already taken") {
		return nil // created by an earlier run
	}
	if err != nil {
		return fmt.Errorf("simulate: create account %s: %w", login, err)
	}
	if s.opts.Tariff <= 0 {
		return nil
	}
	start := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05-0700")
	if err := s.adminCall(ctx, http.MethodPost, "/api/provider/account_subscriptions", map[string]any{
		"account": created.ID, "tarif": s.opts.Tariff, "start": start,
	}, nil); err != nil {
		return fmt.Errorf("simulate: subscribe account %s to tariff %d: %w", login, s.opts.Tariff, err)
	}
	return nil
}

// adminCall sends a request with the admin's Basic credentials
// (AdminClient.Call).
func (s *Sim) adminCall(ctx context.Context, method, path string, body any, out any) error {
	c := AdminClient{URL: s.opts.URL, User: s.opts.AdminUser, Password: s.opts.AdminPassword, HTTP: s.http}
	return c.Call(ctx, method, path, body, out)
}

// AdminClient calls a node's Admin and Provider APIs with an admin's
// Basic credentials.
type AdminClient struct {
	// URL is the node's base URL, e.g. http://127.0.0.1:8080.
	URL, User, Password string
	HTTP                *http.Client
}

// Call sends body (when not nil) as JSON to path and decodes a 2xx answer
// into out (when not nil); any other answer is a *ServerError with the
// cause the node gave.
func (c AdminClient) Call(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return err
	}
	req.SetBasicAuth(c.User, c.Password)
	req.Header.Set("Accept", "application/json")
	if body != nil || method != http.MethodGet {
		// tvsm refuses a POST that does not declare JSON, bodiless ones too.
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %w", method, path, serverError(resp.StatusCode, data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

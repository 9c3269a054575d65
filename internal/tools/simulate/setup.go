package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// setupWorkers bounds concurrent account creations.
const setupWorkers = 32

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
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range jobs {
				if err := s.ensureAccount(ctx, n); err != nil {
					errs <- err
					return
				}
			}
		}()
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
	status, err := s.admin(ctx, "/api/provider/accounts", map[string]any{
		"login": login, "pin_md5": s.passwordMD5(), "fullname": "Simulated " + login,
		"provider": s.opts.Provider, "enabled": true,
	}, &created)
	switch {
	case err != nil:
		return fmt.Errorf("simulate: create account %s: %w", login, err)
	case status == http.StatusBadRequest:
		return nil // taken: created by an earlier run
	case status != http.StatusOK:
		return fmt.Errorf("simulate: create account %s: status %d", login, status)
	}
	if s.opts.Tariff <= 0 {
		return nil
	}
	start := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05-0700")
	status, err = s.admin(ctx, "/api/provider/account_subscriptions", map[string]any{
		"account": created.ID, "tarif": s.opts.Tariff, "start": start,
	}, nil)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("simulate: subscribe account %s: status %d: %v", login, status, err)
	}
	return nil
}

// admin POSTs body to path with the admin's Basic credentials.
func (s *Sim) admin(ctx context.Context, path string, body any, out any) (int, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL+path, bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(s.opts.AdminUser, s.opts.AdminPassword)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, err
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

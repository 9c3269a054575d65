package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tvsm/eventstore"
	"tvsm/eventstore/embedded"
)

// checkLog opens a copy of the event store the loss left (the node is
// down, and opens the original itself) and checks that its positions are
// dense from 1 to its head and that the head is at or past every
// acknowledged write. It returns the head.
func (r *runner) checkLog() uint64 {
	src := filepath.Join(r.data, "events")
	dst := filepath.Join(r.cfg.work, "log-check")
	defer os.RemoveAll(dst)
	if err := os.RemoveAll(dst); err != nil {
		r.problem("%v", err)
		return 0
	}
	if err := copyTree(src, dst); err != nil {
		r.problem("the event store after the loss: %v", err)
		return 0
	}
	store, err := embedded.Open(dst, embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		r.problem("the event store does not open after the loss: %v", err)
		return 0
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sub, err := store.SubscribeAll(ctx, eventstore.Beginning, eventstore.Filter{})
	if err != nil {
		r.problem("read the log: %v", err)
		return 0
	}
	defer sub.Close()
	var last uint64
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			r.problem("read the log: %v", err)
			return 0
		}
		for _, ev := range b.Events {
			if p := ev.Position; p.Commit != last+1 || p.Prepare != p.Commit {
				r.problem("the log is not dense: position %v follows %d", p, last)
				return 0
			}
			last = ev.Position.Commit
		}
		if b.CaughtUp {
			break
		}
	}
	head, err := store.Head(ctx)
	if err != nil || head.Commit != last {
		r.problem("the log's head is %v (%v), its last event %d", head, err, last)
	}
	missing := 0
	var example string
	r.mu.Lock()
	for login, a := range r.acked {
		if a.pos > last {
			missing++
			example = fmt.Sprintf("%s at %d", login, a.pos)
		}
	}
	r.mu.Unlock()
	if missing > 0 {
		r.problem("lost: the log ends at %d, before %d acknowledged creates (%s)", last, missing, example)
	}
	return last
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// checkAccounts lists the provider's accounts through the API: every
// acknowledged create is there once with its id; a create in doubt at most
// once; nothing else. It returns how many acknowledged accounts it found
// and how many of those in doubt had survived.
func (r *runner) checkAccounts(ctx context.Context) (found, survived int) {
	status, body, _, err := r.do(ctx, http.MethodGet, "/api/provider/accounts?provider="+strconv.FormatInt(r.provider, 10)+"&limit=0", nil, "")
	if err != nil || status != http.StatusOK {
		r.problem("list the accounts: %d %v", status, err)
		return 0, 0
	}
	var list struct {
		Data []struct {
			ID    int64
			Login string
		}
		Total int
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Total != len(list.Data) {
		r.problem("list the accounts: %v (%d of %d)", err, len(list.Data), list.Total)
		return 0, 0
	}
	byLogin := map[string][]int64{}
	for _, a := range list.Data {
		byLogin[a.Login] = append(byLogin[a.Login], a.ID)
	}
	r.mu.Lock()
	acked := make(map[string]ack, len(r.acked))
	for login, a := range r.acked {
		acked[login] = a
	}
	inDoubt := make(map[string]bool, len(r.inDoubt))
	for login := range r.inDoubt {
		inDoubt[login] = true
	}
	r.mu.Unlock()
	for login, a := range acked {
		ids := byLogin[login]
		switch {
		case len(ids) == 0:
			r.totals.lost++
			r.problem("lost: acknowledged account %s (id %d, position %d) is gone", login, a.id, a.pos)
		case len(ids) > 1 || ids[0] != a.id:
			r.problem("acknowledged account %s (id %d): found as %v", login, a.id, ids)
		default:
			found++
		}
	}
	for login, ids := range byLogin {
		switch {
		case inDoubt[login] && len(ids) > 1:
			r.problem("account %s, unanswered at the loss, is there %d times", login, len(ids))
		case inDoubt[login]:
			survived++
		case acked[login].id == 0:
			r.problem("account %s is there, but its create was never sent or answered", login)
		}
	}
	r.totals.inDoubtSurvived += survived
	return found, survived
}

// resolve sends each create left unanswered by the loss again with its
// key, as a sync job would, until it is acknowledged: with the id of the
// account it made if that survived. It returns how many it resolved.
func (r *runner) resolve(ctx context.Context) int {
	r.mu.Lock()
	var logins []string
	for login := range r.inDoubt {
		logins = append(logins, login)
	}
	r.mu.Unlock()
	resolved := 0
	for _, login := range logins {
		survivor := r.lookup(ctx, login)
		deadline := time.Now().Add(time.Minute)
		for {
			status, body, h, err := r.create(ctx, login)
			if err == nil && status/100 == 2 {
				id, perr := accountID(body, login)
				pos, herr := position(h)
				switch {
				case errors.Join(perr, herr) != nil:
					r.problem("retry of %s: %v", login, errors.Join(perr, herr))
				case survivor != 0 && id != survivor:
					r.problem("retry of %s answered id %d; the account that survived the loss is %d", login, id, survivor)
				}
				r.mu.Lock()
				r.acked[login] = ack{id: id, pos: pos}
				delete(r.inDoubt, login)
				r.mu.Unlock()
				resolved++
				break
			}
			// 409: the key's first attempt is in doubt for a few seconds
			// after a crash; 5xx: the node is busy. Anything else is wrong.
			if err != nil || (status != http.StatusConflict && status < 500) {
				r.problem("retry of %s: %d %s %v", login, status, body, err)
				break
			}
			if time.Now().After(deadline) {
				r.problem("retry of %s not acknowledged within a minute: %d %s", login, status, body)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	r.totals.retriedAcked += resolved
	return resolved
}

// lookup returns the id of login's account, or 0.
func (r *runner) lookup(ctx context.Context, login string) int64 {
	status, body, _, err := r.do(ctx, http.MethodGet, fmt.Sprintf("/api/provider/accounts?provider=%d&login=%s", r.provider, login), nil, "")
	var list struct{ Data []struct{ ID int64 } }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &list) != nil {
		r.problem("look up %s: %d %s %v", login, status, body, err)
		return 0
	}
	if len(list.Data) == 0 {
		return 0
	}
	return list.Data[0].ID
}

// verify runs tvsm rebuild readmodel|stats --verify against the node: the
// read model and the statistics it restored equal a rebuild from the log.
func (r *runner) verify(ctx context.Context) {
	for _, target := range []string{"readmodel", "stats"} {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		cmd := exec.CommandContext(ctx, r.cfg.tvsm, "rebuild", target, "--verify", "--url", "http://"+r.addr, "--user", adminLogin)
		cmd.Env = append(cleanEnv(), "TVSM_ADMIN_PASSWORD="+adminPassword)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), "no difference") {
			r.problem("tvsm rebuild %s --verify: %v\n%s", target, err, out)
		}
	}
}

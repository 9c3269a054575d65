package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tvsm/httpapi"
	"tvsm/internal/testkit/nodetest"
)

// BenchmarkLegitimateGETUnderFailedLogins measures the latency of a
// legitimate request (GET /api/admin/providers with credentials verified
// before, so cached) while failed Basic logins arrive: 20 client addresses
// sending 2 wrong passwords a second each (40 a second, each a bcrypt
// check at the default cost), open loop, as an attacker does. The login
// throttle's limits are set out of the way, so that every failed login
// needs a check: what bounds the CPU they take is the number of password
// checks run at once.
//
// Each round measures four phases of the same length, interleaved: no
// attack and attack on a node with the default bound (half the cores),
// then the same on a node without a bound (password_checks unbounded, the
// behaviour before the bound). Reported: the median over rounds of the
// legitimate GET's p99 in each phase and of the ratios attack/no attack
// (p99 and p50); logged: their min/median/max and what the attackers were
// answered.
//
//	go test -run '^$' -bench LegitimateGETUnderFailedLogins -benchtime 5x ./httpapi/
func BenchmarkLegitimateGETUnderFailedLogins(b *testing.B) {
	const (
		phase      = 3 * time.Second
		getEvery   = 50 * time.Millisecond
		attackers  = 20
		attackRate = 2 // wrong passwords a second per attacker
	)
	bounded := nodetest.StartWith(b, nodetest.Options{BcryptCost: bcrypt.DefaultCost, PasswordChecks: httpapi.DefaultMaxPasswordChecks()})
	unbounded := nodetest.StartWith(b, nodetest.Options{BcryptCost: bcrypt.DefaultCost, PasswordChecks: -1})
	// Per round, the p50 and p99 of each phase.
	type round struct{ idle50, idle99, attack50, attack99 time.Duration }
	rounds := map[*nodetest.Env][]round{}
	answers := map[*nodetest.Env]map[int]int{bounded: {}, unbounded: {}}
	clients := make([]*http.Client, attackers)
	for i := range clients {
		clients[i] = clientFrom(b, fmt.Sprintf("127.0.0.%d", 10+i))
	}

	// get measures the legitimate GET every getEvery for d.
	get := func(env *nodetest.Env, d time.Duration) []time.Duration {
		var out []time.Duration
		for end := time.Now().Add(d); time.Now().Before(end); {
			start := time.Now()
			if status, body := env.Super(b, http.MethodGet, "/api/admin/providers", nil); status != http.StatusOK {
				b.Fatalf("legitimate GET: %d %s", status, body)
			}
			out = append(out, time.Since(start))
			time.Sleep(max(0, getEvery-time.Since(start)))
		}
		return out
	}
	// attack sends wrong passwords for d and waits for every answer.
	var seq atomic.Int64
	attack := func(env *nodetest.Env, d time.Duration) {
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		for i, c := range clients {
			wg.Go(func() {
				// Attackers are spread over the period, not in step.
				time.Sleep(time.Duration(i) * time.Second / attackRate / attackers)
				tick := time.NewTicker(time.Second / attackRate)
				defer tick.Stop()
				for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
					wg.Go(func() {
						status, _, _ := send(b, c, http.MethodGet, env.URL+"/api/admin/providers",
							fmt.Sprint("intruder-", seq.Add(1)), "wrong-password", nil)
						mu.Lock()
						answers[env][status]++
						mu.Unlock()
					})
				}
			})
		}
		wg.Wait()
	}
	for _, env := range []*nodetest.Env{bounded, unbounded} {
		get(env, 200*time.Millisecond) // credentials verified, cache warm
	}

	b.ResetTimer()
	for b.Loop() {
		for _, env := range []*nodetest.Env{bounded, unbounded} {
			idle := get(env, phase)
			done := make(chan []time.Duration)
			go func() { done <- get(env, phase) }()
			attack(env, phase)
			attacked := <-done
			rounds[env] = append(rounds[env], round{
				idle50: percentile(idle, 50), idle99: percentile(idle, 99),
				attack50: percentile(attacked, 50), attack99: percentile(attacked, 99),
			})
		}
	}
	b.StopTimer()

	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, env := range []*nodetest.Env{bounded, unbounded} {
		name := map[*nodetest.Env]string{bounded: "bounded", unbounded: "unbounded"}[env]
		var idle99, attack99, ratio99, ratio50 []float64
		for _, r := range rounds[env] {
			idle99 = append(idle99, ms(r.idle99))
			attack99 = append(attack99, ms(r.attack99))
			ratio99 = append(ratio99, ms(r.attack99)/ms(r.idle99))
			ratio50 = append(ratio50, ms(r.attack50)/ms(r.idle50))
		}
		b.ReportMetric(median(idle99), name+"-idle-p99-ms")
		b.ReportMetric(median(attack99), name+"-attack-p99-ms")
		b.ReportMetric(median(ratio99), name+"-p99-ratio")
		b.ReportMetric(median(ratio50), name+"-p50-ratio")
		b.Logf("%s: legitimate GET p99 without attack %s ms, under attack %s ms, ratio %s (p50 ratio %s; min/median/max over %d rounds); attackers answered %v",
			name, mmm(idle99), mmm(attack99), mmm(ratio99), mmm(ratio50), len(rounds[env]), answers[env])
	}
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// mmm formats the min/median/max of xs.
func mmm(xs []float64) string {
	return fmt.Sprintf("%.2f/%.2f/%.2f", slices.Min(xs), median(xs), slices.Max(xs))
}

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100
	return s[max(rank-1, 0)]
}

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
	"tvsm/internal/platform/throttle"
	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
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

	for _, env := range []*nodetest.Env{bounded, unbounded} {
		name := map[*nodetest.Env]string{bounded: "bounded", unbounded: "unbounded"}[env]
		var idle99, attack99, ratio99, ratio50 []float64
		for _, r := range rounds[env] {
			idle99 = append(idle99, ms(r.idle99))
			attack99 = append(attack99, ms(r.attack99))
			ratio99 = append(ratio99, ms(r.attack99)/ms(r.idle99))
			ratio50 = append(ratio50, ms(r.attack50)/ms(r.idle50))
		}
		b.ReportMetric(testutil.Median(idle99), name+"-idle-p99-ms")
		b.ReportMetric(testutil.Median(attack99), name+"-attack-p99-ms")
		b.ReportMetric(testutil.Median(ratio99), name+"-p99-ratio")
		b.ReportMetric(testutil.Median(ratio50), name+"-p50-ratio")
		b.Logf("%s: legitimate GET p99 without attack %s ms, under attack %s ms, ratio %s (p50 ratio %s; min/median/max over %d rounds); attackers answered %v",
			name, mmm(idle99), mmm(attack99), mmm(ratio99), mmm(ratio50), len(rounds[env]), answers[env])
	}
}

// mmm formats the min/median/max of xs.
func mmm(xs []float64) string {
	return fmt.Sprintf("%.2f/%.2f/%.2f", slices.Min(xs), testutil.Median(xs), slices.Max(xs))
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

// BenchmarkAdminSignInDuringSpray measures an admin's sign-ins whose
// password is not cached (every one a bcrypt check at the default cost)
// during a password spray: one wrong password tried on ever new logins, 40
// a second, open loop, from 1,000 client addresses in turn. The node has
// the default bound on password checks (half the cores) and its default
// wait for a turn.
//
// Each round has two phases of the same length: no spray, then spray.
// In each, two admins sign in every 250 ms, half a period apart: one from
// the address it signed in from before (a known pair, served first), one
// from an address never seen (no failure recorded there, so ahead of
// failing addresses, but level with the spray's own first attempts from
// fresh addresses).
// Reported: the success rate and the p99 of each over all rounds;
// logged: per round min/median/max and the spray's answers.
//
//	go test -run '^$' -bench AdminSignInDuringSpray -benchtime 3x -timeout 30m ./httpapi/
func BenchmarkAdminSignInDuringSpray(b *testing.B) {
	const (
		phase       = 10 * time.Second
		signInEvery = 250 * time.Millisecond
		addresses   = 1000
		sprayRate   = 40 // wrong passwords a second, all addresses together
	)
	env := nodetest.StartWith(b, nodetest.Options{
		BcryptCost:     bcrypt.DefaultCost,
		PasswordChecks: httpapi.DefaultMaxPasswordChecks(),
		PasswordCache:  -1, // every sign-in needs a check
		// The node's default limits: 5 failures per login and address,
		// 20 per address, 20 per login from all addresses, a minute.
		AdminLogins: throttle.GuardOptions{LoginLimit: 5, AddressLimit: 20, LoginTotalLimit: 20},
	})
	url := env.URL + "/api/admin/providers"
	sprayers := make([]*http.Client, addresses)
	for i := range sprayers {
		sprayers[i] = clientFrom(b, fmt.Sprintf("127.1.%d.%d", i/250, 1+i%250))
	}
	known := clientFrom(b, "127.0.0.2")
	if status, _, body := send(b, known, http.MethodGet, url, env.SuperLogin, env.SuperPassword, nil); status != http.StatusOK {
		b.Fatalf("the admin's first sign-in: %d %s", status, body)
	}
	var freshSeq atomic.Int64
	// freshClient returns a client from an address never used before.
	freshClient := func() *http.Client {
		n := freshSeq.Add(1)
		return clientFrom(b, fmt.Sprintf("127.2.%d.%d", n/250, 1+n%250))
	}

	type outcome struct {
		ok      bool
		latency time.Duration
	}
	// signIns signs in every signInEvery for d, from known and, half a
	// period later (so that the two admins do not wait for each other's
	// check), from a fresh address each time.
	signIns := func(d time.Duration) (fromKnown, fromFresh []outcome) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		end := time.Now().Add(d)
		every := func(offset time.Duration, client func() *http.Client, into *[]outcome) {
			time.Sleep(offset)
			for ; time.Now().Before(end); time.Sleep(signInEvery) {
				c := client()
				wg.Go(func() {
					start := time.Now()
					status, _, _ := send(b, c, http.MethodGet, url, env.SuperLogin, env.SuperPassword, nil)
					mu.Lock()
					*into = append(*into, outcome{status == http.StatusOK, time.Since(start)})
					mu.Unlock()
				})
			}
		}
		wg.Go(func() { every(0, func() *http.Client { return known }, &fromKnown) })
		wg.Go(func() { every(signInEvery/2, freshClient, &fromFresh) })
		wg.Wait()
		return fromKnown, fromFresh
	}
	var (
		sprayed   = map[int]int{}
		sprayedMu sync.Mutex
		sprayNext atomic.Int64
	)
	// spray sends sprayRate wrong passwords a second for d, open loop,
	// and waits for every answer.
	spray := func(d time.Duration) {
		var wg sync.WaitGroup
		tick := time.NewTicker(time.Second / sprayRate)
		defer tick.Stop()
		for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
			n := sprayNext.Add(1)
			wg.Go(func() {
				status, _, _ := send(b, sprayers[n%addresses], http.MethodGet, url, fmt.Sprint("user", n), "Winter2026!", nil)
				sprayedMu.Lock()
				sprayed[status]++
				sprayedMu.Unlock()
			})
		}
		wg.Wait()
	}

	latencies := func(os []outcome) []time.Duration {
		var out []time.Duration
		for _, o := range os {
			out = append(out, o.latency)
		}
		return out
	}
	var idleKnown, idleFresh, sprayKnown, sprayFresh []outcome
	type roundFigures struct{ knownP99, freshP99 float64 }
	var rounds []roundFigures
	b.ResetTimer()
	for b.Loop() {
		k, f := signIns(phase)
		idleKnown, idleFresh = append(idleKnown, k...), append(idleFresh, f...)
		done := make(chan struct{})
		go func() { spray(phase); close(done) }()
		time.Sleep(time.Second) // the spray's queue builds up first
		k, f = signIns(phase - time.Second)
		<-done
		sprayKnown, sprayFresh = append(sprayKnown, k...), append(sprayFresh, f...)
		rounds = append(rounds, roundFigures{ms(percentile(latencies(k), 99)), ms(percentile(latencies(f), 99))})
	}
	b.StopTimer()

	for _, s := range []struct {
		name string
		o    []outcome
	}{{"known-idle", idleKnown}, {"known-spray", sprayKnown}, {"fresh-idle", idleFresh}, {"fresh-spray", sprayFresh}} {
		var ok int
		var lat []time.Duration
		for _, o := range s.o {
			if o.ok {
				ok++
			}
			lat = append(lat, o.latency)
		}
		b.ReportMetric(100*float64(ok)/float64(max(1, len(s.o))), s.name+"-success-%")
		b.ReportMetric(ms(percentile(lat, 99)), s.name+"-p99-ms")
		b.Logf("%s: %d of %d sign-ins succeeded; p50 %.1f ms, p99 %.1f ms", s.name, ok, len(s.o), ms(percentile(lat, 50)), ms(percentile(lat, 99)))
	}
	var knownP99, freshP99 []float64
	for _, r := range rounds {
		knownP99, freshP99 = append(knownP99, r.knownP99), append(freshP99, r.freshP99)
	}
	b.Logf("p99 per round during the spray (min/median/max over %d): known %s ms, fresh %s ms; spray answered %v",
		len(rounds), mmm(knownP99), mmm(freshP99), sprayed)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

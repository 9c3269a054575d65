package main

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkLegitimateGETUnderConnectionFlood measures a legitimate `GET
// /api/admin/providers` (credentials cached, a new connection each time,
// from 127.0.0.3) every 20 ms while one address (127.0.0.2) opens 3,000
// connections and holds them, each sending a 16 KB device login a byte a
// second (the login is public and reads its body first),
// the way a slow-body attack holds a server's connections for its read
// timeout; interleaved per round with the same GET without attack. Once on
// `tvsm serve` with the default caps (1,000 connections per address), once
// without caps (the behaviour before them).
//
//	go test -run '^$' -bench LegitimateGETUnderConnectionFlood -benchtime 5x ./cmd/tvsm/
func BenchmarkLegitimateGETUnderConnectionFlood(b *testing.B) {
	const (
		phase    = 3 * time.Second
		getEvery = 20 * time.Millisecond
		flood    = 3000
	)
	type server struct {
		name, addr string
		rounds     []floodRound
	}
	servers := []*server{{name: "caps (default)"}, {name: "no caps"}}
	for _, s := range servers {
		args := []string{"--http", "127.0.0.1:0", "--data", b.TempDir()}
		if s.name == "no caps" {
			args = append(args, "--max-connections", "0", "--max-connections-per-address", "0")
		}
		stderr, exited, cancel := startServe(b, args...)
		s.addr = waitForListening(b, stderr, exited)
		b.Cleanup(func() {
			cancel()
			<-exited
		})
	}
	legit := fromAddr("127.0.0.3")
	legit.Transport.(*http.Transport).DisableKeepAlives = true
	get := func(addr string, d time.Duration) (lat []time.Duration, failed int) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			start := time.Now()
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/admin/providers", nil)
			req.SetBasicAuth("root", "s3cret-root")
			resp, err := legit.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				failed++
			} else {
				lat = append(lat, time.Since(start))
			}
			time.Sleep(max(0, getEvery-time.Since(start)))
		}
		return lat, failed
	}
	for _, s := range servers {
		get(s.addr, 200*time.Millisecond) // credentials verified, cache warm
	}

	b.ResetTimer()
	for b.Loop() {
		for _, s := range servers {
			idle, _ := get(s.addr, phase)
			release := holdConnections(b, s.addr, "127.0.0.2", flood)
			attacked, failed := get(s.addr, phase)
			s.rounds = append(s.rounds, floodRound{idle: idle, attacked: attacked, failed: failed, held: release()})
		}
	}
	b.StopTimer()

	for _, s := range servers {
		var idle99, attack99, ratio []float64
		failed, held := 0, []float64{}
		for _, r := range s.rounds {
			i, a := ms(percentile(r.idle, 99)), ms(percentile(r.attacked, 99))
			idle99, attack99, ratio = append(idle99, i), append(attack99, a), append(ratio, a/i)
			failed += r.failed
			held = append(held, float64(r.held))
		}
		slices.Sort(held)
		b.Logf("%-14s GET p99 without attack %s ms, under attack %s ms, ratio %s; attacker's connections held %.0f to %.0f of %d; legitimate GETs failed: %d",
			s.name, spread(idle99), spread(attack99), spread(ratio), held[0], held[len(held)-1], flood, failed)
	}
}

// floodRound is one round of the flood benchmark: the legitimate GET's
// latencies without and under attack, its failures under attack, and how
// many of the attacker's connections the server held.
type floodRound struct {
	idle, attacked []time.Duration
	failed, held   int
}

// holdConnections opens n connections to addr from ip, as fast as it can,
// each sending the headers of a 16 KB device login (the largest it takes)
// and then a byte a second, until release, which returns how many the
// server held open to the end (did not answer and close).
func holdConnections(b *testing.B, addr, ip string, n int) (release func() int) {
	b.Helper()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	done := make(chan struct{})
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		held int
	)
	for range n {
		c, err := dialer.Dial("tcp", addr)
		if err != nil {
			continue
		}
		wg.Go(func() {
			defer c.Close()
			_, err := fmt.Fprintf(c, "POST /api/device/login HTTP/1.1\r\nHost: tvsm\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 16000)
			for err == nil {
				// A refused connection is answered and closed at once: the
				// read returns; a held one times out.
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				var buf [1]byte
				if _, rerr := c.Read(buf[:]); rerr == nil || !isTimeout(rerr) {
					return
				}
				select {
				case <-done:
					mu.Lock()
					held++
					mu.Unlock()
					return
				default:
				}
				_, err = c.Write([]byte(" "))
			}
		})
	}
	return func() int {
		close(done)
		wg.Wait()
		return held
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

// spread writes min / median / max of vs.
func spread(vs []float64) string {
	s := slices.Sorted(slices.Values(vs))
	return fmt.Sprintf("%.3g / %.3g / %.3g", s[0], s[len(s)/2], s[len(s)-1])
}

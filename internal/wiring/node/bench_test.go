package node_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"tvsm/internal/testkit/nodetest"
	"tvsm/internal/testkit/testutil"
)

// benchClients is how many concurrent HTTP clients the throughput
// benchmarks use: enough to keep group commit busy.
var benchClients = envInt("TVSM_BENCH_CLIENTS", 64)

// BenchmarkHTTPThroughput measures requests/s over real loopback HTTP for
// account creates and updates on a full node with the embedded store, and,
// in the same run and on the same machine, for a bare gin handler that
// decodes and echoes the same JSON body: the ratio of the two is the cost of
// tvsm's work (validation, durable append, read-your-writes) per request.
func BenchmarkHTTPThroughput(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	b.Run("gin-echo", func(b *testing.B) {
		url := echoServer(b)
		run(b, func(i int) (*http.Request, error) {
			return jsonRequest(http.MethodPost, url, accountBody(i), "", "")
		})
	})

	b.Run("account-create", func(b *testing.B) {
		env := nodetest.Start(b)
		provider := createProvider(b, env)
		defer reportFsyncs(b, env)()
		run(b, func(i int) (*http.Request, error) {
			v := accountBody(i)
			v["provider"] = provider
			return jsonRequest(http.MethodPost, env.URL+"/api/provider/accounts", v, env.SuperLogin, env.SuperPassword)
		})
	})

	b.Run("account-update", func(b *testing.B) {
		env := nodetest.Start(b)
		provider := createProvider(b, env)
		const accounts = 1000
		ids := createAccounts(b, env, provider, accounts)
		defer reportFsyncs(b, env)()
		run(b, func(i int) (*http.Request, error) {
			// Every update really changes the account, so each appends.
			v := map[string]any{"id": ids[i%accounts], "fullname": "Renamed " + strconv.Itoa(i)}
			return jsonRequest(http.MethodPost, env.URL+"/api/provider/accounts", v, env.SuperLogin, env.SuperPassword)
		})
	})
}

// createAccounts creates n accounts of provider, one at a time, and returns
// their ids.
func createAccounts(b *testing.B, env *nodetest.Env, provider int64, n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		v := accountBody(i)
		v["provider"] = provider
		status, resp := env.Super(b, http.MethodPost, "/api/provider/accounts", v)
		if status != http.StatusOK {
			b.Fatalf("create account: %d %s", status, resp)
		}
		var a struct{ ID int64 }
		if err := json.Unmarshal(resp, &a); err != nil {
			b.Fatal(err)
		}
		ids[i] = a.ID
	}
	return ids
}

// BenchmarkWriteCurve measures account creates and updates over loopback
// HTTP from 1, 4, 16, 64 and 256 concurrent clients, each sending one
// request at a time, beside the bare gin echo at the same number of clients
// and the raw fsync time of the disk (testutil.RawFsync), so that a
// regression at any point of the curve shows. Each client count gets a node
// of its own; its echoes, creates, updates and raw fsyncs take turns in
// slices of about 100 ms, so that a machine whose speed drifts slows all
// alike. b.N is the number of requests of each kind.
//
// For each of echo, create and update it reports req/s, the p50 and p99
// latency in µs and the process's CPU time per request in µs (server and
// clients together, from getrusage); the create/echo and update/echo
// ratios of req/s; the WAL fsyncs per create and per update; and one raw
// fsync in µs, its mean and its 99th percentile (what a write's p99 is
// measured against: a write waits for one fsync).
func BenchmarkWriteCurve(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	echoURL := echoServer(b)
	for _, clients := range []int{1, 4, 16, 64, 256} {
		env := nodetest.Start(b)
		curve := newWriteCurve(b, env, echoURL, clients)
		b.Run(fmt.Sprintf("clients=%d", clients), curve.run)
		env.Close()
	}
}

// writeCurve is one client count of BenchmarkWriteCurve: its node and what
// the benchmark's runs have done on it so far.
type writeCurve struct {
	env      *nodetest.Env
	raw      *testutil.RawFsync
	clients  int
	echo     func(i int) (*http.Request, error)
	create   func(i int) (*http.Request, error)
	update   func(i int) (*http.Request, error)
	requests int // sent of each kind by earlier runs: creates need new logins, updates new names
}

func newWriteCurve(b *testing.B, env *nodetest.Env, echoURL string, clients int) *writeCurve {
	provider := createProvider(b, env)
	accounts := createAccounts(b, env, provider, max(1000, 4*clients))
	w := &writeCurve{env: env, raw: testutil.NewRawFsync(b, b.TempDir()), clients: clients}
	w.echo = func(i int) (*http.Request, error) {
		return jsonRequest(http.MethodPost, echoURL, accountBody(i), "", "")
	}
	w.create = func(i int) (*http.Request, error) {
		v := accountBody(len(accounts) + w.requests + i)
		v["provider"] = provider
		return jsonRequest(http.MethodPost, env.URL+"/api/provider/accounts", v, env.SuperLogin, env.SuperPassword)
	}
	w.update = func(i int) (*http.Request, error) {
		// A new name each time: every update appends.
		v := map[string]any{"id": accounts[(w.requests+i)%len(accounts)], "fullname": "Renamed " + strconv.Itoa(w.requests+i)}
		return jsonRequest(http.MethodPost, env.URL+"/api/provider/accounts", v, env.SuperLogin, env.SuperPassword)
	}
	return w
}

// writeKind is what one kind of request of a writeCurve run took.
type writeKind struct {
	name      string
	request   func(i int) (*http.Request, error)
	client    *http.Client
	elapsed   time.Duration
	cpu       time.Duration
	fsyncs    uint64
	latencies []time.Duration
}

func (w *writeCurve) run(b *testing.B) {
	kinds := []*writeKind{{name: "echo", request: w.echo}, {name: "create", request: w.create}, {name: "update", request: w.update}}
	for _, k := range kinds {
		k.client = httpClients(w.clients)
		defer k.client.CloseIdleConnections()
		k.latencies = make([]time.Duration, b.N)
	}
	slice := w.clients
	b.ResetTimer()
	for done := 0; done < b.N; {
		to := min(done+slice, b.N)
		for _, k := range kinds {
			fsyncs, cpu, start := w.env.Store.Fsyncs(), testutil.ProcessCPU(b), time.Now()
			if err := fireTimed(k.client, w.clients, done, to, k.request, k.latencies[done:to]); err != nil {
				b.Fatalf("%s: %v", k.name, err)
			}
			k.elapsed += time.Since(start)
			k.cpu += testutil.ProcessCPU(b) - cpu
			k.fsyncs += w.env.Store.Fsyncs() - fsyncs
		}
		b.StopTimer()
		w.raw.Run(b, 10*time.Millisecond)
		b.StartTimer()
		// The next slice of the slowest kind takes about sliceTime.
		slowest := slices.MaxFunc(kinds, func(x, y *writeKind) int { return cmp.Compare(x.elapsed, y.elapsed) })
		slice = max(w.clients, int(float64(to)/slowest.elapsed.Seconds()*sliceTime.Seconds()))
		done = to
	}
	b.StopTimer()
	w.requests += b.N
	rates := map[string]float64{}
	for _, k := range kinds {
		rates[k.name] = float64(b.N) / k.elapsed.Seconds()
		slices.Sort(k.latencies)
		b.ReportMetric(rates[k.name], k.name+"-req/s")
		b.ReportMetric(float64(k.latencies[b.N/2].Microseconds()), k.name+"-p50-µs")
		b.ReportMetric(float64(k.latencies[b.N*99/100].Microseconds()), k.name+"-p99-µs")
		b.ReportMetric(float64(k.cpu.Microseconds())/float64(b.N), k.name+"-cpu-µs")
		if k.name != "echo" {
			b.ReportMetric(rates[k.name]/rates["echo"], k.name+"/echo")
			b.ReportMetric(float64(k.fsyncs)/float64(b.N), k.name+"-fsyncs/req")
		}
	}
	b.ReportMetric(float64(w.raw.Duration().Microseconds()), "raw-fsync-µs")
	b.ReportMetric(float64(w.raw.Quantile(0.99).Microseconds()), "raw-fsync-p99-µs")
}

// sliceTime is about how long BenchmarkWriteCurve's slices of its slowest
// kind of request take.
const sliceTime = 100 * time.Millisecond

// BenchmarkCreateToEchoRatio is BenchmarkHTTPThroughput's account-create
// against gin-echo, interleaved: slices of TVSM_BENCH_SLICE requests
// (default 2000) go alternately to the echo server and to the node, and each
// side's time is summed, so that a machine whose speed drifts during the run
// (a VM's neighbours) slows both sides alike. It reports both rates and
// their ratio.
func BenchmarkCreateToEchoRatio(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	echoURL := echoServer(b)
	env := nodetest.Start(b)
	provider := createProvider(b, env)
	echo := func(i int) (*http.Request, error) {
		return jsonRequest(http.MethodPost, echoURL, accountBody(i), "", "")
	}
	create := func(i int) (*http.Request, error) {
		v := accountBody(i)
		v["provider"] = provider
		return jsonRequest(http.MethodPost, env.URL+"/api/provider/accounts", v, env.SuperLogin, env.SuperPassword)
	}
	echoClient, createClient := benchClient(), benchClient()
	defer echoClient.CloseIdleConnections()
	defer createClient.CloseIdleConnections()
	slice := envInt("TVSM_BENCH_SLICE", 2000)
	var echoTime, createTime time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += slice {
		to := min(done+slice, b.N)
		echoTime += timed(b, func() error { return fire(echoClient, done, to, echo) })
		createTime += timed(b, func() error { return fire(createClient, done, to, create) })
	}
	b.StopTimer()
	echoRate, createRate := float64(b.N)/echoTime.Seconds(), float64(b.N)/createTime.Seconds()
	b.ReportMetric(echoRate, "echo-req/s")
	b.ReportMetric(createRate, "create-req/s")
	b.ReportMetric(createRate/echoRate, "create/echo")
}

// timed runs f and returns how long it took; it fails b if f fails.
func timed(b *testing.B, f func() error) time.Duration {
	start := time.Now()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// accountBody is the JSON of account i, as a provider's billing would send
// it.
func accountBody(i int) map[string]any {
	return map[string]any{
		"login": "bench" + strconv.Itoa(i), "pin_md5": "0123456789abcdef0123456789abcdef",
		"fullname": "Subscriber " + strconv.Itoa(i), "enabled": true, "contract_info": "contract " + strconv.Itoa(i),
	}
}

// echoServer starts the bare gin handler the benchmarks compare against: it
// decodes the JSON body and writes it back. It returns its URL.
func echoServer(b *testing.B) string {
	engine := gin.New()
	engine.POST("/echo", func(c *gin.Context) {
		var v map[string]any
		if err := c.ShouldBindJSON(&v); err != nil {
			c.AbortWithStatus(http.StatusBadRequest)
			return
		}
		c.JSON(http.StatusOK, v)
	})
	srv := httptest.NewServer(engine)
	b.Cleanup(srv.Close)
	return srv.URL + "/echo"
}

// reportFsyncs reports the store's fsyncs and group commits per request
// from the call to the call of the function it returns.
func reportFsyncs(b *testing.B, env *nodetest.Env) func() {
	fsyncs := env.Store.Fsyncs()
	groups, _ := env.Store.Stats()
	return func() {
		b.ReportMetric(float64(env.Store.Fsyncs()-fsyncs)/float64(b.N), "fsyncs/req")
		g, _ := env.Store.Stats()
		b.ReportMetric(float64(g-groups)/float64(b.N), "groups/req")
	}
}

func createProvider(b *testing.B, env *nodetest.Env) int64 {
	status, resp := env.Super(b, http.MethodPost, "/api/admin/providers", map[string]any{"name": "Bench"})
	if status != http.StatusOK {
		b.Fatalf("create provider: %d %s", status, resp)
	}
	var p struct{ ID int64 }
	if err := json.Unmarshal(resp, &p); err != nil {
		b.Fatal(err)
	}
	return p.ID
}

func jsonRequest(method, url string, v any, login, password string) (*http.Request, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if login != "" {
		req.SetBasicAuth(login, password)
	}
	return req, nil
}

// run sends b.N requests from benchClients concurrent clients over their
// own keep-alive connections, fails on any non-200 answer and reports
// requests/s and the CPU time (user and system, of the whole process: server
// and clients) per request, which other load on the machine disturbs less.
// With TVSM_BENCH_WARMUP=n it first sends n requests untimed (indexes after
// the timed ones), so that a node is measured in its steady state: its
// store's WAL files recycled, caches warm.
func run(b *testing.B, request func(i int) (*http.Request, error)) {
	client := benchClient()
	defer client.CloseIdleConnections()
	if warm := envInt("TVSM_BENCH_WARMUP", 0); warm > 0 {
		if err := fire(client, b.N, b.N+warm, request); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu := testutil.ProcessCPU(b)
	start := time.Now()
	err := fire(client, 0, b.N, request)
	elapsed := time.Since(start)
	cpu = testutil.ProcessCPU(b) - cpu
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
}

// benchClient keeps one connection per benchmark client alive.
func benchClient() *http.Client { return httpClients(benchClients) }

// httpClients is an HTTP client for n concurrent clients, each keeping its
// connection alive.
func httpClients(n int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
}

// fire sends the requests with indexes from to to from benchClients
// concurrent clients and returns the first failure.
func fire(client *http.Client, from, to int, request func(i int) (*http.Request, error)) error {
	return fireTimed(client, benchClients, from, to, request, nil)
}

// fireTimed sends the requests with indexes from to to from clients
// concurrent clients and returns the first failure. When latencies is not
// nil, latencies[i-from] is how long request i took.
func fireTimed(client *http.Client, clients, from, to int, request func(i int) (*http.Request, error), latencies []time.Duration) error {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	var failed atomic.Value
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= to || failed.Load() != nil {
					return
				}
				start := time.Now()
				if err := send(client, i, request); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				if latencies != nil {
					latencies[i-from] = time.Since(start)
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return nil
}

func send(client *http.Client, i int, request func(i int) (*http.Request, error)) error {
	req, err := request(i)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("request %d: %d %s", i, resp.StatusCode, data)
	}
	return nil
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"tvsm/internal/tools/tvipimport"
)

// ImportOptions configure the import scenario (`tvsm bench import`): a
// source node holding Accounts accounts, each with a subscription and two
// devices, copied Runs times into a new node by tvipimport.
type ImportOptions struct {
	// Binary is the tvsm binary the nodes run.
	Binary   string
	Accounts int
	Runs     int
	// Workers and PageSize are the importer's (its defaults when 0).
	Workers, PageSize int
	// Log receives the nodes' standard error and the steps.
	Log io.Writer
	// ProfileDir, when set, gets a CPU profile of the target node during
	// the first ProfileSeconds (default 10) of each run's import, and one
	// of the importer (this process) during the whole import.
	ProfileDir     string
	ProfileSeconds int
}

// ImportRun is one run: the source's lists read by one reader, then the
// import into a new node.
type ImportRun struct {
	// ListTime is the time to read the source's accounts, account
	// subscriptions and devices, a page at a time, as the importer does;
	// Listed the objects read.
	ListTime time.Duration
	Listed   int
	// ImportTime is the whole import (every resource, both sides read);
	// Events and Fsyncs are the target's, from its /metrics.
	ImportTime     time.Duration
	Writes         int
	Events, Fsyncs float64
	// CPU during the import: the target node's, the importer's (this
	// process) and the source node's.
	TargetCPU, ImporterCPU, SourceCPU time.Duration
}

// ImportResult is the scenario's outcome.
type ImportResult struct {
	Accounts, Objects int
	Fill              time.Duration
	Runs              []ImportRun
}

// String renders the runs: min / median / max of each figure.
func (r ImportResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "source: %d accounts, %d objects in all, written in %v\n", r.Accounts, r.Objects, r.Fill.Round(time.Second))
	row := func(name string, f func(ImportRun) float64, format string) {
		vs := make([]float64, len(r.Runs))
		for i, run := range r.Runs {
			vs[i] = f(run)
		}
		slices.Sort(vs)
		fmt.Fprintf(&b, "%-34s "+format+" / "+format+" / "+format+"\n", name, vs[0], vs[len(vs)/2], vs[len(vs)-1])
	}
	fmt.Fprintf(&b, "%d runs, min / median / max:\n", len(r.Runs))
	row("import (s)", func(x ImportRun) float64 { return x.ImportTime.Seconds() }, "%.1f")
	row("events appended", func(x ImportRun) float64 { return x.Events }, "%.0f")
	row("events/s", func(x ImportRun) float64 { return x.Events / x.ImportTime.Seconds() }, "%.0f")
	row("objects/s imported", func(x ImportRun) float64 { return float64(x.Writes) / x.ImportTime.Seconds() }, "%.0f")
	row("fsyncs", func(x ImportRun) float64 { return x.Fsyncs }, "%.0f")
	row("CPU µs an object: target node", func(x ImportRun) float64 { return perObject(x.TargetCPU, x.Writes) }, "%.0f")
	row("CPU µs an object: importer", func(x ImportRun) float64 { return perObject(x.ImporterCPU, x.Writes) }, "%.0f")
	row("CPU µs an object: source node", func(x ImportRun) float64 { return perObject(x.SourceCPU, x.Writes) }, "%.0f")
	row("source lists alone (s)", func(x ImportRun) float64 { return x.ListTime.Seconds() }, "%.1f")
	row("source lists, objects/s", func(x ImportRun) float64 { return float64(x.Listed) / x.ListTime.Seconds() }, "%.0f")
	row("import / source lists (time)", func(x ImportRun) float64 { return x.ImportTime.Seconds() / x.ListTime.Seconds() }, "%.2f")
	return b.String()
}

// profileSelf starts a CPU profile of this process into dir/name (nothing
// when dir is empty) and returns the function that stops it.
func profileSelf(dir, name string) (func(), error) {
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func perObject(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / float64(max(n, 1))
}

// Import runs the scenario.
func Import(ctx context.Context, o ImportOptions) (ImportResult, error) {
	if o.Accounts <= 0 || o.Runs <= 0 {
		return ImportResult{}, fmt.Errorf("loadtest: accounts and runs must be positive")
	}
	res := ImportResult{Accounts: o.Accounts}
	src, err := startCluster(ctx, BroadcastOptions{Binary: o.Binary, Log: o.Log, Nodes: 1})
	if err != nil {
		return res, err
	}
	defer src.stop()
	source := src.nodes[0]
	start := time.Now()
	if res.Objects, err = fillImportSource(ctx, source, o.Accounts, o.Log); err != nil {
		return res, err
	}
	res.Fill = time.Since(start)
	fmt.Fprintf(o.Log, "bench import: the source holds %d objects (%v)\n", res.Objects, res.Fill.Round(time.Second))
	for i := range o.Runs {
		run, err := importRun(ctx, o, source)
		if err != nil {
			return res, fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Fprintf(o.Log, "bench import: run %d: lists %v, import %v, %.0f events\n", i+1,
			run.ListTime.Round(time.Millisecond), run.ImportTime.Round(time.Millisecond), run.Events)
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// importRun reads the source's big lists, then imports into a new node.
func importRun(ctx context.Context, o ImportOptions, source *server) (ImportRun, error) {
	var run ImportRun
	pageSize := o.PageSize
	if pageSize <= 0 {
		pageSize = 500
	}
	start := time.Now()
	for _, path := range []string{"/api/provider/accounts", "/api/provider/account_subscriptions", "/api/provider/devices"} {
		n, err := source.listAll(ctx, path, pageSize)
		if err != nil {
			return run, err
		}
		run.Listed += n
	}
	run.ListTime = time.Since(start)

	dst, err := startCluster(ctx, BroadcastOptions{Binary: o.Binary, Log: o.Log, Nodes: 1})
	if err != nil {
		return run, err
	}
	defer dst.stop()
	target := dst.nodes[0]
	const events, fsyncs = "tvsm_eventstore_appended_events_total", "tvsm_eventstore_fsyncs_total"
	before, err := target.metrics(ctx, events, fsyncs)
	if err != nil {
		return run, err
	}
	seconds := o.ProfileSeconds
	if seconds <= 0 {
		seconds = 10
	}
	profiled := dst.profile(ctx, o.ProfileDir, seconds, o.Log)
	stopProfile, err := profileSelf(o.ProfileDir, "importer.cpu.pprof")
	if err != nil {
		return run, err
	}
	targetCPU, sourceCPU, importerCPU := processCPU(target.cmd.Process.Pid), processCPU(source.cmd.Process.Pid), processCPU(os.Getpid())
	start = time.Now()
	report, err := tvipimport.Import(ctx, tvipimport.Options{
		Source:   tvipimport.Endpoint{URL: source.url, Login: "admin", Password: benchPassword},
		Target:   tvipimport.Endpoint{URL: target.url, Login: "admin", Password: benchPassword},
		Workers:  o.Workers,
		PageSize: pageSize,
	})
	run.ImportTime = time.Since(start)
	run.TargetCPU = processCPU(target.cmd.Process.Pid) - targetCPU
	run.SourceCPU = processCPU(source.cmd.Process.Pid) - sourceCPU
	run.ImporterCPU = processCPU(os.Getpid()) - importerCPU
	stopProfile()
	if perr := profiled(); err == nil {
		err = perr
	}
	if err != nil {
		return run, err
	}
	if !report.OK() {
		return run, fmt.Errorf("the import was not clean: %+v", report.Resources)
	}
	run.Writes = report.Writes()
	after, err := target.metrics(ctx, events, fsyncs)
	if err != nil {
		return run, err
	}
	run.Events, run.Fsyncs = after[events]-before[events], after[fsyncs]-before[fsyncs]
	return run, nil
}

// listAll reads a whole list a page at a time and returns its length.
func (s *server) listAll(ctx context.Context, path string, pageSize int) (int, error) {
	n := 0
	for {
		var page struct {
			Data  []json.RawMessage `json:"data"`
			Total int               `json:"total"`
		}
		if err := s.admin(ctx, http.MethodGet, fmt.Sprintf("%s?start=%d&limit=%d", path, n, pageSize), nil, &page); err != nil {
			return n, err
		}
		n += len(page.Data)
		if len(page.Data) == 0 || n >= page.Total {
			return n, nil
		}
	}
}

// fillImportSource creates accounts accounts (the bulk endpoint), each
// with a subscription and two devices, and returns the objects created.
func fillImportSource(ctx context.Context, s *server, accounts int, log io.Writer) (int, error) {
	provider, tariff, err := s.catalog(ctx)
	if err != nil {
		return 0, err
	}
	ids := make([]int64, 0, accounts)
	const chunk = 10000
	for first := 0; first < accounts; first += chunk {
		var body bytes.Buffer
		for i := first; i < min(first+chunk, accounts); i++ {
			login := "import-" + strconv.Itoa(i)
			line, _ := json.Marshal(map[string]any{"provider": provider, "login": login, "pin_md5": "",
				"fullname": "Subscriber " + strconv.Itoa(i), "contract_info": "C-" + strconv.Itoa(i), "enabled": true})
			body.Write(append(line, '\n'))
		}
		got, err := s.bulk(ctx, &body)
		if err != nil {
			return 0, err
		}
		ids = append(ids, got...)
		fmt.Fprintf(log, "bench import: %d accounts\n", len(ids))
	}
	work := make(chan int64)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for account := range work {
				err := s.admin(ctx, http.MethodPost, "/api/provider/account_subscriptions",
					map[string]any{"account": account, "tarif": tariff, "start": "2026-01-01T00:00:00+0000"}, nil)
				for d := 0; d < 2 && err == nil; d++ {
					err = s.admin(ctx, http.MethodPost, "/api/provider/devices",
						map[string]any{"account": account, "unique_id": fmt.Sprintf("box-%d-%d", account, d), "mac": mac(account, d)}, nil)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i, id := range ids {
		if i%20000 == 0 {
			fmt.Fprintf(log, "bench import: subscriptions and devices of %d accounts\n", i)
		}
		select {
		case work <- id:
			continue
		case err := <-errs:
			close(work)
			wg.Wait()
			return 0, err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return 2 + 4*len(ids), nil // the provider, the tariff; per account itself, a subscription, two devices
}

// mac is a distinct MAC address for device d of account.
func mac(account int64, d int) string {
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", d, byte(account>>24), byte(account>>16), byte(account>>8), byte(account))
}

// bulk sends NDJSON account records to the bulk endpoint and returns the
// ids of the records, in order.
func (s *server) bulk(ctx context.Context, body io.Reader) ([]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/api/provider/accounts/bulk", body)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("admin", benchPassword)
	req.Header.Set("Content-Type", "application/x-ndjson")
	client := &http.Client{Timeout: 10 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var ids []int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r struct {
			Status int             `json:"status"`
			ID     int64           `json:"id"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, err
		}
		if r.Status != http.StatusOK {
			return nil, fmt.Errorf("loadtest: bulk record: %d %s", r.Status, r.Error)
		}
		ids = append(ids, r.ID)
	}
	return ids, sc.Err()
}

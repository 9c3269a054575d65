// Package simulate runs virtual devices against a tvsm node over its real
// Device API: each logs in, holds a websocket, acknowledges every command,
// confirms confirm messages and reports viewing. `tvsm simulate` uses it for
// demos and load, and the broadcast benchmark for its client processes.
//
// The same devices can be clients of a Centrifugo server instead
// (CentrifugoChannel), so that a comparison drives both servers with one
// client: the same processes, pacing, connections and reports.
package simulate

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/internal/platform/throttle"
)

// Options configure a simulation.
type Options struct {
	// URL is the node's base URL, e.g. http://127.0.0.1:8080.
	URL string
	// Provider is the provider the accounts belong to.
	Provider int64
	// Devices is the number of virtual devices; device i (from First) logs
	// in as fmt.Sprintf(LoginFormat, i) with Password.
	Devices int
	First   int
	// LoginFormat formats a device's account login (default "sim%06d").
	LoginFormat string
	// Password is the accounts' password in clear; its md5 is sent.
	Password string
	// DevicesPerAccount spreads devices over accounts: device i uses account
	// i / DevicesPerAccount (default 1).
	DevicesPerAccount int
	// UniquePrefix prefixes device unique ids (default "sim-").
	UniquePrefix string
	// SourceIP binds the client side of every connection (for more than one
	// source address per machine: 127.0.0.2, ...); empty: the default.
	SourceIP string
	// ViewEvery is the period of viewing reports (0: none).
	ViewEvery time.Duration
	// ConnectRate limits new logins per second (0: 500).
	ConnectRate int
	// LoginsInFlight bounds the logins the process waits for at once
	// (default DefaultLoginsInFlight; negative: no bound). The devices of
	// one process share its source address, and a node checks a bounded
	// number of new logins from one address at a time, refusing the rest
	// after a wait: without a bound, a process starting devices faster than
	// the node admits them keeps thousands waiting or retrying, and the
	// retries take the CPU the node needs to admit them.
	LoginsInFlight int
	// StopAfterCommands ends the simulation once every device received that
	// many commands (0: run until ctx is done).
	StopAfterCommands int
	// Hold, with StopAfterCommands, keeps the devices connected once every
	// one received its commands (Done is closed then) until ctx is done: a
	// benchmark reads the processes' CPU at that moment, before the
	// hang-ups add their own.
	Hold bool
	// CentrifugoChannel, when set, makes the devices clients of a
	// Centrifugo server at URL rather than of a tvsm node: each connects
	// without a token to its websocket endpoint (/connection/websocket,
	// JSON protocol), subscribes to this channel and counts every
	// publication in it as a command. Centrifugo's clients acknowledge
	// nothing; they answer the server's pings. No login, no viewing.
	CentrifugoChannel string
	// NoReceipts makes the devices send no acknowledgement and no
	// confirmation, which the Device API asks of them: it measures what
	// reading and recording receipts costs a server, against a peer whose
	// clients send nothing (Centrifugo's).
	NoReceipts bool
	// Reader is how devices read their websockets: ReaderEpoll (the
	// default on Linux), one goroutine of the process waiting on every
	// socket, or ReaderGoroutine, a goroutine per connection (the default
	// elsewhere).
	Reader string
	// Setup, when AdminUser is set, creates the missing accounts through the
	// Provider API first, each with a subscription to Tariff (when > 0).
	AdminUser, AdminPassword string
	Tariff                   int64
	// CreateCatalog, with AdminUser a superadmin, first makes sure a
	// provider, a channel and a tariff named "Simulation" exist (creating
	// what is missing) and uses them: Provider and Tariff are set to
	// theirs. A fresh node needs nothing else.
	CreateCatalog bool
}

func (o *Options) defaults() error {
	if o.URL == "" {
		return errors.New("simulate: URL is required")
	}
	o.URL = strings.TrimRight(o.URL, "/")
	if o.CreateCatalog && o.AdminUser == "" {
		return errors.New("simulate: creating the provider, channel and tariff needs an admin")
	}
	if o.CentrifugoChannel != "" && (o.CreateCatalog || o.AdminUser != "") {
		return errors.New("simulate: a Centrifugo server has no accounts to create")
	}
	if o.Provider <= 0 && !o.CreateCatalog && o.CentrifugoChannel == "" {
		return errors.New("simulate: provider must be a positive id")
	}
	if o.Devices <= 0 {
		return errors.New("simulate: devices must be positive")
	}
	if o.LoginFormat == "" {
		o.LoginFormat = "sim%06d"
	}
	if o.DevicesPerAccount <= 0 {
		o.DevicesPerAccount = 1
	}
	if o.UniquePrefix == "" {
		o.UniquePrefix = "sim-"
	}
	if o.ConnectRate <= 0 {
		o.ConnectRate = 500
	}
	if o.LoginsInFlight == 0 {
		o.LoginsInFlight = DefaultLoginsInFlight
	}
	switch o.Reader {
	case "":
		o.Reader = ReaderGoroutine
		if epollSupported {
			o.Reader = ReaderEpoll
		}
	case ReaderGoroutine:
	case ReaderEpoll:
		if !epollSupported {
			return readerError(o.Reader)
		}
	default:
		return readerError(o.Reader)
	}
	if o.Hold && o.StopAfterCommands <= 0 {
		return errors.New("simulate: holding the devices after their commands needs a number of commands")
	}
	return nil
}

// Counters are the live figures of a simulation.
type Counters struct {
	LoggedIn, Connected, Commands, Acks, Confirms, Viewing, Errors atomic.Int64
	Reconnects                                                     atomic.Int64
}

// Snapshot is a copy of the counters.
type Snapshot struct {
	Devices, LoggedIn, Connected, Commands, Acks, Confirms, Viewing, Errors, Reconnects int64
}

// Line formats s as a progress line.
func (s Snapshot) Line() string {
	return fmt.Sprintf("devices %d/%d connected (%d logged in) · commands %d · acks %d · confirms %d · viewing %d · reconnects %d · errors %d",
		s.Connected, s.Devices, s.LoggedIn, s.Commands, s.Acks, s.Confirms, s.Viewing, s.Reconnects, s.Errors)
}

// Result sums a finished simulation. Received holds, per device that got
// commands, the wall-clock time its StopAfterCommands-th command arrived.
type Result struct {
	Snapshot
	FirstReceived, LastReceived time.Time
	Received                    int // devices that got StopAfterCommands commands
	// FirstByCommand holds, with StopAfterCommands, when the first device
	// got its first, second, ... command: the first device of each message
	// of a broadcast of that many.
	FirstByCommand []time.Time `json:",omitempty"`
	// Provider and Tariff are those the devices used (CreateCatalog's).
	Provider, Tariff int64
	// LastError is the last error counted in Errors, with the server's
	// answer when there was one.
	LastError string `json:",omitempty"`
}

// DefaultLoginsInFlight is Options.LoginsInFlight's default: the new logins
// a node checks at once from one address by default.
const DefaultLoginsInFlight = throttle.DefaultAddressLimit

// Sim is a running simulation.
type Sim struct {
	opts   Options
	http   *http.Client
	dialer *net.Dialer
	c      Counters
	// logins holds a place per login waited for (nil: no bound).
	logins chan struct{}
	// poller reads the websockets during Run, with ReaderEpoll.
	poller *poller

	// firstOf holds the earliest arrival of each device's k-th command
	// (Unix nanoseconds, 0: none yet), for k up to StopAfterCommands.
	firstOf []atomic.Int64

	mu        sync.Mutex
	first     time.Time
	last      time.Time
	received  int
	lastError string
	done      chan struct{} // closed when every device has its commands
	doneOnce  sync.Once
	firstDone chan struct{} // closed when the first device has them
	firstOnce sync.Once
}

// New checks opts and prepares a simulation.
func New(opts Options) (*Sim, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if opts.SourceIP != "" {
		ip := net.ParseIP(opts.SourceIP)
		if ip == nil {
			return nil, fmt.Errorf("simulate: source ip %q is not an IP address", opts.SourceIP)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	s := &Sim{
		opts:      opts,
		http:      &http.Client{Transport: tr, Timeout: 30 * time.Second},
		dialer:    d,
		done:      make(chan struct{}),
		firstDone: make(chan struct{}),
		firstOf:   make([]atomic.Int64, max(opts.StopAfterCommands, 0)),
	}
	if opts.LoginsInFlight > 0 {
		s.logins = make(chan struct{}, opts.LoginsInFlight)
	}
	return s, nil
}

// Snapshot returns the counters now.
func (s *Sim) Snapshot() Snapshot {
	return Snapshot{
		Devices: int64(s.opts.Devices), LoggedIn: s.c.LoggedIn.Load(), Connected: s.c.Connected.Load(),
		Commands: s.c.Commands.Load(), Acks: s.c.Acks.Load(), Confirms: s.c.Confirms.Load(),
		Viewing: s.c.Viewing.Load(), Errors: s.c.Errors.Load(), Reconnects: s.c.Reconnects.Load(),
	}
}

// Run runs the devices until ctx is done (then it returns ctx's error) or,
// with StopAfterCommands, until every device received its commands. It
// returns the totals.
func (s *Sim) Run(ctx context.Context) (Result, error) {
	if s.opts.CreateCatalog {
		if err := s.CreateCatalog(ctx); err != nil {
			return Result{}, err
		}
	}
	if s.opts.AdminUser != "" {
		if err := s.Setup(ctx); err != nil {
			return Result{}, err
		}
	}
	if s.opts.Reader == ReaderEpoll {
		p, err := newPoller()
		if err != nil {
			return Result{}, err
		}
		s.poller = p
		defer p.stop()
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(s.opts.ConnectRate))
	defer tick.Stop()
	for i := range s.opts.Devices {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.device(ctx, s.opts.First+i)
		}()
	}
	if s.opts.StopAfterCommands > 0 && !s.opts.Hold {
		select {
		case <-s.done:
		case <-ctx.Done():
		}
		cancel()
	}
	wg.Wait()
	return s.Result(), parent.Err()
}

// Done is closed once every device received StopAfterCommands commands.
func (s *Sim) Done() <-chan struct{} { return s.done }

// FirstDone is closed once the first device received StopAfterCommands
// commands.
func (s *Sim) FirstDone() <-chan struct{} { return s.firstDone }

// Result returns the totals so far.
func (s *Sim) Result() Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Result{Snapshot: s.Snapshot(), FirstReceived: s.first, LastReceived: s.last, Received: s.received,
		Provider: s.opts.Provider, Tariff: s.opts.Tariff, LastError: s.lastError}
	for i := range s.firstOf {
		var at time.Time // none yet
		if ns := s.firstOf[i].Load(); ns != 0 {
			at = time.Unix(0, ns)
		}
		r.FirstByCommand = append(r.FirstByCommand, at)
	}
	return r
}

// fail counts an error and keeps its text.
func (s *Sim) fail(err error) {
	s.c.Errors.Add(1)
	s.mu.Lock()
	s.lastError = err.Error()
	s.mu.Unlock()
}

// ServerError is an answer of the node other than the one expected: its
// status and the cause its error body gives (or the body itself), and the
// wait its Retry-After header asks for (0 without one).
type ServerError struct {
	Status     int
	Cause      string
	RetryAfter time.Duration
}

func (e *ServerError) Error() string {
	if e.Cause == "" {
		return fmt.Sprintf("status %d", e.Status)
	}
	return fmt.Sprintf("status %d: %s", e.Status, e.Cause)
}

// serverError reads the cause out of an error body.
func serverError(status int, body []byte) *ServerError {
	var e struct {
		Cause string `json:"cause"`
	}
	cause := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Cause != "" {
		cause = e.Cause
	}
	return &ServerError{Status: status, Cause: cause}
}

// gotCommand records that a device received its k-th command (from 1) at
// at: the earliest of each k is kept, without a lock (a reader goroutine
// calls it for every message).
func (s *Sim) gotCommand(k int, at time.Time) {
	if k < 1 || k > len(s.firstOf) {
		return
	}
	slot, ns := &s.firstOf[k-1], at.UnixNano()
	for {
		cur := slot.Load()
		if cur != 0 && cur <= ns || slot.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// gotAll records that a device received its StopAfterCommands commands.
func (s *Sim) gotAll(at time.Time) {
	s.mu.Lock()
	if s.first.IsZero() || at.Before(s.first) {
		s.first = at
	}
	if at.After(s.last) {
		s.last = at
	}
	s.received++
	all := s.received >= s.opts.Devices
	s.mu.Unlock()
	s.firstOnce.Do(func() { close(s.firstDone) })
	if all {
		s.doneOnce.Do(func() { close(s.done) })
	}
}

// login returns the account login of device i.
func (s *Sim) login(i int) string { return fmt.Sprintf(s.opts.LoginFormat, i/s.opts.DevicesPerAccount) }

// passwordMD5 is what devices send.
func (s *Sim) passwordMD5() string {
	sum := md5.Sum([]byte(s.opts.Password))
	return hex.EncodeToString(sum[:])
}

// classes are assigned round robin, so statistics see every class.
var classes = []string{"stb", "tv", "phone", "tablet", "web"}

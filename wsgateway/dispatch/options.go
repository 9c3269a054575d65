package dispatch

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"tvsm/domain"
	"tvsm/eventstore"
	"tvsm/internal/platform/schedule"
	"tvsm/wsgateway"
)

// Defaults of Options.
const (
	DefaultGrace             = time.Minute
	DefaultLateWindow        = time.Minute
	DefaultLateLimit         = time.Hour
	DefaultSnapshotSpec      = "@every 1m"
	DefaultClaimRetries      = 8
	DefaultClaimChunk        = 1000
	DefaultSendClaimMax      = 250
	DefaultClaimAppendMax    = 50000
	DefaultRetryDelay        = time.Second
	DefaultAppendTimeout     = 10 * time.Second
	DefaultReceiptFlush      = 5 * time.Millisecond
	DefaultReceiptBatch      = 1000
	DefaultReceiptQueue      = 64 << 10
	DefaultReceiptWindow     = 24 * time.Hour
	DefaultReceiptsPerDevice = 64
	DefaultEventWorkers      = 32
	DefaultEventQueue        = 32 << 10
)

// snapshotFile is the name of the snapshot in Options.DataDir.
const snapshotFile = "dispatch.snapshot"

// Options configure a Dispatcher. Store, Registry and DataDir are required;
// zero fields take the defaults.
type Options struct {
	Store eventstore.Store
	// Registry decodes command events and encodes the dispatcher's own; it
	// must have the domain events registered.
	Registry *domain.Registry
	// Hub configures the hub New creates. Hooks set here are called after
	// the dispatcher's own; a nil Clock becomes Clock.Now, so connection
	// times and delivery rules read the same clock.
	Hub wsgateway.Options
	// Clock drives delivery rules and timers (default schedule.System).
	Clock schedule.Clock
	// Node names this node in claims and connection events (default the
	// host name); printable ASCII without spaces.
	Node   string
	Logger *slog.Logger
	// DataDir holds the snapshot of live commands (DataDir/dispatch.snapshot).
	DataDir string
	// Grace is how late after its send time a node that was running then
	// may still run the send-time round of a command without ttl (default
	// one minute); later the command is expired (domain.ExpiredTooLate).
	Grace time.Duration
	// LateWindow and LateLimit rule commands without ttl whose send time
	// passed while no node ran (none recorded their round): the first node
	// to start within LateLimit after the send time (default one hour)
	// delivers them to the target devices connected, and connecting within
	// LateWindow of its start (default one minute), then expires them
	// (domain.ExpiredMissedSendTime); later, they are expired undelivered
	// (domain.ExpiredTooLate).
	LateWindow, LateLimit time.Duration
	// SnapshotSpec is the cron spec (UTC) of snapshots (default every
	// minute); a snapshot is also written on Close.
	SnapshotSpec string
	// ClaimRetries bounds the claim attempts of one delivery round lost to
	// other nodes' appends (default 8), and separately those lost to
	// appends not readable yet; then the round is retried after
	// RetryDelay. With n nodes racing for one send, a node loses at most
	// n-1 times per round.
	ClaimRetries int
	// ClaimChunk is the most devices one CommandsSent event lists (default
	// 1000); a round's larger sets become several events of one append.
	ClaimChunk int
	// ClaimAppendMax is the most devices one claim append lists (default
	// 50,000, about 400 KB of JSON, well below EventStoreDB's default limit
	// of 1 MiB for one append); a larger round is claimed and written a
	// part at a time.
	ClaimAppendMax int
	// SendClaimMax is the most devices a claim made in a send's own append
	// lists (default 250, about 2 KB of JSON); a larger round claims the
	// first SendClaimMax devices it meets with the send and the others in
	// an append of its own once those are written to (see ClaimWithSend).
	// The first devices wait for the send's append, which grows with every
	// device listed; 250 is about what a node writes (some 100 devices a
	// millisecond on 2 cores) while the rest's round and append are made.
	SendClaimMax int
	// RetryDelay is how long a round or an expiry that failed (store
	// unavailable, too many conflicts) waits before it is tried again.
	RetryDelay time.Duration
	// AppendTimeout bounds every append and read (default 10 s).
	AppendTimeout time.Duration
	// ReceiptFlush and ReceiptBatch bound a batch of receipts: it is
	// appended after ReceiptFlush or at ReceiptBatch entries, whichever
	// comes first (defaults 5 ms, 1000).
	ReceiptFlush time.Duration
	ReceiptBatch int
	// ReceiptQueue is how many receipts may wait for the batcher; more are
	// dropped and counted (default 65536).
	ReceiptQueue int
	// ReceiptWindow is how long a delivery may wait for its ack or confirm
	// (default 24 h); ReceiptsPerDevice bounds the deliveries remembered per
	// device (default 64, oldest forgotten first).
	ReceiptWindow     time.Duration
	ReceiptsPerDevice int
	// EventWorkers append connection events concurrently (default 32);
	// EventQueue is how many may wait (default 32768), more are dropped and
	// counted.
	EventWorkers int
	EventQueue   int
}

// withDefaults checks o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	if o.Store == nil {
		errs = append(errs, errors.New("Store is required"))
	}
	if o.Registry == nil {
		errs = append(errs, errors.New("Registry is required"))
	}
	if o.DataDir == "" {
		errs = append(errs, errors.New("DataDir is required"))
	}
	if o.Node == "" {
		o.Node, _ = os.Hostname()
	}
	if err := domain.ValidateRequestID(requestPrefix + o.Node); err != nil || o.Node == "" {
		errs = append(errs, fmt.Errorf("Node %q: want printable ASCII without spaces", o.Node))
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("dispatch: %w", err)
	}
	if o.Clock == nil {
		o.Clock = schedule.System
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Hub.Clock == nil {
		o.Hub.Clock = o.Clock.Now
	}
	if o.SnapshotSpec == "" {
		o.SnapshotSpec = DefaultSnapshotSpec
	}
	setDefault(&o.Grace, DefaultGrace)
	setDefault(&o.LateWindow, DefaultLateWindow)
	setDefault(&o.LateLimit, DefaultLateLimit)
	setDefault(&o.ClaimRetries, DefaultClaimRetries)
	setDefault(&o.ClaimChunk, DefaultClaimChunk)
	setDefault(&o.SendClaimMax, DefaultSendClaimMax)
	setDefault(&o.ClaimAppendMax, DefaultClaimAppendMax)
	setDefault(&o.RetryDelay, DefaultRetryDelay)
	setDefault(&o.AppendTimeout, DefaultAppendTimeout)
	setDefault(&o.ReceiptFlush, DefaultReceiptFlush)
	setDefault(&o.ReceiptBatch, DefaultReceiptBatch)
	setDefault(&o.ReceiptQueue, DefaultReceiptQueue)
	setDefault(&o.ReceiptWindow, DefaultReceiptWindow)
	setDefault(&o.ReceiptsPerDevice, DefaultReceiptsPerDevice)
	setDefault(&o.EventWorkers, DefaultEventWorkers)
	setDefault(&o.EventQueue, DefaultEventQueue)
	return o, nil
}

// setDefault replaces a zero or negative *v with def.
func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

package billing

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"tvsm/internal/platform/supervise"
)

// Call is one proxied call as the journal records it.
type Call struct {
	At                        time.Time // when the call started
	Device, Account, Provider int64
	Route                     string // Route.Name
	Method                    string
	Path                      string // billing interface path, without the base URL's path
	Status                    int    // what the device got
	Latency                   time.Duration
	Failure                   string // Failure(err) when the proxy answered instead of billing
	RequestID                 string
}

// Sink stores journal entries. Save gets calls of one account, oldest
// first, and either stores all of them or fails.
type Sink interface {
	Save(ctx context.Context, account int64, calls []Call) error
}

// JournalOptions configure a Journal; zero fields take the defaults.
type JournalOptions struct {
	// Queue is how many calls may wait to be stored (default 4096); calls
	// recorded while it is full are dropped and counted.
	Queue int
	// Batch is the most calls stored in one go (default 256).
	Batch int
	// StoreTimeout bounds one Sink.Save (default 5s).
	StoreTimeout time.Duration
	Logger       *slog.Logger
}

// JournalStats count what became of recorded calls.
type JournalStats struct {
	Stored  uint64 // stored by the sink
	Dropped uint64 // not queued: the queue was full or the journal closed
	Failed  uint64 // queued, but the sink failed to store them
}

// Journal records proxied calls asynchronously: Record never blocks and
// never fails the call it records; one goroutine hands queued calls to the
// sink in batches, grouped by account. Close stops it.
type Journal struct {
	sink Sink
	opts JournalOptions
	log  *slog.Logger

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
	queue  chan Call
	done   chan struct{}
	abort  context.CancelFunc
	ctx    context.Context

	stored, dropped, failed atomic.Uint64
}

// NewJournal starts a journal writing to sink.
func NewJournal(sink Sink, opts JournalOptions) *Journal {
	if opts.Queue <= 0 {
		opts.Queue = 4096
	}
	if opts.Batch <= 0 {
		opts.Batch = 256
	}
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, abort := context.WithCancel(context.Background())
	j := &Journal{sink: sink, opts: opts, log: opts.Logger, queue: make(chan Call, opts.Queue),
		done: make(chan struct{}), ctx: ctx, abort: abort}
	go j.run()
	return j
}

// Record queues c for storing; false when it was dropped (queue full or
// journal closed).
func (j *Journal) Record(c Call) bool {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if !j.closed {
		select {
		case j.queue <- c:
			return true
		default:
		}
	}
	j.dropped.Add(1)
	return false
}

// Stats returns the journal's counters.
func (j *Journal) Stats() JournalStats {
	return JournalStats{Stored: j.stored.Load(), Dropped: j.dropped.Load(), Failed: j.failed.Load()}
}

// Close stops accepting calls and stores the queued ones, until ctx ends;
// then it abandons the rest (counted as failed) and returns ctx's error.
// It is safe to call more than once.
func (j *Journal) Close(ctx context.Context) error {
	j.mu.Lock()
	if !j.closed {
		j.closed = true
		close(j.queue)
	}
	j.mu.Unlock()
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		j.abort()
		<-j.done
		return ctx.Err()
	}
}

func (j *Journal) run() {
	defer close(j.done)
	defer j.abort()
	batch := make([]Call, 0, j.opts.Batch)
	for c := range j.queue {
		batch = append(batch[:0], c)
	fill:
		for len(batch) < j.opts.Batch {
			select {
			case c, ok := <-j.queue:
				if !ok {
					break fill
				}
				batch = append(batch, c)
			default:
				break fill
			}
		}
		j.storeBatch(batch)
	}
}

// storeBatch hands the batch to the sink one account at a time, keeping
// each account's calls in order.
func (j *Journal) storeBatch(batch []Call) {
	var order []int64
	byAccount := make(map[int64][]Call)
	for _, c := range batch {
		if _, seen := byAccount[c.Account]; !seen {
			order = append(order, c.Account)
		}
		byAccount[c.Account] = append(byAccount[c.Account], c)
	}
	for _, account := range order {
		calls := byAccount[account]
		if j.ctx.Err() != nil {
			j.failed.Add(uint64(len(calls)))
			continue
		}
		err := j.save(account, calls)
		if err != nil {
			j.failed.Add(uint64(len(calls)))
			j.log.Warn("billing journal: calls not stored", "account", account, "calls", len(calls), "error", err)
			continue
		}
		j.stored.Add(uint64(len(calls)))
	}
}

// save stores one account's calls. A panic of the sink is recovered,
// logged with its stack and counted (supervise), and fails these calls
// only: the journal goes on with the next ones.
func (j *Journal) save(account int64, calls []Call) (err error) {
	defer supervise.Recover(j.log, "billing-journal", func(p *supervise.Panic) { err = p })
	ctx, cancel := context.WithTimeout(j.ctx, j.opts.StoreTimeout)
	defer cancel()
	return j.sink.Save(ctx, account, calls)
}

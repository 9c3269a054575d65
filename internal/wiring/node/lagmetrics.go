package node

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tvsm/eventstore"
)

// lagCountCap bounds the events read to count a lag on a store whose
// positions are not sequence numbers: beyond it the figure is "at least".
const lagCountCap = 10_000

// lagCacheFor is how long one measurement of the lags serves scrapes:
// several Prometheus servers, or a dashboard's refresh, then cost one.
const lagCacheFor = time.Second

var (
	lagEventsDesc = prometheus.NewDesc("tvsm_projection_lag_events",
		"Events of the log after the position a projection has applied, up to the log's head, when one of them is "+
			"one it applies, else 0 (on the embedded store all such events, those it skips included; on EventStoreDB "+
			"those it applies, counted up to 10000).", []string{"projection"}, nil)
	lagSecondsDesc = prometheus.NewDesc("tvsm_projection_lag_seconds",
		"Age of the oldest event a projection applies and has not applied yet; 0 when there is none.", []string{"projection"}, nil)
)

// lagCollector measures, when scraped, how far each projection is behind
// the head of the log.
type lagCollector struct {
	store   eventstore.Store
	head    eventstore.HeadReader
	applied []appliedPosition
	clock   func() time.Time

	mu       sync.Mutex
	measured time.Time
	samples  []lagSample
}

// appliedPosition is where a projection, by name, has applied the log,
// and which events it applies.
type appliedPosition struct {
	name     string
	position func() eventstore.Position
	filter   eventstore.Filter
}

type lagSample struct {
	name    string
	events  uint64
	seconds float64
}

// newLagCollector returns nil when store cannot report its head.
func newLagCollector(store eventstore.Store, applied []appliedPosition, clock func() time.Time) *lagCollector {
	head, ok := store.(eventstore.HeadReader)
	if !ok {
		return nil
	}
	return &lagCollector{store: store, head: head, applied: applied, clock: clock}
}

// Describe implements prometheus.Collector.
func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagEventsDesc
	ch <- lagSecondsDesc
}

// Collect implements prometheus.Collector.
func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.measure() {
		ch <- prometheus.MustNewConstMetric(lagEventsDesc, prometheus.GaugeValue, float64(s.events), s.name)
		ch <- prometheus.MustNewConstMetric(lagSecondsDesc, prometheus.GaugeValue, s.seconds, s.name)
	}
}

// measure returns the lags, measured at most lagCacheFor ago. A store that
// cannot be reached yields no sample rather than a false zero.
func (c *lagCollector) measure() []lagSample {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	if c.samples != nil && now.Sub(c.measured) < lagCacheFor {
		return c.samples
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	head, err := c.head.Head(ctx)
	if err != nil {
		return nil
	}
	samples := make([]lagSample, 0, len(c.applied))
	for _, p := range c.applied {
		s := lagSample{name: p.name}
		applied := p.position()
		if head.After(applied) {
			events, oldest, err := c.behind(ctx, applied, head, p.filter)
			if err != nil {
				return nil
			}
			s.events = events
			if !oldest.IsZero() {
				s.seconds = max(0, now.Sub(oldest).Seconds())
			}
		}
		samples = append(samples, s)
	}
	c.samples, c.measured = samples, now
	return samples
}

// behind counts the events after applied up to head that pass filter and
// returns when the first of them was recorded; on a store with sequential
// positions, once there is one, the count is of all events up to head.
// Events a projection skips are not a lag: a filtered subscription's
// position may stay behind them for a while (EventStoreDB sends
// checkpoints only every so many events).
func (c *lagCollector) behind(ctx context.Context, applied, head eventstore.Position, filter eventstore.Filter) (events uint64, oldest time.Time, err error) {
	sub, err := c.store.SubscribeAll(ctx, applied, filter)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer sub.Close()
	_, sequential := c.store.(eventstore.SequentialPositions)
	for {
		b, err := sub.Recv(ctx)
		if err != nil {
			return 0, time.Time{}, err
		}
		for _, e := range b.Events {
			if e.Position.After(head) || events == lagCountCap {
				return events, oldest, nil
			}
			if oldest.IsZero() {
				oldest = e.Created
				if sequential {
					return head.Commit - applied.Commit, oldest, nil
				}
			}
			events++
		}
		if !head.After(b.Checkpoint) || b.CaughtUp {
			return events, oldest, nil
		}
	}
}

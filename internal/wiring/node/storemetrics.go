package node

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tvsm/eventstore"
	"tvsm/internal/platform/metrics"
)

// appendMetrics are the figures of every append the node makes: all of its
// writes (commands, delivery claims, receipts, billing journal, viewing)
// reach the store through the store the node was started on, which
// meteredStore wraps.
type appendMetrics struct {
	seconds *prometheus.HistogramVec
	events  prometheus.Counter
}

func newAppendMetrics(reg prometheus.Registerer) appendMetrics {
	return appendMetrics{
		seconds: metrics.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tvsm_eventstore_append_seconds",
			Help: "Time of an append to the event store, durable (fsynced) when it succeeds, by result: ok, conflict (the stream moved on), error.",
			// From a fast local fsync (100 µs) to a store far away (3 s).
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"result"})),
		events: metrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tvsm_eventstore_appended_events_total", Help: "Events this node appended to the event store.",
		})),
	}
}

// observe records one append of n events that took since started.
func (m appendMetrics) observe(started time.Time, n int, err error) {
	result := "ok"
	switch {
	case errors.Is(err, eventstore.ErrWrongExpectedRevision):
		result = "conflict"
	case err != nil:
		result = "error"
	default:
		m.events.Add(float64(n))
	}
	m.seconds.WithLabelValues(result).Observe(time.Since(started).Seconds())
}

// headStore is a store that reports its head, as every backend does: the
// projection watchdog and the lag metrics need it.
type headStore interface {
	eventstore.Store
	eventstore.HeadReader
}

// meteredStore times the appends of the store it wraps. It keeps the
// optional abilities of that store the node's parts look for: its head,
// and multi-stream appends (meteredMultiStore).
type meteredStore struct {
	headStore
	m appendMetrics
}

func (s meteredStore) Append(ctx context.Context, stream string, expect eventstore.Revision, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	started := time.Now()
	r, err := s.headStore.Append(ctx, stream, expect, events...)
	s.m.observe(started, len(events), err)
	return r, err
}

type meteredMultiStore struct {
	meteredStore
	multi eventstore.MultiAppender
}

func (s meteredMultiStore) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	started := time.Now()
	r, err := s.multi.AppendMulti(ctx, parts...)
	n := 0
	for _, p := range parts {
		n += len(p.Events)
	}
	s.m.observe(started, n, err)
	return r, err
}

// metered wraps store so that its appends are timed on reg. A store that
// cannot report its head (none of the backends) is left unmetered rather
// than given a head that fails.
func metered(store eventstore.Store, reg prometheus.Registerer) eventstore.Store {
	hs, ok := store.(headStore)
	if !ok {
		return store
	}
	s := meteredStore{headStore: hs, m: newAppendMetrics(reg)}
	if multi, ok := store.(eventstore.MultiAppender); ok {
		return meteredMultiStore{s, multi}
	}
	return s
}

// registerGroupCommitMetrics exports the group commits of a store that
// counts them (the embedded one; the in-memory one counts its commits):
// appends per group is the one rate divided by the other.
func registerGroupCommitMetrics(reg prometheus.Registerer, store eventstore.Store) {
	if s, ok := store.(interface {
		Stats() (groups, appends uint64)
	}); ok {
		metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tvsm_eventstore_groups_total", Help: "Group commits: batches of appends written together with one fsync.",
		}, func() float64 { g, _ := s.Stats(); return float64(g) }))
		metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tvsm_eventstore_grouped_appends_total", Help: "Appends written in group commits (divided by tvsm_eventstore_groups_total: the group size).",
		}, func() float64 { _, a := s.Stats(); return float64(a) }))
	}
	if s, ok := store.(interface{ Fsyncs() uint64 }); ok {
		metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tvsm_eventstore_fsyncs_total", Help: "Fsyncs of the embedded event store's files (its write-ahead log, tables and manifest).",
		}, func() float64 { return float64(s.Fsyncs()) }))
	}
}

package node

import (
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tvsm/eventstore"
	"tvsm/internal/platform/metrics"
	"tvsm/internal/platform/throttle"
	"tvsm/projections"
	"tvsm/projections/readmodel"
	"tvsm/projections/stats"
)

// registerProjectionMetrics exports how far each projection has applied
// the log, and how far behind its head that is: a projection behind the
// read model lags (statistics while ClickHouse is away, for one).
func registerProjectionMetrics(reg prometheus.Registerer, store eventstore.Store, runners map[string]*projections.Runner, clock func() time.Time) {
	var applied []appliedPosition
	for _, name := range slices.Sorted(maps.Keys(runners)) {
		position := runners[name].Progress().Position
		applied = append(applied, appliedPosition{name, position, runners[name].Filter()})
		metrics.Register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tvsm_projection_position", ConstLabels: prometheus.Labels{"projection": name},
			Help: "Commit position of the log up to which a projection has applied events.",
		}, func() float64 { return float64(position().Commit) }))
	}
	if c := newLagCollector(store, applied, clock); c != nil {
		metrics.Register(reg, c)
	}
}

// readModelKinds are the entities tvsm_readmodel_entities counts, by its
// kind label.
var readModelKinds = []struct {
	kind  string
	count func(readmodel.Stats) int
}{
	{"account", func(s readmodel.Stats) int { return s.Accounts }},
	{"subscription", func(s readmodel.Stats) int { return s.Subscriptions }},
	{"device", func(s readmodel.Stats) int { return s.Devices }},
	{"provider", func(s readmodel.Stats) int { return s.Providers }},
	{"tariff", func(s readmodel.Stats) int { return s.Tariffs }},
	{"channel", func(s readmodel.Stats) int { return s.Channels }},
	{"category", func(s readmodel.Stats) int { return s.Categories }},
	{"tariff_tag", func(s readmodel.Stats) int { return s.TariffTags }},
	{"region", func(s readmodel.Stats) int { return s.Regions }},
	{"device_type", func(s readmodel.Stats) int { return s.DeviceTypes }},
	{"admin", func(s readmodel.Stats) int { return s.Admins }},
}

var readModelEntitiesDesc = prometheus.NewDesc("tvsm_readmodel_entities",
	"Entities the read model holds, by kind (accounts, subscriptions and devices live; providers with deleted ones).", []string{"kind"}, nil)

// readModelCollector reads the model's counts once per scrape.
type readModelCollector struct{ model *readmodel.Model }

// Describe implements prometheus.Collector.
func (readModelCollector) Describe(ch chan<- *prometheus.Desc) { ch <- readModelEntitiesDesc }

// Collect implements prometheus.Collector.
func (c readModelCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.model.Stats()
	for _, k := range readModelKinds {
		ch <- prometheus.MustNewConstMetric(readModelEntitiesDesc, prometheus.GaugeValue, float64(k.count(s)), k.kind)
	}
}

func registerReadModelMetrics(reg prometheus.Registerer, model *readmodel.Model) {
	metrics.Register(reg, readModelCollector{model})
}

// registerLoginRefusals exports the login attempts each guard refused, by
// API and reason: failures (too many failed recently) or busy (too many
// checks of the same login or address in flight).
func registerLoginRefusals(reg prometheus.Registerer, guards map[string]*throttle.Guard) {
	for api, g := range guards {
		for _, reason := range []string{"failures", "busy"} {
			metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "tvsm_login_refusals_total", ConstLabels: prometheus.Labels{"api": api, "reason": reason},
				Help: "Login attempts refused by the throttle (answered 429): after too many failures, or while too many checks of the same login or address ran.",
			}, func() float64 {
				failed, busy := g.Refusals()
				if reason == "busy" {
					return float64(busy)
				}
				return float64(failed)
			}))
		}
	}
}

// registerStatsMetrics exports the rows the statistics projector wrote,
// by table, and the end of the last closed day.
func registerStatsMetrics(reg prometheus.Registerer, p *stats.Projector, loc *time.Location) {
	if loc == nil {
		loc = time.UTC
	}
	for i, table := range stats.TableNames {
		metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tvsm_stats_rows_written_total", ConstLabels: prometheus.Labels{"table": table},
			Help: "Rows the statistics projector wrote to its fact store, by table (a closed day's rows rewritten by late viewing count again).",
		}, func() float64 { return float64(p.RowsWritten()[i]) }))
	}
	metrics.Register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tvsm_stats_closed_through_timestamp_seconds",
		Help: "End (the next midnight, Unix time) of the last day whose statistics are complete and served; 0 before the first day closes.",
	}, func() float64 {
		d, ok := p.ClosedThrough()
		if !ok {
			return 0
		}
		return float64((d + 1).Time(loc).Unix())
	}))
}

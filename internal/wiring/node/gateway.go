package node

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tvsm/httpapi"
	"tvsm/internal/adapters/billing"
	"tvsm/internal/platform/metrics"
	"tvsm/wsgateway/dispatch"
)

// BillingOptions configure the billing proxy of the Device API.
type BillingOptions struct {
	// Enabled is the billing feature flag; when false the billing routes
	// answer 404 (so do they for providers without resolve billing).
	Enabled bool
	// HeaderPrefix starts the account and provider headers (default
	// billing.DefaultHeaderPrefix, "X-TMS-").
	HeaderPrefix string
	// Timeout bounds one call to billing (default billing's 10 s).
	Timeout time.Duration
	// AllowedNetworks are networks billing may be reached in although the
	// address policy refuses them by default (loopback, private, ...):
	// billing.Policy.Allowed.
	AllowedNetworks []netip.Prefix
}

// policy is the address policy of billing calls and billing urls.
func (o BillingOptions) policy() billing.Policy { return billing.Policy{Allowed: o.AllowedNetworks} }

// startBilling builds the billing proxy of the Device API: the client and
// the journal of calls, which the cleanup closes (storing what it still
// holds). It starts before the gateway so that the cleanup closes the
// gateway first.
func (n *Node) startBilling(_ context.Context, opts Options) error {
	client, err := billing.NewClient(billing.Options{
		HeaderPrefix: opts.Billing.HeaderPrefix, Timeout: opts.Billing.Timeout, Addresses: opts.Billing.policy(),
	})
	if err != nil {
		return fmt.Errorf("billing: %w", err)
	}
	journal := billing.NewJournal(billing.StoreSink{Store: n.Store, Registry: n.Registry}, billing.JournalOptions{Logger: n.log})
	n.cleanup.push(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = journal.Close(ctx)
		client.Close()
	})
	n.journal = journal
	n.billing = &httpapi.BillingOptions{
		Enabled: opts.Billing.Enabled, Provider: n.Model.Provider, Client: client, Journal: journal, Clock: opts.Clock,
	}
	return nil
}

// startGateway builds the command dispatcher with its websocket hub and
// starts it following the log. The cleanup says goodbye to the devices and
// stops the dispatcher, which saves its pending commands.
func (n *Node) startGateway(ctx context.Context, opts Options) error {
	d, err := dispatch.New(dispatch.Options{
		Store: n.Store, Registry: n.Registry, Hub: opts.Sockets, Clock: opts.Timers,
		Node: opts.NodeName, Logger: n.log, DataDir: opts.DataDir,
	})
	if err != nil {
		return err
	}
	n.Dispatcher, n.Hub = d, d.Hub()
	stop := goUntilStopped(ctx, func(ctx context.Context) { _ = d.Run(ctx) })
	n.cleanup.push(func() {
		// Close ends Run; stop then waits for the goroutine.
		if err := d.Close(); err != nil {
			n.log.Warn("dispatcher snapshot on close failed", "error", err)
		}
		stop()
	})
	return nil
}

// registerGatewayMetrics exports the gateway's figures, read when scraped.
func registerGatewayMetrics(reg prometheus.Registerer, d *dispatch.Dispatcher, j *billing.Journal) {
	metrics.Register(reg, dispatchCollector{stats: d.Stats})
	metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tvsm_ws_refused_total", Help: "Websocket upgrades refused because the client's address held max_websockets_per_address.",
	}, func() float64 { return float64(d.Hub().Stats().AddressFull) }))
	metrics.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tvsm_billing_journal_dropped_total", Help: "Proxied billing calls not journaled (queue full or store error).",
	}, func() float64 { st := j.Stats(); return float64(st.Dropped + st.Failed) }))
}

// dispatchCollector exports the dispatcher's figures, reading its Stats
// once per scrape rather than once per metric.
type dispatchCollector struct{ stats func() dispatch.Stats }

type dispatchMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(dispatch.Stats) uint64
}

func dispatchGauge(name, help string, value func(dispatch.Stats) uint64) dispatchMetric {
	return dispatchMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, value}
}

func dispatchCounter(name, help string, value func(dispatch.Stats) uint64) dispatchMetric {
	return dispatchMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, value}
}

var dispatchMetrics = []dispatchMetric{
	dispatchGauge("tvsm_ws_connections", "Devices connected to this node's websocket gateway.",
		func(s dispatch.Stats) uint64 { return uint64(s.Connections) }),
	dispatchGauge("tvsm_dispatch_live_commands", "Commands still deliverable (delayed or within their ttl).",
		func(s dispatch.Stats) uint64 { return uint64(s.LiveCommands) }),
	dispatchCounter("tvsm_dispatch_deliveries_total", "Command messages queued to device connections.",
		func(s dispatch.Stats) uint64 { return s.Deliveries }),
	dispatchCounter("tvsm_dispatch_claims_total", "Delivery claims appended on their own (after the log showed the send).",
		func(s dispatch.Stats) uint64 { return s.Claims }),
	dispatchCounter("tvsm_dispatch_send_claims_total", "Delivery claims made in the append of a send taken by this node.",
		func(s dispatch.Stats) uint64 { return s.SendClaims }),
	dispatchCounter("tvsm_dispatch_claim_conflicts_total", "Delivery claims that lost to another append and were retried.",
		func(s dispatch.Stats) uint64 { return s.ClaimConflicts }),
	dispatchCounter("tvsm_dispatch_claim_failures_total", "Delivery rounds given up after too many conflicts or store errors.",
		func(s dispatch.Stats) uint64 { return s.ClaimFailures }),
	dispatchCounter("tvsm_dispatch_acks_total", "Devices recorded as having acknowledged a command.",
		func(s dispatch.Stats) uint64 { return s.Acks }),
	dispatchCounter("tvsm_dispatch_confirms_total", "Devices recorded as having confirmed a confirm message.",
		func(s dispatch.Stats) uint64 { return s.Confirms }),
	dispatchCounter("tvsm_dispatch_receipts_dropped_total", "Acks and confirms lost to a full queue or the store.",
		func(s dispatch.Stats) uint64 { return s.ReceiptsDropped + s.ReceiptFailures }),
	dispatchCounter("tvsm_dispatch_connection_events_dropped_total", "Connect and disconnect events lost to a full queue or the store.",
		func(s dispatch.Stats) uint64 { return s.ConnectionEventsDropped + s.ConnectionEventFailures }),
}

// Describe implements prometheus.Collector.
func (dispatchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range dispatchMetrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c dispatchCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range dispatchMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(m.value(s)))
	}
}

package shipper

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/winobs/winobs/contract"
)

// pushStatuses are the answers counted from start in push_errors_total.
var pushStatuses = []string{"0", "301", "302", "307", "308", "400", "401", "403", "404", "405", "413", "429", "500", "502", "503", "504"}

// metrics are the shipper's own, registered on a private registry; /metrics
// adds the Go and process collectors, which the textfile must not carry (the
// exporter exports its own under the same names).
type metrics struct {
	reg          *prometheus.Registry
	runtime      *prometheus.Registry
	read         *prometheus.CounterVec
	sent         *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	bytesSent    prometheus.Counter
	pushDuration prometheus.Histogram
	pushErrors   *prometheus.CounterVec
	retries      prometheus.Counter
	cpTime       *prometheus.GaugeVec
	cpRecord     *prometheus.GaugeVec
	pending      *prometheus.GaugeVec
	lag          *prometheus.GaugeVec
	resubscribes *prometheus.CounterVec
	renderErrors *prometheus.CounterVec
	inFlight     prometheus.Gauge
	truncated    *prometheus.CounterVec
	restamped    *prometheus.CounterVec
	dumpReopens  *prometheus.CounterVec
	presumed     *prometheus.CounterVec
	lanes        *prometheus.GaugeVec
	stateIgnored prometheus.Counter
	sourceUp     *prometheus.GaugeVec
}

// newMetrics registers the shipper's metrics, with every known label value
// present at 0 for the given channels.
func newMetrics(channels []string) *metrics {
	ch := []string{contract.LabelChannel}
	m := &metrics{
		reg:       prometheus.NewRegistry(),
		read:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperEventsRead, Help: "Events read from the event log or a dump."}, ch),
		sent:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperEventsSent, Help: "Events Loki stored (a 204 answered a push holding them)."}, ch),
		dropped:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperEventsDropped, Help: "Events given up on, by reason."}, []string{contract.LabelChannel, contract.LabelReason}),
		bytesSent: prometheus.NewCounter(prometheus.CounterOpts{Name: contract.ShipperBytesSent, Help: "Bytes of log lines Loki accepted."}),
		pushDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: contract.ShipperPushDuration, Help: "Duration of push requests.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
		pushErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperPushErrors,
			Help: "Failed push attempts by HTTP status (0: network error), and the reason of a refusal the user must act on (" + contract.PushDisallowedMetadata + ")."},
			[]string{contract.LabelStatus, contract.LabelReason}),
		retries:      prometheus.NewCounter(prometheus.CounterOpts{Name: contract.ShipperPushRetries, Help: "Push attempts that will be retried."}),
		cpTime:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: contract.ShipperCheckpointTime, Help: "Unix time of the last saved checkpoint; its age is how far delivery lags."}, ch),
		cpRecord:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: contract.ShipperCheckpointID, Help: "EventRecordID of the last delivered event."}, ch),
		pending:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: contract.ShipperPending, Help: "Events read but not yet accepted by Loki."}, ch),
		lag:          prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: contract.ShipperRecordLag, Help: "Records between the newest in the channel and the last delivered (live channels)."}, ch),
		resubscribes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperResubscribes, Help: "Subscriptions re-created after an error."}, ch),
		renderErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperRenderErrors, Help: "Events whose XML or texts could not be rendered."}, ch),
		inFlight:     prometheus.NewGauge(prometheus.GaugeOpts{Name: contract.ShipperInFlightBytes, Help: "Bytes read and not yet delivered (bounded by maxInFlightBytes)."}),
		truncated:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperTruncated, Help: "Events sent with their line truncated to limits.maxLineBytes."}, ch),
		restamped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperRestamped,
			Help: "Events sent with a timestamp other than TimeCreated, by reason (too_old, too_far_behind, too_new)."}, []string{contract.LabelChannel, contract.LabelReason}),
		dumpReopens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperDumpReopens,
			Help: "Followed dumps read again from the start because another file took the path (rotated), it shrank (truncated) or its start changed (replaced)."}, []string{contract.LabelChannel, contract.LabelReason}),
		presumed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: contract.ShipperPresumed,
			Help: "Events counted sent that Loki refused as too far behind or too old while an earlier push (before a restart, or without an answer) may have stored them: not re-stamped, which would store them twice."}, ch),
		lanes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: contract.ShipperLanes,
			Help: "The most Loki streams one computer's events of the channel are split over (1 unless one keeps its stream at limits.streamBytesPerSecond)."}, ch),
		sourceUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: contract.ShipperSourceUp,
			Help: "1 while the channel's source reads; 0 while it waits for its followed dump to appear, or after it stopped on an error."}, ch),
		stateIgnored: prometheus.NewCounter(prometheus.CounterOpts{Name: contract.ShipperStateIgnored,
			Help: "State files (checkpoints, sent marks, lane plans) ignored because another account owns them: planted, so their channel started as with none."}),
	}
	m.reg.MustRegister(m.collectors()...)
	for _, c := range channels {
		for _, v := range []*prometheus.CounterVec{m.read, m.sent, m.truncated, m.renderErrors, m.presumed} {
			v.WithLabelValues(c)
		}
		m.pending.WithLabelValues(c)
		m.lanes.WithLabelValues(c).Set(1)
		m.sourceUp.WithLabelValues(c).Set(1)
		for _, r := range contract.ShipperDropReasons {
			m.dropped.WithLabelValues(c, r)
		}
		for _, r := range contract.ShipperRestampReasons {
			m.restamped.WithLabelValues(c, r)
		}
		for _, r := range reopenReasons {
			m.dumpReopens.WithLabelValues(c, r)
		}
	}
	for _, st := range pushStatuses {
		m.pushErrors.WithLabelValues(st, "")
	}
	m.pushErrors.WithLabelValues("400", contract.PushDisallowedMetadata)
	m.runtime = prometheus.NewRegistry()
	m.runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// collectors are the shipper's own metrics, as registered.
func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.read, m.sent, m.dropped, m.bytesSent, m.pushDuration, m.pushErrors, m.retries,
		m.cpTime, m.cpRecord, m.pending, m.lag, m.resubscribes, m.renderErrors, m.inFlight, m.truncated, m.restamped, m.dumpReopens, m.presumed, m.lanes, m.stateIgnored, m.sourceUp}
}

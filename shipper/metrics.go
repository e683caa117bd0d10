package shipper

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metric names, shared with the log pipeline dashboard.
const (
	MetricEventsRead     = "winobs_shipper_events_read_total"
	MetricEventsSent     = "winobs_shipper_events_sent_total"
	MetricEventsDropped  = "winobs_shipper_events_dropped_total"
	MetricBytesSent      = "winobs_shipper_bytes_sent_total"
	MetricPushDuration   = "winobs_shipper_push_duration_seconds"
	MetricPushErrors     = "winobs_shipper_push_errors_total"
	MetricPushRetries    = "winobs_shipper_push_retries_total"
	MetricCheckpointTime = "winobs_shipper_checkpoint_timestamp_seconds"
	MetricCheckpointID   = "winobs_shipper_checkpoint_record_id"
	MetricPending        = "winobs_shipper_pending_events"
	MetricRecordLag      = "winobs_shipper_record_lag"
	MetricResubscribes   = "winobs_shipper_resubscribes_total"
	MetricRenderErrors   = "winobs_shipper_render_errors_total"
	MetricInFlightBytes  = "winobs_shipper_in_flight_bytes"
	MetricTruncated      = "winobs_shipper_events_truncated_total"
	MetricRestamped      = "winobs_shipper_events_restamped_total"
)

// DropReasons are the reasons an event is given up on; each is counted from
// start (at 0) for every channel, so increase() sees the first drop.
var DropReasons = []string{"too_large", "too_old", "older_than_max_age", "malformed_xml", "corrupt_checkpoint",
	"rejected_400", "rejected_405", "rejected_422"}

// pushStatuses are the answers counted from start in push_errors_total.
var pushStatuses = []string{"0", "301", "302", "307", "308", "400", "401", "403", "404", "405", "413", "429", "500", "502", "503", "504"}

// restampReasons say why an entry got another timestamp than TimeCreated.
var restampReasons = []string{"too_old", "too_far_behind"}

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
}

// newMetrics registers the shipper's metrics, with every known label value
// present at 0 for the given channels.
func newMetrics(channels []string) *metrics {
	ch := []string{"channel"}
	m := &metrics{
		reg:       prometheus.NewRegistry(),
		read:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEventsRead, Help: "Events read from the event log or a dump."}, ch),
		sent:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEventsSent, Help: "Events Loki accepted."}, ch),
		dropped:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEventsDropped, Help: "Events given up on, by reason."}, []string{"channel", "reason"}),
		bytesSent: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricBytesSent, Help: "Bytes of log lines Loki accepted."}),
		pushDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricPushDuration, Help: "Duration of push requests.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
		pushErrors:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPushErrors, Help: "Failed push attempts by HTTP status (0: network error)."}, []string{"status"}),
		retries:      prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPushRetries, Help: "Push attempts that will be retried."}),
		cpTime:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricCheckpointTime, Help: "Unix time of the last saved checkpoint; its age is how far delivery lags."}, ch),
		cpRecord:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricCheckpointID, Help: "EventRecordID of the last delivered event."}, ch),
		pending:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricPending, Help: "Events read but not yet accepted by Loki."}, ch),
		lag:          prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricRecordLag, Help: "Records between the newest in the channel and the last delivered (live channels)."}, ch),
		resubscribes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricResubscribes, Help: "Subscriptions re-created after an error."}, ch),
		renderErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRenderErrors, Help: "Events whose XML or texts could not be rendered."}, ch),
		inFlight:     prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricInFlightBytes, Help: "Bytes read and not yet delivered (bounded by maxInFlightBytes)."}),
		truncated:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricTruncated, Help: "Events sent with their line truncated to limits.maxLineBytes."}, ch),
		restamped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRestamped,
			Help: "Events sent with a timestamp other than TimeCreated, by reason (too_old, too_far_behind)."}, []string{"channel", "reason"}),
	}
	m.reg.MustRegister(m.read, m.sent, m.dropped, m.bytesSent, m.pushDuration, m.pushErrors, m.retries,
		m.cpTime, m.cpRecord, m.pending, m.lag, m.resubscribes, m.renderErrors, m.inFlight, m.truncated, m.restamped)
	for _, c := range channels {
		for _, v := range []*prometheus.CounterVec{m.read, m.sent, m.truncated, m.renderErrors} {
			v.WithLabelValues(c)
		}
		m.pending.WithLabelValues(c)
		for _, r := range DropReasons {
			m.dropped.WithLabelValues(c, r)
		}
		for _, r := range restampReasons {
			m.restamped.WithLabelValues(c, r)
		}
	}
	for _, st := range pushStatuses {
		m.pushErrors.WithLabelValues(st)
	}
	m.runtime = prometheus.NewRegistry()
	m.runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

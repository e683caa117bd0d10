package dashboards

//lint:file-ignore SA1019 Classic dashboard JSON is what kube-prometheus-stack's Grafana sidecar provisions; the SDK marks it deprecated in favour of dashboardv2, which winobs renders only as an opt-in.

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/view"
)

// pipeline shows what reaches Loki from each node, and the eventlog-shipper's
// own view: read, sent, dropped by reason, checkpoint age, push errors.
func pipeline(v view.Dashboards, q queries) *dashboard.DashboardBuilder {
	return newDashboard(v, q, PipelineUID,
		"Windows log pipeline: what each node's agent delivers to Loki. A node that stops sending events is a broken agent, not a quiet node.",
		lokiVar, promVar).
		WithVariable(queryVar(nodeVar.Value, lokiDS, lokiValues(q.t.Events(), contract.LabelNode), true)).
		WithVariable(queryVar("instance", promDS, q.shipperInstanceValues(), true)).
		WithRow(dashboard.NewRowBuilder("Delivered to Loki")).
		WithPanel(graph("Events per node and channel", "Event log entries stored per interval.",
			unitEvents, []query{logQL(q.eventsPerNode(), "{{node}} {{channel}}")})).
		WithPanel(graph("Event bytes per node", "Bytes of event lines stored per interval.",
			units.BytesIEC, []query{logQL(q.eventBytesPerNode(), "{{node}}")})).
		WithPanel(graph("Pod log lines per node", "Pod log lines stored per interval.",
			unitLines, []query{logQL(q.podLinesPerNode(), "{{node}}")})).
		WithPanel(grid("Events in the last hour", "Nodes missing here sent no event in the last hour.",
			unitEvents, []query{logQLTable(q.nodesSilent())}, nil, "").Span(12)).
		WithRow(dashboard.NewRowBuilder("eventlog-shipper")).
		WithPanel(graph("Events read and sent", "Read from the event log, and accepted by Loki, per second.",
			units.OpsPerSecond, []query{
				prom(q.shipperRate(contract.ShipperEventsRead, "instance"), "{{instance}} read"),
				prom(q.shipperRate(contract.ShipperEventsSent, "instance"), "{{instance}} sent"),
			})).
		WithPanel(graph("Dropped by reason", "Events given up on, per second: malformed XML, render errors, too large, rejected by Loki.",
			units.OpsPerSecond, []query{prom(q.shipperRate(contract.ShipperEventsDropped, "instance, reason"), "{{instance}} {{reason}}")})).
		WithPanel(graph("Checkpoint age", "Time since each channel's checkpoint last moved: how far delivery lags when events keep coming.",
			units.Seconds, []query{prom(q.checkpointAge(), "{{instance}} {{channel}}")})).
		WithPanel(graph("Pending", "Events read and not yet accepted by Loki; they are read again after a restart.",
			unitEvents, []query{prom(q.shipperGauge(contract.ShipperPending), "{{instance}} {{channel}}")})).
		WithPanel(graph("Push errors by status", "Failed push attempts per second (0: network error; 260: ingestion blocked).",
			units.OpsPerSecond, []query{prom(q.shipperRate(contract.ShipperPushErrors, "instance, status"), "{{instance}} {{status}}")})).
		WithPanel(graph("Push latency", "99th percentile of push request duration.",
			units.Seconds, []query{prom(q.pushLatency(0.99), "{{instance}} p99")})).
		WithPanel(graph("Retries, resubscribes and render errors", "Per second.",
			units.OpsPerSecond, []query{
				prom(q.shipperRate(contract.ShipperPushRetries, "instance"), "{{instance}} push retries"),
				prom(q.shipperRate(contract.ShipperResubscribes, "instance, channel"), "{{instance}} {{channel}} resubscribes"),
				prom(q.shipperRate(contract.ShipperRenderErrors, "instance, channel"), "{{instance}} {{channel}} render errors"),
			})).
		WithPanel(graph("Bytes in flight", "Read and not yet delivered; reading pauses at maxInFlightBytes.",
			units.BytesIEC, []query{prom(q.shipperGauge(contract.ShipperInFlightBytes), "{{instance}}")}))
}

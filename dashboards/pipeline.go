package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/winobs/winobs/config"
)

// pipeline shows what reaches Loki from each node. The eventlog-shipper's
// own metrics (read, sent, dropped, checkpoint lag) join it with the shipper.
func pipeline(cfg *config.Config, q queries) *dashboard.DashboardBuilder {
	return newDashboard(cfg, q, PipelineUID,
		"Windows log pipeline: what each node's agent delivers to Loki. A node that stops sending events is a broken agent, not a quiet node.",
		lokiVar).
		WithVariable(queryVar("node", lokiDS, lokiValues(q.events, "node"), true)).
		WithRow(dashboard.NewRowBuilder("Delivered to Loki")).
		WithPanel(graph("Events per node and channel", "Event log entries stored per interval.",
			unitEvents, []query{logQL(q.eventsPerNode(), "{{node}} {{channel}}")})).
		WithPanel(graph("Event bytes per node", "Bytes of event lines stored per interval.",
			units.BytesIEC, []query{logQL(q.eventBytesPerNode(), "{{node}}")})).
		WithPanel(graph("Pod log lines per node", "Pod log lines stored per interval.",
			unitLines, []query{logQL(q.podLinesPerNode(), "{{node}}")})).
		WithPanel(grid("Events in the last hour", "Nodes missing here sent no event in the last hour.",
			unitEvents, []query{logQLTable(q.nodesSilent())}, nil, "").Span(12))
}

package dashboards

//lint:file-ignore SA1019 Classic dashboard JSON is what kube-prometheus-stack's Grafana sidecar provisions; the SDK marks it deprecated in favour of dashboardv2, which winobs renders only as an opt-in.

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

var running = map[string]string{"1": "running", "0": "not running"}

func nodes(v view.Dashboards, q queries) *dashboard.DashboardBuilder {
	a := v.Alerts
	commitSteps := []float64{a.NodeCommit.Warning, a.NodeCommit.Critical}
	freeSteps := []float64{a.VolumeFree.Critical, a.VolumeFree.Warning, a.VolumeFilling.FreeBelow}
	var cpuSteps, memorySteps []float64
	if a.CPUSaturation.Enabled {
		cpuSteps = append(cpuSteps, a.CPUSaturation.Ratio)
	}
	if a.MemorySaturation.Enabled {
		memorySteps = append(memorySteps, a.MemorySaturation.Ratio)
	}
	return newDashboard(v, q, NodesUID,
		"Windows nodes: commit charge (what fails allocations), CPU, memory, paging, disks, network, node services and exporter health.",
		promVar).
		// Several nodes may be picked, but there is no All: Grafana opens an
		// includeAll variable without a saved value on All, which would draw
		// the repeated row below once per node. It opens on the first node;
		// the fleet table shows every node and links into each.
		WithVariable(queryVar("instance", promDS, q.instanceValues(), false).Multi(true)).
		WithRow(dashboard.NewRowBuilder("Fleet")).
		WithPanel(withNodeLink(v, grid("Windows nodes",
			"Every node of the cluster, one row each, whichever nodes are picked above; click a node to open it below. "+
				"OS build and revision show the monthly patch level; commit charge is the share of RAM plus page files already promised.",
			units.Short, []query{promTable(q.fleetOS())}, append(append([]column{
				{title: "Uptime", unit: units.Seconds, query: q.fleetUptime()}},
				q.fleetServices()...), []column{
				{title: "Commit charge", unit: units.PercentUnit, query: q.fleetRecord(vocab.Records.NodeCommitRatio), steps: commitSteps},
				{title: "CPU", unit: units.PercentUnit, query: q.fleetRecord(vocab.Records.NodeCPUUtilisation)},
				{title: "Physical memory", unit: units.PercentUnit, query: q.fleetRecord(vocab.Records.NodeMemoryUtilisation)},
				{title: "C: free", unit: units.PercentUnit, query: q.fleetSystemVolumeFree(), steps: freeSteps[:2], low: true},
			}...), "Commit charge").Height(10))).
		// One row per selected node.
		WithRow(dashboard.NewRowBuilder("Node $instance").Repeat("instance")).
		WithPanel(graph("Commit charge",
			"Committed bytes over the commit limit. At 100 % every allocation on the node fails (error 1455); dashed lines are the alert thresholds.",
			units.PercentUnit, []query{prom(q.nodeRecord(vocab.Records.NodeCommitRatio), "{{instance}}")}, commitSteps...)).
		WithPanel(graph("Committed, commit limit and physical memory",
			"Committed memory is what Windows has promised; the commit limit is RAM plus page files. Above physical memory the node pages.",
			units.BytesIEC, []query{
				prom(q.nodeGauge(vocab.Metrics.MemoryCommitted), "{{instance}} committed"),
				prom(q.nodeGauge(vocab.Metrics.MemoryCommitLimit), "{{instance}} commit limit"),
				prom(q.nodeGauge(vocab.Metrics.MemoryPhysicalTotal), "{{instance}} physical"),
			})).
		WithPanel(graph("Commit / physical memory",
			"Committed bytes over installed RAM. Above the dashed line while paging is high, the node is overcommitted: every container slows down.",
			units.PercentUnit, []query{prom(q.nodeRecord(vocab.Records.NodeCommitToPhysical), "{{instance}}")}, a.NodeOvercommit.CommitToPhysical)).
		WithPanel(graph("Physical memory in use", "1 - available / installed RAM. Available includes the standby cache; the dashed line is the saturation alert.",
			units.PercentUnit, []query{prom(q.nodeRecord(vocab.Records.NodeMemoryUtilisation), "{{instance}}")}, memorySteps...)).
		WithPanel(graph("Page file use", "Used share of each page file. The commit limit is RAM plus the page files, so a full page file is a full commit limit.",
			units.PercentUnit, []query{prom(q.nodeRecord(vocab.Records.PagefileUsage), "{{instance}} {{file}}")}, a.Pagefile.Ratio)).
		WithPanel(graph("Paging", "Hard-fault paging to and from disk.",
			unitPagesPerSecond, []query{prom(q.nodeRecord(vocab.Records.NodePagingRate), "{{instance}}")}, a.NodeOvercommit.PagesPerSecond)).
		WithPanel(graph("CPU utilisation", "Non-idle share of all logical processors; the dashed line is the saturation alert.",
			units.PercentUnit, []query{prom(q.nodeRecord(vocab.Records.NodeCPUUtilisation), "{{instance}}")}, cpuSteps...)).
		WithPanel(graphLow("Volume free space",
			"Free space of each volume with a drive letter. Dashed lines: critical (the kubelet evicts pods at 10 % free), warning (image garbage collection from 85 % used), and the level below which a volume's trend is watched.",
			units.PercentUnit, []query{prom(q.nodeRecord(vocab.Records.VolumeFreeRatio), "{{instance}} {{volume}}")}, freeSteps...)).
		WithPanel(graph("Volume I/O latency", "Average seconds per read or write over 5 minutes; the dashed line is the alert threshold.",
			units.Seconds, []query{prom(q.nodeRecord(vocab.Records.VolumeLatency), "{{instance}} {{volume}}")}, a.VolumeLatency.Seconds)).
		WithPanel(graph("Volume busy", "Share of time the volume was not idle, bounded at 100 %.",
			units.PercentUnit, []query{prom(q.diskBusy(), "{{instance}} {{volume}}")})).
		WithPanel(graph("Network", "Bits per second per adapter; received above the axis, sent below.",
			units.BitsPerSecondSI, []query{
				prom(q.netBits(vocab.Metrics.NetBytesReceived), "{{instance}} {{nic}} received"),
				prom("-"+q.netBits(vocab.Metrics.NetBytesSent), "{{instance}} {{nic}} sent"),
			})).
		WithPanel(graph("Network errors and discards", "Receive and transmit errors and discards per packet, per adapter; the dashed line is the alert threshold.",
			units.PercentUnit, []query{prom(q.nodeRecord(vocab.Records.NetworkErrorRatio), "{{instance}} {{nic}}")}, a.NetworkErrors.Ratio)).
		WithPanel(graph("Clock offset", "Absolute offset of the node's clock from its time source (windows-exporter's time collector); the dashed line is the alert threshold.",
			units.Seconds, []query{prom(q.nodeRecord(vocab.Records.NodeClockOffset), "{{instance}}")}, a.Clock.MaxOffsetSeconds)).
		WithPanel(graphLow("NTP time sources", "Time sources the Windows Time service uses; at 0 the clock drifts freely (the alert).",
			units.Short, []query{prom(q.nodeRecord(vocab.Records.NodeTimeSources), "{{instance}}")}, 0)).
		WithRow(dashboard.NewRowBuilder("Services and exporter")).
		WithPanel(grid("Node services", "Current state of the services Kubernetes needs on the node.",
			units.Short, []query{promTable(q.serviceStates())}, nil, "").Span(12)).
		WithPanel(graph("Exporter collectors", "1 when a windows-exporter collector succeeded on the last scrape, 0 when it failed.",
			units.Short, []query{prom(q.collectorSuccess(), "{{instance}} {{collector}}")})).
		WithPanel(graph("Collector duration", "Time each collector took on the last scrape.",
			units.Seconds, []query{prom(q.collectorDuration(), "{{instance}} {{collector}}")}))
}

// fleetServices is a column per node service the alert watches
// (alerts.nodeServices), in its order.
func (q queries) fleetServices() []column {
	var cols []column
	for _, name := range q.t.Services() {
		cols = append(cols, column{title: name, unit: units.Short, query: q.fleetService(name), mapping: running})
	}
	return cols
}

// withNodeLink makes the fleet table's instance column a link that opens the
// node on this dashboard (keeping the time range, data source and cluster).
func withNodeLink(v view.Dashboards, p *table.PanelBuilder) *table.PanelBuilder {
	url := "/d/" + NodesUID + "?${__url_time_range}&${" + promVar + ":queryparam}&var-instance=${__value.raw}"
	if v.Cluster.Multi() {
		url += "&${cluster:queryparam}"
	}
	return p.OverrideByName("instance", []dashboard.DynamicConfigValue{{Id: "links", Value: []any{
		map[string]any{"title": "Open node ${__value.raw}", "url": url},
	}}})
}

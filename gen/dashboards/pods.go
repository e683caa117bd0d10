package dashboards

//lint:file-ignore SA1019 Classic dashboard JSON is what kube-prometheus-stack's Grafana sidecar provisions; the SDK marks it deprecated in favour of dashboardv2, which winobs renders only as an opt-in.

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

func pods(v view.Dashboards, q queries) *dashboard.DashboardBuilder {
	warn := v.Alerts.ContainerCommit.Warning
	return newDashboard(v, q, PodsUID,
		"Windows pods: committed memory against the job-object limit (what makes allocations fail) next to the working set kubectl top shows, CPU, restarts, network.",
		promVar).
		WithVariable(queryVar("namespace", promDS, q.namespaceValues(), false)).
		// Several pods may be chosen, not All: the dashboard opens on the
		// first pod, at the cost of a glance, however big the namespace.
		WithVariable(queryVar("pod", promDS, q.podValues(), false).Multi(true)).
		WithVariable(hiddenListVar("container_id", promDS, q.containerIDValues())).
		WithRow(dashboard.NewRowBuilder("Memory")).
		WithPanel(graph("Committed memory and limit",
			"The container's job object caps committed memory: when it reaches the limit, allocations fail with error 1455 and the process exits with an error, never OOMKilled.",
			units.BytesIEC, []query{
				prom(q.podRecord(vocab.Records.ContainerCommitBytes), "{{pod}}/{{container}} committed"),
				prom(q.podRecord(vocab.Records.ContainerMemoryLimitBytes), "{{pod}}/{{container}} limit"),
			})).
		WithPanel(graph("Private working set (kubectl top)",
			"What kubectl top and the HPA see. It is often less than half of the committed memory, so it understates how close a container is to its limit.",
			units.BytesIEC, []query{prom(q.podWorkingSet(), "{{pod}}/{{container}}")})).
		WithPanel(graph("Committed memory / limit", "The alert fires at the dashed line.",
			units.PercentUnit, []query{prom(q.podRecord(vocab.Records.ContainerCommitToLimit), "{{pod}}/{{container}}")}, warn).Span(24)).
		WithRow(dashboard.NewRowBuilder("CPU, restarts and network")).
		WithPanel(graph("CPU and limit", "CPU used, in cores, against the CPU limit.",
			unitCores, []query{
				prom(q.podCPUCores(), "{{pod}}/{{container}} used"),
				prom(q.podResource("kube_pod_container_resource_limits", "cpu"), "{{pod}}/{{container}} limit"),
			})).
		WithPanel(graph("Restarts", "Container restarts. A restart with reason Error after commit neared the limit is a failed allocation.",
			units.Short, []query{prom(q.podRestarts(), "{{pod}}/{{container}}")})).
		WithPanel(graph("Network received", "Per pod, the HNS endpoint counted once.",
			units.BitsPerSecondSI, []query{prom(q.podNetworkBits(vocab.Metrics.ContainerNetworkReceive), "{{pod}}")})).
		WithPanel(graph("Network sent", "Per pod, the HNS endpoint counted once.",
			units.BitsPerSecondSI, []query{prom(q.podNetworkBits(vocab.Metrics.ContainerNetworkTransmit), "{{pod}}")})).
		WithRow(dashboard.NewRowBuilder("All Windows containers")).
		WithPanel(grid("Closest to their memory limit", "Every Windows container, highest committed memory / limit first.",
			units.PercentUnit, nil, []column{
				{title: "Commit / limit", unit: units.PercentUnit, query: q.commitToLimitTable(), steps: []float64{warn, 1}},
			}, "Commit / limit").Span(12)).
		WithPanel(grid("Without a memory limit", "Windows containers kube-state-metrics reports without a memory limit: they can exhaust the node's commit limit.",
			units.Short, []query{promTable(q.noMemoryLimit())}, nil, "").Span(12))
}

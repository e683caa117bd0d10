package dashboards

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/winobs/winobs/catalog"
	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/rules"
)

// queries holds every query the dashboards show, built from the config's
// selectors and the record names of package rules, apart from the layout.
type queries struct {
	clusterLabel string // the label that names the cluster, kept by every aggregation
	cluster      string // ", cluster=\"$cluster\"" or "" for a single cluster
	exporter     string // windows_exporter selector matchers
	ksm          string // kube-state-metrics selector matchers
	eventsJob    string // event log streams of every cluster
	events       string // event log stream selector matchers, with the cluster's
	podLogs      string // pod log stream selector matchers, with the cluster's
	services     string // regex of the node services that must run
}

func newQueries(cfg *config.Config) queries {
	q := queries{
		clusterLabel: cfg.Cluster.Label,
		exporter:     "job=" + literal(cfg.WindowsExporter.Job),
		ksm:          "job=" + literal(cfg.KubeStateMetrics.Job),
		eventsJob:    "job=" + literal(cfg.Logs.EventsJob),
		services:     cfg.Alerts.NodeServices.Services.Regex(),
	}
	if multiCluster(cfg) {
		q.cluster = fmt.Sprintf(`, %s="$cluster"`, cfg.Cluster.Label)
	}
	// The agents add the cluster label to every stream (Alloy's external
	// label, the shipper's labels), so log queries select on it too.
	q.events = q.eventsJob + q.cluster
	q.podLogs = "job=" + literal(cfg.Logs.PodLogsJob) + q.cluster
	return q
}

// literal is a config value as a PromQL and LogQL string literal that
// Grafana leaves alone. Grafana replaces $name, ${name…} and [[name]] in
// query text before the data source reads it, and has no escape for them:
// so '$' and '[' are written as the escapes \x24 and \x5b, which both query
// languages read back as the same characters (a regex matcher included:
// unquoting comes before the regex).
func literal(s string) string {
	return strings.NewReplacer("$", `\x24`, "[", `\x5b`).Replace(strconv.Quote(s))
}

// Selectors of the node and pod dashboards, narrowed by their variables.
func (q queries) node() string    { return q.exporter + q.cluster + `, instance=~"$instance"` }
func (q queries) nodeRec() string { return `instance=~"$instance"` + q.cluster }
func (q queries) pod() string     { return `namespace="$namespace", pod=~"$pod"` + q.cluster }

// Variables.

func (q queries) instanceValues() string {
	return fmt.Sprintf("label_values(windows_exporter_build_info{%s%s}, instance)", q.exporter, q.cluster)
}

func (q queries) namespaceValues() string {
	return fmt.Sprintf("label_values(%s{%s}, namespace)", rules.ContainerInfo, strings.TrimPrefix(q.cluster, ", "))
}

// containerIDValues are the container ids of the pods shown, for the hidden
// container_id variable: the pod queries select the exporter's series by
// it before they join, so opening the dashboard reads the containers on
// screen, not every container of the cluster.
func (q queries) containerIDValues() string {
	return fmt.Sprintf("label_values(%s{%s}, container_id)", rules.ContainerInfo, q.pod())
}

func (q queries) podValues() string {
	return fmt.Sprintf(`label_values(%s{namespace="$namespace"%s}, pod)`, rules.ContainerInfo, q.cluster)
}

func (q queries) clusterValues() string {
	return fmt.Sprintf("label_values(windows_exporter_build_info{%s}, %s)", q.exporter, q.clusterLabel)
}

// clusterLogValues lists the clusters of a dashboard that reads only Loki.
func (q queries) clusterLogValues() string { return lokiValues(q.eventsJob, q.clusterLabel) }

// Windows nodes: fleet table columns (instant, one row per instance).

func (q queries) fleetOS() string {
	return fmt.Sprintf("max by (instance, product, build_number, revision) (windows_os_info{%s})", q.node())
}

func (q queries) fleetUptime() string {
	return fmt.Sprintf("time() - max by (instance) (windows_system_boot_time_timestamp{%s})", q.node())
}

func (q queries) fleetService(name string) string {
	return fmt.Sprintf(`max by (instance) (windows_service_state{%s, name=~"(?i)%s", state="running"})`, q.node(), name)
}

func (q queries) fleetRecord(record string) string {
	return fmt.Sprintf("max by (instance) (%s{%s})", record, q.nodeRec())
}

func (q queries) fleetSystemVolumeFree() string {
	return fmt.Sprintf(`max by (instance) (%s{volume="C:", %s})`, rules.VolumeFreeRatio, q.nodeRec())
}

// Windows nodes: per-node time series.

func (q queries) nodeRecord(record string) string { return fmt.Sprintf("%s{%s}", record, q.nodeRec()) }

func (q queries) nodeGauge(metric string) string { return fmt.Sprintf("%s{%s}", metric, q.node()) }

// Volumes with a drive letter, as the rules select them.
const volumes = rules.VolumeSelector

// diskBusy is bounded at 100 %: read+write seconds can exceed the interval
// on a queueing disk, idle time cannot.
func (q queries) diskBusy() string {
	return fmt.Sprintf("clamp(1 - rate(windows_logical_disk_idle_seconds_total{%s, %s}[$__rate_interval]), 0, 1)", q.node(), volumes)
}

// Network in bits: the exporter's counters are bytes.
func (q queries) netBits(direction string) string {
	return fmt.Sprintf("rate(windows_net_bytes_%s_total{%s}[$__rate_interval]) * 8", direction, q.node())
}

func (q queries) serviceStates() string {
	return fmt.Sprintf(`windows_service_state{%s, name=~%s} == 1`, q.node(), literal(q.services))
}

func (q queries) collectorSuccess() string {
	return fmt.Sprintf("windows_exporter_collector_success{%s}", q.node())
}

func (q queries) collectorDuration() string {
	return fmt.Sprintf("windows_exporter_collector_duration_seconds{%s}", q.node())
}

// Windows pods.

func (q queries) podRecord(record string) string { return fmt.Sprintf("%s{%s}", record, q.pod()) }

// podInfo is the ContainerInfo record narrowed to the pods shown: the joins
// below run at query time over those pods only (see rules.ContainerView).
func (q queries) podInfo() string { return fmt.Sprintf("%s{%s}", rules.ContainerInfo, q.pod()) }

// podContainers selects windows-exporter's series of the containers shown.
func (q queries) podContainers() string {
	return q.exporter + q.cluster + `, container_id=~"$container_id"`
}

// podRate is the rate of a windows-exporter container counter over
// Grafana's rate interval, for the containers shown.
func (q queries) podRate(counter string) string {
	return fmt.Sprintf("rate(%s{%s}[$__rate_interval])", counter, q.podContainers())
}

func (q queries) podWorkingSet() string {
	return rules.ContainerView(fmt.Sprintf("windows_container_memory_usage_private_working_set_bytes{%s}", q.podContainers()),
		q.podInfo(), q.clusterLabel)
}

func (q queries) podCPUCores() string {
	return rules.ContainerView(q.podRate("windows_container_cpu_usage_seconds_total"), q.podInfo(), q.clusterLabel)
}

// podResource is a kube-state-metrics limit or request of the containers
// shown.
func (q queries) podResource(metric, resource string) string {
	return rules.ContainerResourceView(metric, resource, q.ksm+", "+q.pod(), q.podInfo(), q.clusterLabel)
}

// podNetworkBits shows a pod's traffic in bits per second.
func (q queries) podNetworkBits(direction string) string {
	return rules.PodNetworkView(q.podRate("windows_container_network_"+direction+"_bytes_total"), q.podInfo(), q.clusterLabel) + "\n* 8"
}

func (q queries) podRestarts() string {
	return fmt.Sprintf(`max by (%[1]s, namespace, pod, container) (increase(kube_pod_container_status_restarts_total{%[2]s, %[3]s}[$__rate_interval]))
and on (%[1]s, namespace, pod, container) %[4]s`, q.clusterLabel, q.ksm, q.pod(), q.podInfo())
}

func (q queries) commitToLimitTable() string {
	return fmt.Sprintf("sort_desc(%s%s)", rules.ContainerCommitToLimit, q.clusterOnly())
}

func (q queries) noMemoryLimit() string {
	return rules.ContainerNoMemoryLimit + q.clusterOnly()
}

func (q queries) clusterOnly() string {
	if q.cluster == "" {
		return ""
	}
	return "{" + strings.TrimPrefix(q.cluster, ", ") + "}"
}

// Windows events (LogQL). Fields are those of the Alloy event line.

func (q queries) eventStream() string {
	return fmt.Sprintf(`{%s, node=~"$node", channel=~"$channel"}`, q.events)
}

func (q queries) eventRate() string {
	return fmt.Sprintf(`sum by (channel, levelText, source) (count_over_time(%s | json | levelText=~"$level" [$__auto]))`, q.eventStream())
}

// scmEventIDs are the Service Control Manager events that explain a node
// service failing or changing state: the ones the Loki rules alert on, and
// state changes.
var scmEventIDs = strings.Join([]string{rules.SCMStartFailed, rules.SCMStartTimeout, rules.SCMTerminated, rules.SCMTerminatedOnce, rules.SCMStateChange}, "|")

func (q queries) scmTable() string {
	return fmt.Sprintf(`sum by (node, event_id) (count_over_time(%s | event_id=~"%s" [$__range]))`,
		rules.SCMStream(q.events+`, node=~"$node"`), scmEventIDs)
}

func (q queries) eventLogs() string {
	return fmt.Sprintf(`%s | json | levelText=~"$level" | event_id=~"$event_id" |= "$search"`, q.eventStream())
}

func (q queries) podLogLines() string {
	return fmt.Sprintf(`{%s, node=~"$node", namespace=~"$namespace", pod=~"$pod", container=~"$container"} |= "$search"`, q.podLogs)
}

// Log pipeline (what reaches Loki, per node).

func (q queries) eventsPerNode() string {
	return fmt.Sprintf(`sum by (node, channel) (count_over_time({%s, node=~"$node"} [$__auto]))`, q.events)
}

func (q queries) podLinesPerNode() string {
	return fmt.Sprintf(`sum by (node) (count_over_time({%s, node=~"$node"} [$__auto]))`, q.podLogs)
}

func (q queries) eventBytesPerNode() string {
	return fmt.Sprintf(`sum by (node) (bytes_over_time({%s, node=~"$node"} [$__auto]))`, q.events)
}

func (q queries) nodesSilent() string {
	return fmt.Sprintf(`sum by (node) (count_over_time({%s, node=~"$node"} [1h]))`, q.events)
}

// eventlog-shipper (its metrics come through windows-exporter's textfile
// collector, so they carry the exporter's job and instance).

func (q queries) shipperInstanceValues() string {
	return fmt.Sprintf("label_values(%s{%s%s}, instance)", catalog.ShipperEventsRead, q.exporter, q.cluster)
}

func (q queries) shipperRate(metric, by string) string {
	return fmt.Sprintf("sum by (%s) (rate(%s{%s}[$__rate_interval]))", by, metric, q.node())
}

func (q queries) shipperGauge(metric string) string {
	return fmt.Sprintf("%s{%s}", metric, q.node())
}

func (q queries) checkpointAge() string {
	return fmt.Sprintf("time() - %s{%s}", catalog.ShipperCheckpointTime, q.node())
}

func (q queries) pushLatency(quantile float64) string {
	return fmt.Sprintf("histogram_quantile(%g, sum by (instance, le) (rate(%s_bucket{%s}[$__rate_interval])))", quantile, catalog.ShipperPushDuration, q.node())
}

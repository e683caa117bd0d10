package dashboards

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/vocab"
)

// queries holds every query the dashboards show, apart from the layout,
// written in package vocab's terms (selectors from the config, record
// names, views), as the rules are.
type queries struct{ t vocab.Terms }

// Variables as matchers.
var (
	instanceVar  = vocab.Var("instance", "=~", "instance")
	namespaceVar = vocab.Var("namespace", "=", "namespace")
	podVar       = vocab.Var("pod", "=~", "pod")
	containerVar = vocab.Var("container_id", "=~", "container_id")
	nodeVar      = vocab.Var(contract.LabelNode, "=~", contract.LabelNode)
	// channelVar filters events by their channel, structured metadata.
	channelVar = vocab.Var(contract.LabelChannel, "=~", contract.LabelChannel)
)

// Selectors of the node and pod dashboards, narrowed by their variables.
func (q queries) node(ms ...vocab.Matcher) vocab.Selector {
	return q.t.Exporter(instanceVar).With(ms...)
}
func (q queries) nodeRec(ms ...vocab.Matcher) vocab.Selector {
	return q.t.Cluster(instanceVar).With(ms...)
}
func (q queries) pod() vocab.Selector { return q.t.Cluster(namespaceVar, podVar) }

// The fleet table's selectors: every node of the chosen cluster, whatever
// nodes the instance variable holds (the table is where a node is picked).
func (q queries) fleet(ms ...vocab.Matcher) vocab.Selector    { return q.t.Exporter(ms...) }
func (q queries) fleetRec(ms ...vocab.Matcher) vocab.Selector { return q.t.Cluster(ms...) }

// Variables.

func labelValues(metric string, sel vocab.Selector, label string) string {
	return fmt.Sprintf("label_values(%s, %s)", sel.Of(metric), label)
}

func (q queries) instanceValues() string {
	return labelValues(vocab.Metrics.BuildInfo, q.t.Exporter(), "instance")
}

func (q queries) namespaceValues() string {
	return labelValues(vocab.Records.ContainerInfo, q.t.Cluster(), "namespace")
}

func (q queries) podValues() string {
	return labelValues(vocab.Records.ContainerInfo, q.t.Cluster(namespaceVar), "pod")
}

// containerIDValues are the container ids of the pods shown, for the hidden
// container_id variable: the pod queries select the exporter's series by
// it before they join, so opening the dashboard reads the containers on
// screen, not every container of the cluster.
func (q queries) containerIDValues() string {
	return labelValues(vocab.Records.ContainerInfo, q.pod(), "container_id")
}

func (q queries) clusterValues() string {
	return labelValues(vocab.Metrics.BuildInfo, q.t.AllExporters(), q.t.ClusterLabel)
}

// clusterLogValues lists the clusters of a dashboard that reads only Loki.
func (q queries) clusterLogValues() string { return lokiValues(q.t.AllEvents(), q.t.ClusterLabel) }

func lokiValues(sel vocab.Selector, label string) string {
	return "label_values(" + sel.String() + ", " + label + ")"
}

// Windows nodes: fleet table columns (instant, one row per instance).

func (q queries) fleetOS() string {
	return fmt.Sprintf("max by (instance, product, build_number, revision) (%s)", q.fleet().Of(vocab.Metrics.OSInfo))
}

func (q queries) fleetUptime() string {
	return "time() - " + vocab.BootTime("instance", q.fleet())
}

// fleetService is 1 where the node service runs (matched without case, as
// the rules match it).
func (q queries) fleetService(name string) string {
	return fmt.Sprintf(`max by (instance) (%s)`,
		q.fleet(vocab.Re("name", "(?i)"+regexp.QuoteMeta(name)), vocab.Eq("state", "running")).Of(vocab.Metrics.ServiceState))
}

func (q queries) fleetRecord(record string) string {
	return fmt.Sprintf("max by (instance) (%s)", q.fleetRec().Of(record))
}

func (q queries) fleetSystemVolumeFree() string {
	return fmt.Sprintf(`max by (instance) (%s)`, q.fleetRec(vocab.Eq("volume", "C:")).Of(vocab.Records.VolumeFreeRatio))
}

// Windows nodes: per-node time series.

func (q queries) nodeRecord(record string) string { return q.nodeRec().Of(record) }

func (q queries) nodeGauge(metric string) string { return q.node().Of(metric) }

// diskBusy is bounded at 100 %: read+write seconds can exceed the interval
// on a queueing disk, idle time cannot.
func (q queries) diskBusy() string {
	return fmt.Sprintf("clamp(1 - rate(%s[$__rate_interval]), 0, 1)", q.node(vocab.Volumes).Of(vocab.Metrics.LogicalDiskIdle))
}

// Network in bits: the exporter's counters are bytes.
func (q queries) netBits(counter string) string {
	return fmt.Sprintf("rate(%s[$__rate_interval]) * 8", q.node().Of(counter))
}

func (q queries) serviceStates() string {
	return q.node(q.t.ServiceMatcher()).Of(vocab.Metrics.ServiceState) + " == 1"
}

func (q queries) collectorSuccess() string { return q.node().Of(vocab.Metrics.CollectorSuccess) }

func (q queries) collectorDuration() string {
	return q.node().Of(vocab.Metrics.CollectorDuration)
}

// Windows pods.

func (q queries) podRecord(record string) string { return q.pod().Of(record) }

// podInfo is the ContainerInfo record narrowed to the pods shown: the joins
// below run at query time over those pods only (see vocab.Terms.ContainerView).
func (q queries) podInfo() string { return q.pod().Of(vocab.Records.ContainerInfo) }

// podContainers selects windows-exporter's series of the containers shown.
func (q queries) podContainers() vocab.Selector { return q.t.Exporter(containerVar) }

// podRate is the rate of a windows-exporter container counter over
// Grafana's rate interval, for the containers shown.
func (q queries) podRate(counter string) string {
	return fmt.Sprintf("rate(%s[$__rate_interval])", q.podContainers().Of(counter))
}

func (q queries) podWorkingSet() string {
	return q.t.ContainerView(q.podContainers().Of(vocab.Metrics.ContainerWorkingSet), q.podInfo())
}

func (q queries) podCPUCores() string {
	return q.t.ContainerView(q.podRate(vocab.Metrics.ContainerCPU), q.podInfo())
}

// podResource is a kube-state-metrics limit or request of the containers
// shown.
func (q queries) podResource(metric, resource string) string {
	return q.t.ContainerResourceView(metric, resource, q.t.KSM(namespaceVar, podVar), q.podInfo())
}

// podNetworkBits shows a pod's traffic in bits per second.
func (q queries) podNetworkBits(counter string) string {
	return q.t.PodNetworkView(q.podRate(counter), q.podInfo()) + "\n* 8"
}

func (q queries) podRestarts() string {
	return fmt.Sprintf(`max by (%s) (increase(%s[$__rate_interval]))
and on (%[1]s) %[3]s`, q.t.By("namespace", "pod", "container"), q.t.KSM(namespaceVar, podVar).Of("kube_pod_container_status_restarts_total"), q.podInfo())
}

func (q queries) commitToLimitTable() string {
	return fmt.Sprintf("sort_desc(%s)", q.t.Cluster().Of(vocab.Records.ContainerCommitToLimit))
}

func (q queries) noMemoryLimit() string {
	return q.t.Cluster().Of(vocab.Records.ContainerNoMemoryLimit)
}

// Windows events (LogQL). Fields are those of the Alloy event line.

func (q queries) eventStream() string {
	return q.t.Events(nodeVar).String() + " | " + channelVar.String()
}

func (q queries) eventRate() string {
	return fmt.Sprintf(`sum by (channel, levelText, source) (count_over_time(%s | json | levelText=~"$level" [$__auto]))`, q.eventStream())
}

// scmEventIDs are the Service Control Manager events that explain a node
// service failing or changing state: the ones the Loki rules alert on, and
// state changes.
var scmEventIDs = strings.Join([]string{vocab.SCMStartFailed, vocab.SCMStartTimeout, vocab.SCMTerminated, vocab.SCMTerminatedOnce, vocab.SCMStateChange}, "|")

func (q queries) scmTable() string {
	return fmt.Sprintf(`sum by (node, event_id) (count_over_time(%s | event_id=~"%s" [$__range]))`,
		q.t.SCMStream(nodeVar), scmEventIDs)
}

// The text boxes (event_id, search) reach LogQL inside raw strings: Grafana's
// Loki data source escapes nothing but ' in a text box's value, so inside a
// "…" string a typed Windows path (C:\Windows) or regex (\d) would be a bad
// escape; between backquotes it arrives as typed.
const (
	eventIDFilter = "| event_id=~`$event_id`"
	searchFilter  = "|= `$search`"
)

func (q queries) eventLogs() string {
	return fmt.Sprintf(`%s | json | levelText=~"$level" %s %s`, q.eventStream(), eventIDFilter, searchFilter)
}

// Security and node operations (the event sets): the same fields the
// detections read.

func (q queries) securityStream() string {
	return q.t.Channels([]vocab.Matcher{nodeVar}, config.ChannelSecurity)
}

func (q queries) failedLogons() string {
	return fmt.Sprintf(`sum by (node, target_user) (count_over_time(%s | json event_id="event_id", event_data="event_data" | event_id="%s" | %s [$__range]))`,
		q.securityStream(), vocab.SecurityFailedLogon, vocab.EventField("event_data", "TargetUserName", "target_user"))
}

func (q queries) securityRate() string {
	return fmt.Sprintf(`sum by (event_id) (count_over_time(%s | json event_id="event_id" [$__auto]))`, q.securityStream())
}

func (q queries) hostServiceErrors() string {
	return fmt.Sprintf(`sum by (node, channel) (count_over_time(%s | json level="level" | level=~"1|2" [$__auto]))`,
		q.t.Channels([]vocab.Matcher{nodeVar}, config.ChannelHNS, config.ChannelHCS))
}

func (q queries) podLogLines() string {
	return q.t.PodLogs(nodeVar, vocab.Var("namespace", "=~", "namespace"), podVar, vocab.Var("container", "=~", "container")).String() + " " + searchFilter
}

// Windows containers' own event log and ETW entries, as the pod pipeline
// tags LogMonitor's lines (contract's Meta* structured metadata).

func (q queries) containerEventStream() string {
	return q.t.PodLogEntries(nodeVar, vocab.Var("namespace", "=~", "namespace"), podVar, vocab.Var("container", "=~", "container")) +
		" | " + vocab.Re(contract.MetaLogMonitor, vocab.LogMonitorEventLog+"|"+vocab.LogMonitorETW).String()
}

func (q queries) containerEventRate() string {
	return fmt.Sprintf(`sum by (%s, %s, %s) (count_over_time(%s [$__auto]))`,
		contract.LabelNamespace, contract.LabelPod, contract.MetaLevel, q.containerEventStream())
}

func (q queries) containerEvents() string { return q.containerEventStream() + " " + searchFilter }

// Log pipeline (what reaches Loki, per node).

func (q queries) eventsPerNode() string {
	return fmt.Sprintf(`sum by (node, channel) (count_over_time(%s [$__auto]))`, q.t.Events(nodeVar))
}

func (q queries) podLinesPerNode() string {
	return fmt.Sprintf(`sum by (node) (count_over_time(%s [$__auto]))`, q.t.PodLogs(nodeVar))
}

func (q queries) eventBytesPerNode() string {
	return fmt.Sprintf(`sum by (node) (bytes_over_time(%s [$__auto]))`, q.t.Events(nodeVar))
}

func (q queries) nodesSilent() string {
	return fmt.Sprintf(`sum by (node) (count_over_time(%s [1h]))`, q.t.Events(nodeVar))
}

// eventlog-shipper (its metrics come through windows-exporter's textfile
// collector, so they carry the exporter's job and instance).

func (q queries) shipperInstanceValues() string {
	return labelValues(contract.ShipperEventsRead, q.t.Exporter(), "instance")
}

func (q queries) shipperRate(metric, by string) string {
	return fmt.Sprintf("sum by (%s) (rate(%s[$__rate_interval]))", by, q.node().Of(metric))
}

func (q queries) shipperGauge(metric string) string { return q.node().Of(metric) }

func (q queries) checkpointAge() string {
	return "time() - " + q.node().Of(contract.ShipperCheckpointTime)
}

func (q queries) pushLatency(quantile float64) string {
	return fmt.Sprintf("histogram_quantile(%g, sum by (instance, le) (rate(%s[$__rate_interval])))", quantile, q.node().Of(contract.ShipperPushDuration+"_bucket"))
}

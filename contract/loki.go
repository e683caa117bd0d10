package contract

// Loki stream labels. The event log agents (Alloy's loki.source.windowsevent
// and the eventlog-shipper) write Job, Node, Class and Computer, and the
// channel as structured metadata; the pod log pipeline writes Job, Node,
// Namespace, Pod, Container, App and Stream. The cluster label is the
// config's (cluster.label).
const (
	LabelJob  = "job"
	LabelNode = "node"
	// LabelChannel is an event's channel ("System", "Security"): structured
	// metadata of event log entries (and of LogMonitor's event lines), never
	// a stream label, so a node's channels share its streams. LogQL filters
	// it as a label: {…, class="node"} | channel="System".
	LabelChannel = "channel"
	// LabelClass is an event stream's class: ClassSecurity for the Security
	// channel's events, ClassNode for every other channel's. Two streams a
	// node, whatever the channels: Loki's default 5,000 streams a tenant
	// hold 2,000 nodes with every default set on.
	LabelClass     = "class"
	LabelComputer  = "computer"
	LabelNamespace = "namespace"
	LabelPod       = "pod"
	LabelContainer = "container"
	LabelApp       = "app"
	// LabelStream is stdout or stderr: Alloy's stage.cri sets it from the
	// CRI line.
	LabelStream = "stream"
	// LabelLane numbers the extra streams of one computer's events of a
	// channel, which the eventlog-shipper splits over Loki streams when
	// that stream is busy ("1", "2", ...); lane 0, a stream's only lane
	// when it is quiet, has no such label. Queries select a channel by job,
	// node and channel, and sum over lanes.
	LabelLane = "lane"
)

// MaxLanes is the most lanes the eventlog-shipper splits one stream over
// (its limits.maxLanes allows no more, and a saved lane plan with more is
// damaged): every lane is a Loki stream, and a tenant may have 5,000
// (max_global_streams_per_user).
const MaxLanes = 32

// Event stream classes (LabelClass). Security is apart: its detections read
// its chunks alone, a fleet keeps it longer (Loki's retention_stream selects
// {class="security"}), and it is the channel that backfills after an outage.
const (
	ClassSecurity = "security"
	ClassNode     = "node"
	// ChannelSecurity is the one channel of ClassSecurity, as Windows
	// spells it (and names it in an event's <Channel>).
	ChannelSecurity = "Security"
)

// EventClass is the stream class of an event of channel, named as the
// event's own <Channel> names it.
func EventClass(channel string) string {
	if channel == ChannelSecurity {
		return ClassSecurity
	}
	return ClassNode
}

// EventStreamLabels are the labels of an event log stream.
var EventStreamLabels = []string{LabelJob, LabelNode, LabelClass, LabelComputer}

// EventMetadata is the structured metadata of an event log entry.
var EventMetadata = []string{LabelChannel}

// PodLogStreamLabels are the labels of a Windows pod log stream.
var PodLogStreamLabels = []string{LabelJob, LabelNode, LabelNamespace, LabelPod, LabelContainer, LabelApp, LabelStream}

// EventLabelsPerEvent are the labels the eventlog-shipper sets from each
// event (Alloy's windowsevent does the same); a static label may not take
// their names.
// The channel is among them: it is metadata, and a static label of that
// name would read as the channel.
var EventLabelsPerEvent = []string{LabelClass, LabelChannel, LabelComputer, LabelLane}

// Structured metadata the pod pipeline attaches to the lines of Microsoft's
// LogMonitor (a Windows container's event log, ETW, log files and process
// output, printed to stdout as JSON). They are never stream labels, so they
// add no streams; LogQL filters them as it filters labels
// (| source="Application Error"). Channel is LabelChannel; Source and
// EventID are named as the event line's fields, so a container's events
// read like the node's.
const (
	// MetaLogMonitor is LogMonitor's source type: EventLog, ETW, File,
	// Process, or LogMonitor for its own diagnostics.
	MetaLogMonitor = "logmonitor"
	// MetaLevel is the level in Loki's canonical lower case; every Loki 3.x
	// takes a structured-metadata "level" as the entry's detected_level.
	MetaLevel = "level"
	// MetaSource is the event's provider (EventLog's EventSource, ETW's
	// ProviderName).
	MetaSource = "source"
	// MetaEventID is the event id (ETW's may be empty or a GUID).
	MetaEventID = "event_id"
	// MetaFile is a File line's path relative to LogMonitor's directory.
	MetaFile = "file"
)

// PodLogMetadata is the structured metadata a pod log entry may carry.
var PodLogMetadata = []string{MetaLogMonitor, MetaLevel, LabelChannel, MetaSource, MetaEventID, MetaFile}

// Canonical levels, as Loki's detected_level spells them.
const (
	LevelCritical = "critical"
	LevelError    = "error"
	LevelWarn     = "warn"
	LevelInfo     = "info"
	LevelDebug    = "debug"
	LevelUnknown  = "unknown"
)

// Loki's default per-tenant limits that winobs's output must stay within
// (limits_config, as Loki 3.7.6 documents and answers them: its 400 bodies
// in testdata/loki), and the
// margins winobs keeps under them.
const (
	// LokiMaxLabelNames is max_label_names_per_series.
	LokiMaxLabelNames = 15
	// LokiMaxLabelNameBytes is max_label_name_length.
	LokiMaxLabelNameBytes = 1024
	// LokiMaxLabelValueBytes is max_label_value_length; the shipper cuts a
	// longer value (a computer name) to it.
	LokiMaxLabelValueBytes = 2048
	// LokiMaxLineBytes is max_line_size (256KB); the shipper's
	// limits.maxLineBytes defaults to it.
	LokiMaxLineBytes = 256 << 10
	// LokiMaxGlobalStreams is max_global_streams_per_user: the streams one
	// tenant may hold at once, every node's event streams and every
	// container's log streams together.
	LokiMaxGlobalStreams = 5000
)

// ReservedLabels are the label names winobs's streams, scrapes, records and
// alerts already use (and those Loki and Prometheus set themselves): a
// cluster label with one of these names would overwrite or clash with one.
var ReservedLabels = append(append(append([]string{LabelChannel}, EventStreamLabels...), PodLogStreamLabels...),
	"instance", "container_id", "interface", "hostprocess", "service", "endpoint", "alertname", "severity",
	"le", "quantile", "service_name", "detected_level", "name", "state", "resource", "unit", "version")

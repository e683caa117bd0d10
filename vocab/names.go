package vocab

// Record names follow level:metric:operations. The metric part always starts
// with "winobs_" so no record can equal a kube-prometheus-stack, Azure or raw
// windows_exporter name (a test enforces it against their lists).
//
// Container-level records carry cluster, namespace, pod and container with the
// pod's real values, however windows-exporter is scraped, and nothing else.
const (
	// ContainerInfo maps every running Windows container_id to its namespace,
	// pod and container (value 1). It is the right-hand side of every
	// container join and is unique per (cluster, container_id).
	ContainerInfo = "container_id:winobs_windows_container_info:max"

	// ContainerCommitBytes is committed memory: what the job object limits.
	ContainerCommitBytes = "namespace_pod_container:winobs_windows_container_memory_commit_bytes:max"

	// ContainerMemoryLimitBytes comes from kube-state-metrics, restricted to
	// containers windows-exporter reports.
	ContainerMemoryLimitBytes = "namespace_pod_container:winobs_windows_container_memory_limit_bytes:max"

	// ContainerCommitToLimit is committed memory over the memory limit: at 1,
	// VirtualAlloc fails with ERROR_COMMITMENT_LIMIT (1455).
	ContainerCommitToLimit = "namespace_pod_container:winobs_windows_container_memory_commit_to_limit:ratio"

	// ContainerNoMemoryLimit is 1 for every running Windows container that
	// kube-state-metrics reports without a memory limit: the alert and the
	// fleet table of the pod dashboard read it.
	ContainerNoMemoryLimit = "namespace_pod_container:winobs_windows_container_without_memory_limit:max"
)

// Node-level records carry cluster and instance, plus node when the scrape
// sets a node label.
const (
	// NodeInfo maps every windows-exporter instance to its Kubernetes node
	// name (value 1), from a node label on the series or else by matching the
	// instance address to kube_node_info's internal_ip.
	NodeInfo = "instance:winobs_windows_node_info:max"
	// NodeCommitRatio is the commit charge: committed bytes over the commit
	// limit (RAM plus page files). At 1 every allocation on the node fails.
	NodeCommitRatio = "instance:winobs_windows_memory_commit:ratio"
	// NodeCommitToPhysical is committed bytes over installed RAM.
	NodeCommitToPhysical = "instance:winobs_windows_memory_commit_to_physical:ratio"
	// NodeMemoryUtilisation is 1 - available/physical.
	NodeMemoryUtilisation = "instance:winobs_windows_memory_utilisation:ratio"
	// NodeCPUUtilisation is the non-idle fraction of all cores over 5m.
	NodeCPUUtilisation = "instance:winobs_windows_cpu_utilisation:rate5m"
	// NodePagingRate is hard-fault paging in pages per second over 5m.
	NodePagingRate = "instance:winobs_windows_memory_swap_pages:rate5m"
	// NodeClockOffset is the absolute offset from the time source, in
	// seconds (windows-exporter's time collector).
	NodeClockOffset = "instance:winobs_windows_time_offset_seconds:abs"
	// NodeTimeSources is the number of NTP time sources the node uses.
	NodeTimeSources = "instance:winobs_windows_time_sources:max"
)

// Volume, adapter and page file records carry volume, nic or file besides.
const (
	// VolumeFreeRatio is free over size of every volume with a drive letter.
	VolumeFreeRatio = "instance_volume:winobs_windows_volume_free:ratio"
	// VolumeLatency is the average seconds per read or write over 5m.
	VolumeLatency = "instance_volume:winobs_windows_volume_io_latency_seconds:rate5m"
	// NetworkErrorRatio is errors and discards per packet, both ways, over 5m.
	NetworkErrorRatio = "instance_nic:winobs_windows_network_packet_errors:ratio_rate5m"
	// PagefileUsage is the used fraction of each page file.
	PagefileUsage = "instance_file:winobs_windows_pagefile_usage:ratio"
)

// Records are the record names by their Go names: the placeholders of the
// rule templates ($[ContainerInfo]).
var Records = map[string]string{
	"ContainerInfo":             ContainerInfo,
	"ContainerCommitBytes":      ContainerCommitBytes,
	"ContainerMemoryLimitBytes": ContainerMemoryLimitBytes,
	"ContainerCommitToLimit":    ContainerCommitToLimit,
	"ContainerNoMemoryLimit":    ContainerNoMemoryLimit,
	"NodeInfo":                  NodeInfo,
	"NodeCommitRatio":           NodeCommitRatio,
	"NodeCommitToPhysical":      NodeCommitToPhysical,
	"NodePagingRate":            NodePagingRate,
	"NodeCPUUtilisation":        NodeCPUUtilisation,
	"NodeMemoryUtilisation":     NodeMemoryUtilisation,
	"NodeClockOffset":           NodeClockOffset,
	"NodeTimeSources":           NodeTimeSources,
	"VolumeFreeRatio":           VolumeFreeRatio,
	"VolumeLatency":             VolumeLatency,
	"NetworkErrorRatio":         NetworkErrorRatio,
	"PagefileUsage":             PagefileUsage,
}

// Volumes keeps the volumes with a drive letter: windows-exporter names the
// others HarddiskVolumeN (recovery, EFI, reserved partitions, full by design
// and never written by pods).
var Volumes = Re("volume", "[A-Za-z]:")

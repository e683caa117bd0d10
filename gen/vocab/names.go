package vocab

import "reflect"

// RecordNames are winobs's record names, one field each, the name in its
// tag: Go code reads Records.NodeInfo, a rule template writes $[NodeInfo],
// and both are derived from this one list.
//
// Record names follow level:metric:operations. The metric part always starts
// with "winobs_" so no record can equal a kube-prometheus-stack, Azure or raw
// windows_exporter name (a test enforces it against their lists).
type RecordNames struct {
	// Container-level records carry cluster, namespace, pod and container
	// with the pod's real values, however windows-exporter is scraped, and
	// nothing else.
	//
	// ContainerInfo maps every running Windows container_id to its namespace,
	// pod and container (value 1). It is the right-hand side of every
	// container join and is unique per (cluster, container_id).
	ContainerInfo string `record:"container_id:winobs_windows_container_info:max"`

	// ContainerCommitBytes is committed memory: what the job object limits.
	ContainerCommitBytes string `record:"namespace_pod_container:winobs_windows_container_memory_commit_bytes:max"`

	// ContainerMemoryLimitBytes comes from kube-state-metrics, restricted to
	// containers windows-exporter reports.
	ContainerMemoryLimitBytes string `record:"namespace_pod_container:winobs_windows_container_memory_limit_bytes:max"`

	// ContainerCommitToLimit is committed memory over the memory limit: at 1,
	// VirtualAlloc fails with ERROR_COMMITMENT_LIMIT (1455).
	ContainerCommitToLimit string `record:"namespace_pod_container:winobs_windows_container_memory_commit_to_limit:ratio"`

	// ContainerNoMemoryLimit is 1 for every running Windows container that
	// kube-state-metrics reports without a memory limit: the alert and the
	// fleet table of the pod dashboard read it.
	ContainerNoMemoryLimit string `record:"namespace_pod_container:winobs_windows_container_without_memory_limit:max"`

	// Node-level records carry cluster and instance, plus node when the
	// scrape sets a node label.
	//
	// NodeInfo maps every windows-exporter instance to its Kubernetes node
	// name (value 1), from a node label on the series or else by matching the
	// instance address to kube_node_info's internal_ip.
	NodeInfo string `record:"instance:winobs_windows_node_info:max"`
	// NodeCommitRatio is the commit charge: committed bytes over the commit
	// limit (RAM plus page files). At 1 every allocation on the node fails.
	NodeCommitRatio string `record:"instance:winobs_windows_memory_commit:ratio"`
	// NodeCommitToPhysical is committed bytes over installed RAM.
	NodeCommitToPhysical string `record:"instance:winobs_windows_memory_commit_to_physical:ratio"`
	// NodeMemoryUtilisation is 1 - available/physical.
	NodeMemoryUtilisation string `record:"instance:winobs_windows_memory_utilisation:ratio"`
	// NodeCPUUtilisation is the non-idle fraction of all cores over 5m.
	NodeCPUUtilisation string `record:"instance:winobs_windows_cpu_utilisation:rate5m"`
	// NodePagingRate is hard-fault paging in pages per second over 5m.
	NodePagingRate string `record:"instance:winobs_windows_memory_swap_pages:rate5m"`
	// NodeClockOffset is the absolute offset from the time source, in
	// seconds (windows-exporter's time collector).
	NodeClockOffset string `record:"instance:winobs_windows_time_offset_seconds:abs"`
	// NodeTimeSources is the number of NTP time sources the node uses.
	NodeTimeSources string `record:"instance:winobs_windows_time_sources:max"`

	// Volume, adapter and page file records carry volume, nic or file
	// besides.
	//
	// VolumeFreeRatio is free over size of every volume with a drive letter.
	VolumeFreeRatio string `record:"instance_volume:winobs_windows_volume_free:ratio"`
	// VolumeLatency is the average seconds per read or write over 5m.
	VolumeLatency string `record:"instance_volume:winobs_windows_volume_io_latency_seconds:rate5m"`
	// NetworkErrorRatio is errors and discards per packet, both ways, over 5m.
	NetworkErrorRatio string `record:"instance_nic:winobs_windows_network_packet_errors:ratio_rate5m"`
	// PagefileUsage is the used fraction of each page file.
	PagefileUsage string `record:"instance_file:winobs_windows_pagefile_usage:ratio"`
}

// Records are winobs's record names.
var Records = fromTags()

// recordPlaceholders are the records by field name, as templates write them.
var recordPlaceholders = Records.byField()

// byField maps each field's name to its record name: the placeholders of
// the rule templates.
func (r RecordNames) byField() map[string]string {
	v := reflect.ValueOf(r)
	m := make(map[string]string, v.NumField())
	for i := range v.NumField() {
		m[v.Type().Field(i).Name] = v.Field(i).String()
	}
	return m
}

// fromTags fills every field from its record tag.
func fromTags() RecordNames {
	var r RecordNames
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		v.Field(i).SetString(v.Type().Field(i).Tag.Get("record"))
	}
	return r
}

// All lists every record name, in the fields' order.
func (r RecordNames) All() []string {
	v := reflect.ValueOf(r)
	out := make([]string, v.NumField())
	for i := range out {
		out[i] = v.Field(i).String()
	}
	return out
}

// Volumes keeps the volumes with a drive letter: windows-exporter names the
// others HarddiskVolumeN (recovery, EFI, reserved partitions, full by design
// and never written by pods).
var Volumes = Re("volume", "[A-Za-z]:")

package vocab

import (
	"reflect"

	"github.com/winobs/winobs/contract"
)

// ExporterMetrics names every windows_exporter metric the rules, the
// dashboards and doctor read, each once: a rename in a new exporter release
// is one edit here (and its tests). Rule templates write a metric as
// $[FieldName]; Go code reads the field.
type ExporterMetrics struct {
	BuildInfo, CollectorSuccess, CollectorDuration string

	MemoryCommitted, MemoryCommitLimit, MemoryPhysicalTotal, MemoryAvailable string
	MemorySwapPageOperations                                                 string

	CPUTime string

	// The boot time, under each release's name (BootTime reads them all).
	BootTime031, BootTime030, SystemUpTime029 string

	TimeOffset, NTPTimeSources string

	LogicalDiskFree, LogicalDiskSize, LogicalDiskIdle string
	LogicalDiskReadLatency, LogicalDiskWriteLatency   string
	LogicalDiskReads, LogicalDiskWrites               string

	NetPackets, NetPacketsReceivedErrors, NetPacketsOutboundErrors string
	NetPacketsReceivedDiscarded, NetPacketsOutboundDiscarded       string
	NetBytesReceived, NetBytesSent                                 string

	PagefileFree, PagefileLimit string

	ServiceState, OSInfo string

	ContainerAvailable, ContainerCommit, ContainerWorkingSet, ContainerCPU string
	ContainerNetworkReceive, ContainerNetworkTransmit                      string
}

// Metrics are the names, as windows_exporter 0.29 to 0.31 serve them.
var Metrics = ExporterMetrics{
	BuildInfo:         "windows_exporter_build_info",
	CollectorSuccess:  "windows_exporter_collector_success",
	CollectorDuration: "windows_exporter_collector_duration_seconds",

	MemoryCommitted:          "windows_memory_committed_bytes",
	MemoryCommitLimit:        "windows_memory_commit_limit",
	MemoryPhysicalTotal:      "windows_memory_physical_total_bytes",
	MemoryAvailable:          "windows_memory_available_bytes",
	MemorySwapPageOperations: "windows_memory_swap_page_operations_total",

	CPUTime: "windows_cpu_time_total",

	BootTime031:     "windows_system_boot_time_timestamp",
	BootTime030:     "windows_system_boot_time_timestamp_seconds",
	SystemUpTime029: "windows_system_system_up_time",

	TimeOffset:     "windows_time_computed_time_offset_seconds",
	NTPTimeSources: "windows_time_ntp_client_time_sources",

	LogicalDiskFree:         "windows_logical_disk_free_bytes",
	LogicalDiskSize:         "windows_logical_disk_size_bytes",
	LogicalDiskIdle:         "windows_logical_disk_idle_seconds_total",
	LogicalDiskReadLatency:  "windows_logical_disk_read_latency_seconds_total",
	LogicalDiskWriteLatency: "windows_logical_disk_write_latency_seconds_total",
	LogicalDiskReads:        "windows_logical_disk_reads_total",
	LogicalDiskWrites:       "windows_logical_disk_writes_total",

	NetPackets:                  "windows_net_packets_total",
	NetPacketsReceivedErrors:    "windows_net_packets_received_errors_total",
	NetPacketsOutboundErrors:    "windows_net_packets_outbound_errors_total",
	NetPacketsReceivedDiscarded: "windows_net_packets_received_discarded_total",
	NetPacketsOutboundDiscarded: "windows_net_packets_outbound_discarded_total",
	NetBytesReceived:            "windows_net_bytes_received_total",
	NetBytesSent:                "windows_net_bytes_sent_total",

	PagefileFree:  "windows_pagefile_free_bytes",
	PagefileLimit: "windows_pagefile_limit_bytes",

	ServiceState: "windows_service_state",
	OSInfo:       "windows_os_info",

	ContainerAvailable:       "windows_container_available",
	ContainerCommit:          "windows_container_memory_usage_commit_bytes",
	ContainerWorkingSet:      "windows_container_memory_usage_private_working_set_bytes",
	ContainerCPU:             "windows_container_cpu_usage_seconds_total",
	ContainerNetworkReceive:  "windows_container_network_receive_bytes_total",
	ContainerNetworkTransmit: "windows_container_network_transmit_bytes_total",
}

// MetricVersions are the windows_exporter releases that serve a metric
// under its name where that is not the tested range (contract.ExporterRange):
// the renames, past and announced.
var MetricVersions = map[string]string{
	Metrics.MemoryCommitLimit: contract.ExporterRange + " (0.32 renames it: #2694)",
	Metrics.BootTime031:       "0.30.6 to 0.31 (#1967)",
	Metrics.BootTime030:       "0.30 (removed in 0.31: #2112)",
	Metrics.SystemUpTime029:   "0.29 (renamed in 0.30: #1784)",
	Metrics.PagefileFree:      "0.30 to 0.31 (0.29 has windows_os_paging_*: #1735)",
	Metrics.PagefileLimit:     "0.30 to 0.31 (0.29 has windows_os_paging_*: #1735)",
}

// Versions says which windows_exporter releases serve name.
func (ExporterMetrics) Versions(name string) string {
	if v, ok := MetricVersions[name]; ok {
		return v
	}
	return contract.ExporterRange
}

// metricPlaceholders are the metrics by field name, as templates write
// them.
var metricPlaceholders = func() map[string]string {
	v := reflect.ValueOf(Metrics)
	m := make(map[string]string, v.NumField())
	for i := range v.NumField() {
		m[v.Type().Field(i).Name] = v.Field(i).String()
	}
	return m
}()

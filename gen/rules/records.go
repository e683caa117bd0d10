package rules

import "github.com/winobs/winobs/gen/vocab"

// Recording rules, in evaluation order: later rules read earlier ones at the
// same timestamp. Each expression is a template (vocab's Expand: selectors
// and the cluster label from the config, records by their field name in
// vocab.RecordNames) or one of vocab's views, itself a template;
// TestExpressionsAreTemplates holds that none is spliced together in Go.
//
// A ruler pays for every record every interval, for every container of every
// cluster, whether anyone looks or not. So winobs records what the alerts and
// the fleet-wide panels read, and the joins everything else builds on
// (ContainerInfo, NodeInfo). Per-pod views (working set, CPU, network,
// requests) are the same joins run by the pod dashboard at query time, narrowed
// to the pods on screen (ContainerView and friends), which costs the ruler
// nothing. BenchmarkRecordsVsKubePrometheusStack measures the difference.
// The views themselves live in package vocab, shared with the dashboards.
//
// Three rules hold throughout:
//   - Scrape labels (instance, pod, endpoint, service, exported_*, ...) are
//     aggregated away before labels are renamed or joined, so two overlapping
//     exporter pods or two kube-state-metrics replicas cannot produce a
//     duplicate label set.
//   - Every right-hand side of an on(...) join is itself aggregated to one
//     series per join key, so no join can fail as many-to-many.
//   - Every aggregation and join keeps the cluster label, so one ruler can
//     evaluate the rules over many clusters (tests/cluster_test.go walks them).
func recordDefs(t vocab.Terms) []struct{ record, expr string } {
	return []struct{ record, expr string }{
		// The container's own labels from the first source that has them:
		//  1. exported_* : windows-exporter 0.31+ scraped without honorLabels (the
		//     kube-prometheus-stack ServiceMonitor), where the target's labels won;
		//  2. plain labels: scraped with honorLabels, or by an agent that adds no
		//     pod labels; series carrying the exporter pod's own target labels (an
		//     empty or pre-0.31 value) are recognised by matching the exporter's
		//     build_info on the same instance and skipped;
		//  3. kube-state-metrics by container_id: exporters before 0.31, and
		//     containers whose labels the exporter left empty.
		// The exporter reads namespace, pod and container from one OCI spec, so
		// they are set or empty together, and exported_namespace alone tells 1
		// from 2 and 3: ~10 values whose postings the TSDB merges, where
		// exported_pod has one per pod (its query 32 ms against 40 at 50 nodes
		// for one read of both cases renamed by four label_replaces).
		// Case 1 is aggregated to the exported_* labels before they are renamed,
		// so two overlapping exporter pods' series are one by then; it needs no
		// build_info check, which would drop the exporter's own container. A
		// label_join of one label copies it as label_replace's "(.*)" does,
		// without a regexp: 45 % fewer allocations for that step (200 nodes).
		// kube-state-metrics' rows for containers not started yet
		// (container_id="") need no matcher of their own: the join on
		// container_id drops them, and a matcher on an empty value makes the
		// TSDB merge the postings of every container_id.
		{vocab.Records.ContainerInfo, `
		max by ($[cluster], container_id, namespace, pod, container) (
		  label_join(label_join(label_join(
		    max by ($[cluster], container_id, exported_namespace, exported_pod, exported_container) (
		      $[ContainerAvailable]{$[exporter], exported_namespace!=""}
		    ),
		  "namespace", "", "exported_namespace"),
		  "pod", "", "exported_pod"),
		  "container", "", "exported_container")
		)
		or on ($[cluster], container_id)
		max by ($[cluster], container_id, namespace, pod, container) (
		  $[ContainerAvailable]{$[exporter], exported_namespace=""}
		  unless on ($[cluster], instance, namespace, pod)
		  $[BuildInfo]{$[exporter]}
		)
		or on ($[cluster], container_id)
		max by ($[cluster], container_id, namespace, pod, container) (
		  kube_pod_container_info{$[ksm]}
		  and on ($[cluster], container_id)
		  $[ContainerAvailable]{$[exporter], exported_namespace=""}
		)`},

		{vocab.Records.ContainerCommitBytes, t.ContainerView(t.Exporter().Of(vocab.Metrics.ContainerCommit), "$[ContainerInfo]")},
		{vocab.Records.ContainerMemoryLimitBytes, t.ContainerResourceView("kube_pod_container_resource_limits", "memory", t.KSM(), "$[ContainerInfo]")},
		{vocab.Records.ContainerCommitToLimit, `
		$[ContainerCommitBytes]
		/ on ($[cluster], namespace, pod, container)
		($[ContainerMemoryLimitBytes] > 0)`},
		// Read by an alert and a fleet panel: recorded once rather than joined
		// by both.
		{vocab.Records.ContainerNoMemoryLimit, t.NoMemoryLimitView("$[ContainerInfo]", "$[ContainerMemoryLimitBytes]")},

		// windows_exporter_build_info is present whatever collectors are enabled.
		{vocab.Records.NodeInfo, `
		max by ($[cluster], instance, node) ($[BuildInfo]{$[exporter], node!=""})
		or on ($[cluster], instance)
		max by ($[cluster], instance, node) (
		  label_replace(
		    max by ($[cluster], instance) ($[BuildInfo]{$[exporter]}),
		    "internal_ip", "$1", "instance", "\\[?(.*?)\\]?(?::[0-9]+)?"
		  )
		  * on ($[cluster], internal_ip) group_left (node)
		  max by ($[cluster], internal_ip, node) (kube_node_info{$[ksm]})
		)`},
		// Every ratio divides by a capacity > 0: a collector glitch reporting 0
		// gives no series rather than +Inf (and a critical page).
		{vocab.Records.NodeCommitRatio, `
		max by ($[cluster], instance, node) ($[MemoryCommitted]{$[exporter]})
		/
		(max by ($[cluster], instance, node) ($[MemoryCommitLimit]{$[exporter]}) > 0)`},
		{vocab.Records.NodeCommitToPhysical, `
		max by ($[cluster], instance, node) ($[MemoryCommitted]{$[exporter]})
		/
		(max by ($[cluster], instance, node) ($[MemoryPhysicalTotal]{$[exporter]}) > 0)`},
		{vocab.Records.NodeMemoryUtilisation, `
		1 -
		max by ($[cluster], instance, node) ($[MemoryAvailable]{$[exporter]})
		/
		(max by ($[cluster], instance, node) ($[MemoryPhysicalTotal]{$[exporter]}) > 0)`},
		{vocab.Records.NodeCPUUtilisation, `
		1 - avg by ($[cluster], instance, node) (
		  max by ($[cluster], instance, node, core) (rate($[CPUTime]{$[exporter], mode="idle"}[5m]))
		)`},
		{vocab.Records.NodePagingRate, `
		max by ($[cluster], instance, node) (rate($[MemorySwapPageOperations]{$[exporter]}[5m]))`},
		{vocab.Records.NodeClockOffset, `
		max by ($[cluster], instance, node) (abs($[TimeOffset]{$[exporter]}))`},
		{vocab.Records.NodeTimeSources, `
		max by ($[cluster], instance, node) ($[NTPTimeSources]{$[exporter]})`},

		// Volumes with a drive letter only: the HarddiskVolumeN partitions
		// (recovery, EFI, reserved) are full by design and nothing writes to them.
		{vocab.Records.VolumeFreeRatio, `
		max by ($[cluster], instance, node, volume) ($[LogicalDiskFree]{$[exporter], $[volumes]})
		/
		(max by ($[cluster], instance, node, volume) ($[LogicalDiskSize]{$[exporter], $[volumes]}) > 0)`},
		// Seconds spent per I/O: the latency counters' rate over the operations'.
		{vocab.Records.VolumeLatency, `
		(
		  max by ($[cluster], instance, node, volume) (rate($[LogicalDiskReadLatency]{$[exporter], $[volumes]}[5m]))
		  + max by ($[cluster], instance, node, volume) (rate($[LogicalDiskWriteLatency]{$[exporter], $[volumes]}[5m]))
		)
		/
		(
		  (
		    max by ($[cluster], instance, node, volume) (rate($[LogicalDiskReads]{$[exporter], $[volumes]}[5m]))
		    + max by ($[cluster], instance, node, volume) (rate($[LogicalDiskWrites]{$[exporter], $[volumes]}[5m]))
		  ) > 0
		)`},
		{vocab.Records.NetworkErrorRatio, `
		(
		  max by ($[cluster], instance, node, nic) (rate($[NetPacketsReceivedErrors]{$[exporter]}[5m]))
		  + max by ($[cluster], instance, node, nic) (rate($[NetPacketsOutboundErrors]{$[exporter]}[5m]))
		  + max by ($[cluster], instance, node, nic) (rate($[NetPacketsReceivedDiscarded]{$[exporter]}[5m]))
		  + max by ($[cluster], instance, node, nic) (rate($[NetPacketsOutboundDiscarded]{$[exporter]}[5m]))
		)
		/
		(max by ($[cluster], instance, node, nic) (rate($[NetPackets]{$[exporter]}[5m])) > 0)`},
		{vocab.Records.PagefileUsage, `
		1 -
		max by ($[cluster], instance, node, file) ($[PagefileFree]{$[exporter]})
		/
		(max by ($[cluster], instance, node, file) ($[PagefileLimit]{$[exporter]}) > 0)`},
	}
}

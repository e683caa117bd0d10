package rules

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/vocab"
)

// Alert names, also the anchors of their sections in docs/runbooks.md.
const (
	AlertNodeCommitChargeHigh        = "WindowsNodeCommitChargeHigh"
	AlertContainerCommitNearLimit    = "WindowsContainerCommitNearLimit"
	AlertContainerNoMemoryLimit      = "WindowsContainerNoMemoryLimit"
	AlertNodeOvercommittedPaging     = "WindowsNodeOvercommittedPaging"
	AlertNodeServiceNotRunning       = "WindowsNodeServiceNotRunning"
	AlertNodeRebootedWithoutDrain    = "WindowsNodeRebootedWithoutDrain"
	AlertExporterDown                = "WindowsExporterDown"
	AlertExporterCollectorFailing    = "WindowsExporterCollectorFailing"
	AlertExporterVersionUntested     = "WindowsExporterVersionUntested"
	AlertNodeCommitLimitMetricAbsent = "WindowsNodeCommitLimitMetricAbsent"
	AlertNodeVolumeFull              = "WindowsNodeVolumeFull"
	AlertNodeVolumeFillingUp         = "WindowsNodeVolumeFillingUp"
	AlertNodeVolumeLatencyHigh       = "WindowsNodeVolumeLatencyHigh"
	AlertNodeNetworkErrors           = "WindowsNodeNetworkErrors"
	AlertNodeCPUSaturated            = "WindowsNodeCPUSaturated"
	AlertNodeMemorySaturated         = "WindowsNodeMemorySaturated"
	AlertNodePagefileFull            = "WindowsNodePagefileFull"
	AlertNodeClockSkew               = "WindowsNodeClockSkew"
	AlertNodeNoTimeSource            = "WindowsNodeNoTimeSource"
)

type alertDef struct {
	name, severity string
	// expr is a template (vocab's Expand) and args its own values.
	expr        string
	args        vocab.Args
	hold        config.Duration
	summary     string
	description string
}

const (
	volumeRef    = "{{ $labels.volume }} on {{ $labels.instance }}"
	nodeRef      = "{{ $labels.instance }}"
	containerRef = "{{ $labels.namespace }}/{{ $labels.pod }}/{{ $labels.container }}"
)

func alertDefs(t vocab.Terms, a *config.Alerts) []alertDef {
	commit := func(severity string, threshold float64) alertDef {
		return alertDef{
			name: AlertNodeCommitChargeHigh, severity: severity,
			expr:    `$[NodeCommitRatio] > $[threshold]`,
			args:    vocab.Args{"threshold": num(threshold)},
			hold:    a.NodeCommit.For,
			summary: "Windows node " + nodeRef + " has committed {{ $value | humanizePercentage }} of its commit limit.",
			description: "Committed memory on " + nodeRef + " is {{ $value | humanizePercentage }} of the commit limit (RAM plus page files). " +
				"At the limit every memory allocation on the node fails with ERROR_COMMITMENT_LIMIT (1455), in all containers at once, " +
				"and the Windows kubelet does not evict pods on memory pressure.",
		}
	}
	volumeFree := func(severity string, threshold float64, why string) alertDef {
		return alertDef{
			name: AlertNodeVolumeFull, severity: severity,
			expr:    `$[VolumeFreeRatio] < $[threshold]`,
			args:    vocab.Args{"threshold": num(threshold)},
			hold:    a.VolumeFree.For,
			summary: "Volume " + volumeRef + " has {{ $value | humanizePercentage }} free.",
			description: "Volume " + volumeRef + " has {{ $value | humanizePercentage }} of its space free, under " + pct(threshold) + ": " + why +
				" Windows images are gigabytes, and containerd keeps them and every pod's writable layer on C:.",
		}
	}
	defs := []alertDef{
		commit("warning", a.NodeCommit.Warning),
		commit("critical", a.NodeCommit.Critical),
		{
			name: AlertContainerCommitNearLimit, severity: "warning",
			expr:    `$[ContainerCommitToLimit] >= $[threshold]`,
			args:    vocab.Args{"threshold": num(a.ContainerCommit.Warning)},
			hold:    a.ContainerCommit.For,
			summary: "Windows container " + containerRef + " has committed {{ $value | humanizePercentage }} of its memory limit.",
			description: "The container's job object caps committed memory, not the working set that kubectl top shows. " +
				"At the limit VirtualAlloc fails with error 1455 and the process crashes with an exit code: the pod restarts with reason Error, never OOMKilled.",
		},
		{
			name: AlertContainerNoMemoryLimit, severity: "warning",
			expr:    "$[ContainerNoMemoryLimit]",
			hold:    a.ContainerNoMemoryLimit.For,
			summary: "Windows container " + containerRef + " has no memory limit.",
			description: "Without a limit the container can commit memory until the node reaches its commit limit, and then allocations fail in every container on the node. " +
				"Set memory limits (requests equal to limits) on every Windows pod.",
		},
		{
			name: AlertNodeOvercommittedPaging, severity: "warning",
			expr: `
				$[NodeCommitToPhysical] > $[commitToPhysical]
				and on ($[cluster], instance)
				$[NodePagingRate] > $[pagesPerSecond]`,
			args:    vocab.Args{"commitToPhysical": num(a.NodeOvercommit.CommitToPhysical), "pagesPerSecond": num(a.NodeOvercommit.PagesPerSecond)},
			hold:    a.NodeOvercommit.For,
			summary: "Windows node " + nodeRef + " has committed {{ $value | humanizePercentage }} of its physical memory and is paging heavily.",
			description: "Committed memory on " + nodeRef + " is {{ $value | humanizePercentage }} of installed RAM while the node pages more than " +
				num(a.NodeOvercommit.PagesPerSecond) + " pages per second: every container on it slows down, and the commit limit is next.",
		},
		{
			name: AlertNodeServiceNotRunning, severity: "critical",
			expr: `
				max by ($[cluster], instance, node, name) (
				  $[running]
				) == 0`,
			args:    vocab.Args{"running": t.Exporter(t.ServiceMatcher(), vocab.Eq("state", "running")).Of(vocab.Metrics.ServiceState)},
			hold:    a.NodeServices.For,
			summary: "Service {{ $labels.name }} is not running on Windows node " + nodeRef + ".",
			description: "The Windows service {{ $labels.name }} on " + nodeRef + " has not been in the running state for " + string(a.NodeServices.For) +
				". Without kubelet or containerd the node cannot start, stop or report pods.",
		},
		{
			name: AlertNodeRebootedWithoutDrain, severity: "warning",
			// The boot time under each exporter version's name.
			expr: `
				(
				  time() - $[bootTime] < $[windowSeconds]
				)
				* on ($[cluster], instance) group_left (node) $[NodeInfo]
				unless on ($[cluster], node)
				max by ($[cluster], node) (max_over_time(kube_node_spec_unschedulable{$[ksm]}[$[window]])) > 0`,
			args: vocab.Args{
				"bootTime":      indent(vocab.BootTime(t.By("instance"), t.Exporter()), "\t\t\t\t  "),
				"windowSeconds": seconds(a.UncordonedReboot.Window),
				"window":        string(a.UncordonedReboot.Window),
			},
			summary: "Windows node {{ $labels.node }} rebooted {{ $value | humanizeDuration }} ago without being cordoned.",
			description: "Node {{ $labels.node }} booted {{ $value | humanizeDuration }} ago and was not cordoned at any time in the last " + string(a.UncordonedReboot.Window) +
				". After an unplanned restart its pods can look Running while their networking is not restored.",
		},
		{
			name: AlertExporterDown, severity: "warning",
			expr:    `max by ($[cluster], instance, node) (up{$[exporter]}) == 0`,
			hold:    a.ExporterDown.For,
			summary: "windows-exporter on " + nodeRef + " cannot be scraped.",
			description: "Prometheus has failed to scrape windows-exporter on " + nodeRef + " for " + string(a.ExporterDown.For) +
				": every Windows alert for this node is blind.",
		},
		{
			name: AlertExporterCollectorFailing, severity: "warning",
			expr:    `max by ($[cluster], instance, node, collector) ($[CollectorSuccess]{$[exporter]}) == 0`,
			hold:    a.CollectorFailing.For,
			summary: "windows-exporter collector {{ $labels.collector }} fails on " + nodeRef + ".",
			description: "The {{ $labels.collector }} collector of windows-exporter on " + nodeRef + " has reported failure for " + string(a.CollectorFailing.For) +
				"; its metrics are missing or partial.",
		},
		{
			name: AlertExporterVersionUntested, severity: "info",
			expr:    `max by ($[cluster], instance, node, version) ($[BuildInfo]{$[exporter], $[untested]})`,
			args:    vocab.Args{"untested": vocab.NotRe("version", vocab.SupportedExporterVersions).String()},
			hold:    a.ExporterVersion.For,
			summary: "windows-exporter {{ $labels.version }} on " + nodeRef + " is outside the tested versions.",
			description: "winobs rules are tested against windows_exporter " + contract.ExporterRange + ". Version {{ $labels.version }} may have renamed metrics " +
				"(0.32 renames " + vocab.Metrics.MemoryCommitLimit + "), which silently empties rules and dashboards.",
		},
		{
			name: AlertNodeCommitLimitMetricAbsent, severity: "warning",
			expr: `
				max by ($[cluster], instance, node) ($[MemoryCommitted]{$[exporter]})
				unless on ($[cluster], instance)
				$[MemoryCommitLimit]{$[exporter]}`,
			hold:        a.CommitLimitMissing.For,
			summary:     "Windows node " + nodeRef + " reports no commit limit.",
			description: "windows-exporter on " + nodeRef + " reports committed memory but no " + vocab.Metrics.MemoryCommitLimit + ", so the commit charge alert cannot fire for this node.",
		},
		volumeFree("warning", a.VolumeFree.Warning, "the kubelet garbage-collects unused images from 85 % used."),
		volumeFree("critical", a.VolumeFree.Critical, "the kubelet evicts pods below 10 % free on the node's filesystem."),
		{
			name: AlertNodeVolumeFillingUp, severity: "warning",
			expr: `
				max by ($[cluster], instance, node, volume) (
				  predict_linear($[LogicalDiskFree]{$[exporter], $[volumes]}[$[lookback]], $[horizonSeconds])
				) < 0
				and on ($[cluster], instance, volume)
				$[VolumeFreeRatio] < $[freeBelow]`,
			args: vocab.Args{
				"lookback":       string(a.VolumeFilling.Lookback),
				"horizonSeconds": seconds(a.VolumeFilling.Horizon),
				"freeBelow":      num(a.VolumeFilling.FreeBelow),
			},
			hold:    a.VolumeFilling.For,
			summary: "Volume " + volumeRef + " fills up within " + string(a.VolumeFilling.Horizon) + ".",
			description: "On the trend of the last " + string(a.VolumeFilling.Lookback) + ", volume " + volumeRef + " runs out of space within " +
				string(a.VolumeFilling.Horizon) + "; it has less than " + pct(a.VolumeFilling.FreeBelow) + " free.",
		},
		{
			name: AlertNodeVolumeLatencyHigh, severity: "warning",
			expr:    `$[VolumeLatency] > $[threshold]`,
			args:    vocab.Args{"threshold": num(a.VolumeLatency.Seconds)},
			hold:    a.VolumeLatency.For,
			summary: "Volume " + volumeRef + " takes {{ $value | humanizeDuration }} per I/O.",
			description: "Reads and writes on " + volumeRef + " take {{ $value | humanizeDuration }} on average over 5 minutes (threshold " + num(a.VolumeLatency.Seconds) +
				" s): image pulls, container starts and every pod writing to it slow down.",
		},
		{
			name: AlertNodeNetworkErrors, severity: "warning",
			expr:    `$[NetworkErrorRatio] > $[threshold]`,
			args:    vocab.Args{"threshold": num(a.NetworkErrors.Ratio)},
			hold:    a.NetworkErrors.For,
			summary: "Adapter {{ $labels.nic }} on " + nodeRef + " loses {{ $value | humanizePercentage }} of its packets.",
			description: "Receive and transmit errors and discards on {{ $labels.nic }} of " + nodeRef + " are {{ $value | humanizePercentage }} of its packets (threshold " +
				pct(a.NetworkErrors.Ratio) + "): a failing NIC, cable or driver, or a full vSwitch queue; pods on the node see timeouts and retransmissions.",
		},
		{
			name: AlertNodePagefileFull, severity: "warning",
			expr:    `$[PagefileUsage] > $[threshold]`,
			args:    vocab.Args{"threshold": num(a.Pagefile.Ratio)},
			hold:    a.Pagefile.For,
			summary: "Page file {{ $labels.file }} on " + nodeRef + " is {{ $value | humanizePercentage }} used.",
			description: "The commit limit is RAM plus the page files: with {{ $labels.file }} on " + nodeRef + " {{ $value | humanizePercentage }} used, " +
				"the commit limit is close and allocations in every container will fail with error 1455.",
		},
		{
			name: AlertNodeClockSkew, severity: "warning",
			expr:    `$[NodeClockOffset] > $[threshold]`,
			args:    vocab.Args{"threshold": num(a.Clock.MaxOffsetSeconds)},
			hold:    a.Clock.For,
			summary: "The clock of " + nodeRef + " is {{ $value | humanizeDuration }} off its time source.",
			description: "windows-exporter's time collector reports an offset of {{ $value | humanizeDuration }} from the time source on " + nodeRef +
				" (threshold " + num(a.Clock.MaxOffsetSeconds) + " s). Certificates, service-account tokens and Kerberos (gMSA) are checked against the clock.",
		},
		{
			name: AlertNodeNoTimeSource, severity: "warning",
			expr:        `$[NodeTimeSources] == 0`,
			hold:        a.Clock.NoSourceFor,
			summary:     "Windows node " + nodeRef + " has no time source.",
			description: "The Windows Time service on " + nodeRef + " uses no NTP source: its clock drifts freely, and certificates, tokens and Kerberos start failing once it is off.",
		},
	}
	saturated := func(name string, s config.Saturation, record, what, effect string) {
		if s.Enabled {
			defs = append(defs, alertDef{
				name: name, severity: "warning",
				expr:        `$[ratio] > $[threshold]`,
				args:        vocab.Args{"ratio": record, "threshold": num(s.Ratio)},
				hold:        s.For,
				summary:     "Windows node " + nodeRef + " uses {{ $value | humanizePercentage }} of its " + what + ".",
				description: "The " + what + " of " + nodeRef + " has been over " + pct(s.Ratio) + " in use for " + string(s.For) + ": " + effect,
			})
		}
	}
	saturated(AlertNodeCPUSaturated, a.CPUSaturation, vocab.Records.NodeCPUUtilisation, "CPU",
		"kubelet, containerd and the pods' probes compete for CPU, and probes start timing out.")
	saturated(AlertNodeMemorySaturated, a.MemorySaturation, vocab.Records.NodeMemoryUtilisation, "physical memory",
		"the standby cache is gone, the node pages, and the commit charge alert is next.")
	return defs
}

// pct writes a ratio as a percentage for texts (0.15 → "15 %").
func pct(f float64) string { return num(math.Round(f*1e6)/1e4) + " %" }

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func seconds(d config.Duration) string {
	return num(time.Duration(d.Model()).Seconds())
}

// indent puts prefix before every line of s but the first, so a built
// expression lines up inside a template.
func indent(s, prefix string) string { return strings.ReplaceAll(s, "\n", "\n"+prefix) }

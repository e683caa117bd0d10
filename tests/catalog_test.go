package tests

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/catalog"
	"github.com/winobs/winobs/internal/fixture"
)

// knownMetrics is every metric a rule may select: windows_exporter 0.31.8,
// kube-state-metrics, Prometheus' own, our records, and the legacy names the
// rules read on purpose for older exporters.
func knownMetrics(t *testing.T, groups []rulefmt.RuleGroup) map[string]string {
	known := map[string]string{"up": "prometheus"}
	read := func(path, source string, field int) {
		for _, line := range strings.Split(string(fixture.Read(t, "windows-exporter", path)), "\n") {
			if f := strings.Fields(line); len(f) > field && !strings.HasPrefix(line, "#") {
				known[f[field]] = source
			}
		}
	}
	read("metric-names-0.31.8.txt", "windows_exporter 0.31.8", 0)
	read("kube-state-metrics-names.txt", "kube-state-metrics", 0)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				known[r.Record] = "winobs record"
			}
		}
	}
	for name, version := range legacyMetrics {
		known[name] = version
	}
	for _, name := range []string{catalog.ShipperEventsRead, catalog.ShipperEventsSent, catalog.ShipperEventsDropped, catalog.ShipperBytesSent,
		catalog.ShipperPushDuration + "_bucket", catalog.ShipperPushDuration + "_sum", catalog.ShipperPushDuration + "_count",
		catalog.ShipperPushErrors, catalog.ShipperPushRetries, catalog.ShipperCheckpointTime, catalog.ShipperCheckpointID,
		catalog.ShipperPending, catalog.ShipperRecordLag, catalog.ShipperResubscribes, catalog.ShipperRenderErrors, catalog.ShipperInFlightBytes} {
		known[name] = "eventlog-shipper"
	}
	return known
}

// legacyMetrics are pre-0.31 names read only in an `or` after the 0.31 name.
var legacyMetrics = map[string]string{
	"windows_system_boot_time_timestamp_seconds": "windows_exporter 0.30 (removed in 0.31.0)",
	"windows_system_system_up_time":              "windows_exporter 0.29 (renamed in 0.30.0)",
}

// eventLineFields are the keys of the Alloy event line (nested objects as
// LogQL's json parser flattens them), as reference/eventlog-and-shippers.md
// section 2 lists them.
var eventLineFields = []string{
	"source", "channel", "computer", "event_id", "version", "level", "task", "opCode", "levelText", "taskText",
	"opCodeText", "keywords", "timeCreated", "eventRecordID", "correlation_activityID", "correlation_relatedActivityID",
	"execution_processId", "execution_threadId", "execution_processName", "security_userId", "security_userName",
	"user_data", "event_data", "message",
}

// Stream labels the agents set: event logs get channel and computer from the
// event plus job and node; pod logs get the pod's labels.
var (
	eventStreamLabels  = []string{"job", "node", "channel", "computer"}
	podLogStreamLabels = []string{"job", "node", "namespace", "pod", "container", "app"}
)

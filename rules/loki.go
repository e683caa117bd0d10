package rules

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/config"
)

// LokiGroup is the Loki ruler group of event log alerts.
const LokiGroup = "winobs-windows-events"

// Event log alert names (sections of docs/runbooks.md).
const (
	AlertNodeServiceTerminated = "WindowsNodeServiceTerminated"
	AlertServiceStartFailed    = "WindowsServiceStartFailed"
)

// Service Control Manager event ids, for these rules and the event log
// dashboard.
const (
	SCMStartFailed    = "7000" // the service failed to start
	SCMStartTimeout   = "7009" // timed out waiting for the service to connect
	SCMTerminated     = "7031" // terminated unexpectedly, recovery action follows
	SCMTerminatedOnce = "7034" // terminated unexpectedly, no recovery action
	SCMStateChange    = "7036" // entered the running or stopped state
)

// SCMStream selects the Service Control Manager's events in the System
// channel's streams chosen by matchers (such as job="windows-events"), as
// Alloy's line names their source.
func SCMStream(matchers string) string {
	return fmt.Sprintf(`{%s, channel="System"} | json | source="Service Control Manager"`, matchers)
}

// BinaryServiceKey is how a service key name appears in an SCM event's
// <Binary> payload: UTF-16LE, upper-case hex. Matching it, unlike the
// display name in param1, does not depend on the node's language.
func BinaryServiceKey(name string) string {
	units := utf16.Encode([]rune(name))
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		b = append(b, byte(u), byte(u>>8))
	}
	return strings.ToUpper(hex.EncodeToString(b))
}

// LokiGroups returns the event log alerts for the Loki ruler: one rule per
// node service that terminated unexpectedly, and one for any service that
// failed to start or timed out (at boot, often a slow disk).
func LokiGroups(cfg *config.Config) rulefmt.RuleGroups {
	scm := SCMStream("job=" + strconv.Quote(cfg.Logs.EventsJob))
	g := rulefmt.RuleGroup{Name: LokiGroup}
	for _, svc := range cfg.WindowsExporter.Services {
		g.Rules = append(g.Rules, rulefmt.Rule{
			Alert: AlertNodeServiceTerminated,
			Expr: fmt.Sprintf(`sum by (%s, node) (count_over_time(%s | event_id=~"%s|%s" | event_data=~".*<Binary>%s0000.*" [10m])) > 0`,
				cfg.Cluster.Label, scm, SCMTerminated, SCMTerminatedOnce, BinaryServiceKey(svc)),
			Labels: map[string]string{"severity": "critical", "service": svc},
			Annotations: map[string]string{
				"summary": "Service " + svc + " terminated unexpectedly on Windows node {{ $labels.node }}.",
				"description": "The Service Control Manager on {{ $labels.node }} logged " + svc +
					" terminating unexpectedly ({{ $value }} times in 10 minutes, events 7031/7034). Pods on the node may have lost their runtime or network.",
			},
		})
	}
	g.Rules = append(g.Rules, rulefmt.Rule{
		Alert: AlertServiceStartFailed,
		Expr: fmt.Sprintf(`sum by (%s, node) (count_over_time(%s | event_id=~"%s|%s" [15m])) > 0`,
			cfg.Cluster.Label, scm, SCMStartFailed, SCMStartTimeout),
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary": "A service failed to start on Windows node {{ $labels.node }}.",
			"description": "The Service Control Manager on {{ $labels.node }} logged {{ $value }} start failures or start timeouts (events 7000/7009) in 15 minutes. " +
				"At boot this is often a slow disk; see the event messages for the service.",
		},
	})
	for i := range g.Rules {
		g.Rules[i].Annotations["runbook_url"] = RunbookURL(cfg.Alerts.RunbookURL, g.Rules[i].Alert)
	}
	return rulefmt.RuleGroups{Groups: []rulefmt.RuleGroup{g}}
}

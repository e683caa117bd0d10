package rules

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/view"
	"github.com/winobs/winobs/vocab"
)

// LokiGroup is the Loki ruler group of event log alerts.
const LokiGroup = "winobs-windows-events"

// Event log alert names (sections of docs/runbooks.md).
const (
	AlertNodeServiceTerminated = "WindowsNodeServiceTerminated"
	AlertServiceStartFailed    = "WindowsServiceStartFailed"
)

// LokiGroups returns the event log alerts for the Loki ruler: one rule per
// node service that terminated unexpectedly, and one for any service that
// failed to start or timed out (at boot, often a slow disk).
func LokiGroups(v view.Rules) rulefmt.RuleGroups {
	t := v.Terms
	scm := vocab.SCMStream(t.Events())
	g := rulefmt.RuleGroup{Name: LokiGroup}
	for _, svc := range v.ExporterServices {
		g.Rules = append(g.Rules, rulefmt.Rule{
			Alert: AlertNodeServiceTerminated,
			Expr: fmt.Sprintf(`sum by (%s) (count_over_time(%s | event_id=~"%s|%s" | event_data=~".*<Binary>%s0000.*" [10m])) > 0`,
				t.By(contract.LabelNode), scm, vocab.SCMTerminated, vocab.SCMTerminatedOnce, vocab.BinaryServiceKey(svc)),
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
		Expr: fmt.Sprintf(`sum by (%s) (count_over_time(%s | event_id=~"%s|%s" [15m])) > 0`,
			t.By(contract.LabelNode), scm, vocab.SCMStartFailed, vocab.SCMStartTimeout),
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary": "A service failed to start on Windows node {{ $labels.node }}.",
			"description": "The Service Control Manager on {{ $labels.node }} logged {{ $value }} start failures or start timeouts (events 7000/7009) in 15 minutes. " +
				"At boot this is often a slow disk; see the event messages for the service.",
		},
	})
	for i := range g.Rules {
		g.Rules[i].Annotations["runbook_url"] = RunbookURL(v.Alerts.RunbookURL, g.Rules[i].Alert)
	}
	return rulefmt.RuleGroups{Groups: []rulefmt.RuleGroup{g}}
}

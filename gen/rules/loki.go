package rules

import (
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

// LokiGroup is the Loki ruler group of event log alerts.
const LokiGroup = "winobs-windows-events"

// LokiGroups returns the event log alerts for the Loki ruler: one rule per
// node service that terminated unexpectedly, and one for any service that
// failed to start or timed out (at boot, often a slow disk). Expressions are
// templates like the Prometheus rules'.
func LokiGroups(v view.Rules) (rulefmt.RuleGroups, error) {
	t := v.Terms
	ts := &templates{t: t}
	scm := t.SCMStream()
	g := rulefmt.RuleGroup{Name: LokiGroup}
	for _, svc := range v.ExporterServices {
		g.Rules = append(g.Rules, rulefmt.Rule{
			Alert: contract.AlertNodeServiceTerminated,
			Expr: ts.fill(contract.AlertNodeServiceTerminated,
				`sum by ($[cluster], $[nodeLabel]) (count_over_time($[scm] | event_id=~"$[terminated]|$[terminatedOnce]" | event_data=~".*<Binary>$[key]0000.*" [10m])) > 0`,
				vocab.Args{"nodeLabel": contract.LabelNode, "scm": scm, "terminated": vocab.SCMTerminated, "terminatedOnce": vocab.SCMTerminatedOnce, "key": vocab.BinaryServiceKey(svc)}),
			Labels: map[string]string{"severity": "critical", "service": svc},
			Annotations: map[string]string{
				"summary": "Service " + svc + " terminated unexpectedly on Windows node {{ $labels.node }}.",
				"description": "The Service Control Manager on {{ $labels.node }} logged " + svc +
					" terminating unexpectedly ({{ $value }} times in 10 minutes, events 7031/7034). Pods on the node may have lost their runtime or network.",
			},
		})
	}
	g.Rules = append(g.Rules, rulefmt.Rule{
		Alert: contract.AlertServiceStartFailed,
		Expr: ts.fill(contract.AlertServiceStartFailed,
			`sum by ($[cluster], $[nodeLabel]) (count_over_time($[scm] | event_id=~"$[failed]|$[timeout]" [15m])) > 0`,
			vocab.Args{"nodeLabel": contract.LabelNode, "scm": scm, "failed": vocab.SCMStartFailed, "timeout": vocab.SCMStartTimeout}),
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary": "A service failed to start on Windows node {{ $labels.node }}.",
			"description": "The Service Control Manager on {{ $labels.node }} logged {{ $value }} start failures or start timeouts (events 7000/7009) in 15 minutes. " +
				"At boot this is often a slow disk; see the event messages for the service.",
		},
	})
	// A container's own event log, as LogMonitor prints it and the pod
	// pipeline tags it (contract's Meta* structured metadata).
	g.Rules = append(g.Rules, rulefmt.Rule{
		Alert: contract.AlertContainerAppCrashed,
		Expr: ts.fill(contract.AlertContainerAppCrashed,
			`sum by ($[cluster], $[namespace], $[pod], $[container], $[source], $[eventID]) (count_over_time($[pods] | $[fromEventLog] | $[crashSources] | $[crashIDs] [10m])) > 0`,
			vocab.Args{
				"namespace": contract.LabelNamespace, "pod": contract.LabelPod, "container": contract.LabelContainer,
				"source": contract.MetaSource, "eventID": contract.MetaEventID, "pods": t.PodLogEntries(),
				"fromEventLog": vocab.Eq(contract.MetaLogMonitor, vocab.LogMonitorEventLog).String(),
				"crashSources": vocab.Re(contract.MetaSource, vocab.AppCrashSources).String(),
				"crashIDs":     vocab.Re(contract.MetaEventID, vocab.AppCrashEventIDs).String(),
			}),
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary": "{{ $labels.source }} {{ $labels.event_id }} in Windows container {{ $labels.namespace }}/{{ $labels.pod }}/{{ $labels.container }}.",
			"description": "The container's own event log reported {{ $value }} application crash events ({{ $labels.source }} {{ $labels.event_id }}) in 10 minutes: " +
				"a process inside the container crashed, hung or died of an unhandled .NET exception. The pod may still look Running: IIS restarts a crashed worker process.",
		},
	})
	g.Rules = append(g.Rules, detectionRules(v, ts)...)
	for i := range g.Rules {
		g.Rules[i].Annotations["runbook_url"] = RunbookURL(v.Alerts.RunbookURL, g.Rules[i].Alert)
	}
	if err := ts.err(); err != nil {
		return rulefmt.RuleGroups{}, err
	}
	return rulefmt.RuleGroups{Groups: []rulefmt.RuleGroup{g}}, nil
}

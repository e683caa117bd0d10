package dashboards

//lint:file-ignore SA1019 Classic dashboard JSON is what kube-prometheus-stack's Grafana sidecar provisions; the SDK marks it deprecated in favour of dashboardv2, which winobs renders only as an opt-in.

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

func events(v view.Dashboards, q queries) *dashboard.DashboardBuilder {
	return newDashboard(v, q, EventsUID,
		"Windows event logs and pod logs in Loki, as Alloy's loki.source.windowsevent and winobs's eventlog-shipper write them.",
		lokiVar).
		WithVariable(queryVar(nodeVar.Value, lokiDS, lokiValues(q.t.Events(), contract.LabelNode), true)).
		WithVariable(choiceVar(channelVar.Value, v.Channels)).
		WithVariable(choiceVar("level", []string{"Critical", "Error", "Warning", "Information", "Verbose"})).
		WithVariable(textVar(contract.MetaEventID, ".+")).
		WithVariable(queryVar("namespace", lokiDS, lokiValues(q.t.PodLogs(), "namespace"), true)).
		WithVariable(queryVar("pod", lokiDS, lokiValues(q.t.PodLogs(vocab.Var("namespace", "=~", "namespace")), "pod"), true)).
		WithVariable(queryVar("container", lokiDS, lokiValues(q.t.PodLogs(vocab.Var("namespace", "=~", "namespace"), podVar), "container"), true)).
		WithVariable(textVar("search", "")).
		WithRow(dashboard.NewRowBuilder("Events")).
		WithPanel(graph("Event rate by channel, level and provider", "Events per interval.",
			unitEvents, []query{logQL(q.eventRate(), "{{channel}} {{levelText}} {{source}}")}).Span(24)).
		WithPanel(grid("Service Control Manager events per node",
			"7000/7009: a service failed to start or timed out (often a slow disk at boot); 7031/7034: a service terminated unexpectedly; 7036: state changes.",
			unitEvents, []query{logQLTable(q.scmTable())}, nil, "")).
		WithPanel(logLines("Events", "Filtered by node, channel, level, event id (regex) and text.", logQL(q.eventLogs(), ""))).
		WithRow(dashboard.NewRowBuilder("Security and node operations")).
		WithPanel(graph("Security events by id",
			"Security events per interval by event id, as the security event set forwards them (docs/events.md): 4625 failed logons, 4740 lockouts, 4720-4757 account and group changes, 1102 the log cleared.",
			unitEvents, []query{logQL(q.securityRate(), "{{event_id}}")})).
		WithPanel(graph("HNS and HCS errors per node",
			"Critical and error events of the Host Network Service (pod networking) and the Host Compute Service (container create and start), per node and channel.",
			unitEvents, []query{logQL(q.hostServiceErrors(), "{{node}} {{channel}}")})).
		WithPanel(grid("Failed logons per node and account",
			"Security event 4625 over the time range: the brute-force detection fires at 20 in 10 minutes for one account on one node.",
			unitEvents, []query{logQLTable(q.failedLogons())}, nil, "")).
		WithRow(dashboard.NewRowBuilder("Windows containers' own events")).
		WithPanel(graph("Container event log and ETW entries by level",
			"Entries per interval from the containers' own event logs and ETW providers, as LogMonitor prints them to stdout; containers without LogMonitor have none.",
			unitEvents, []query{logQL(q.containerEventRate(), "{{namespace}}/{{pod}} {{level}}")}).Span(24)).
		WithPanel(logLines("Container events",
			"A container's own event log and ETW entries, filtered by node, namespace, pod, container and text; the level, channel, source and event id are the entry's structured metadata.",
			logQL(q.containerEvents(), ""))).
		WithRow(dashboard.NewRowBuilder("Windows pod logs")).
		WithPanel(logLines("Pod logs", "Container output from C:\\var\\log\\pods, filtered by node, namespace, pod, container and text.", logQL(q.podLogLines(), "")))
}

// choiceVar is a custom variable of these values, several or All (".*")
// chosen. Grafana reads the values separated by commas, a comma inside a
// value escaped.
func choiceVar(name string, values []string) *dashboard.CustomVariableBuilder {
	escaped := make([]string, len(values))
	for i, v := range values {
		escaped[i] = strings.ReplaceAll(v, ",", `\,`)
	}
	return dashboard.NewCustomVariableBuilder(name).Label(name).
		Values(dashboard.StringOrMap{String: cog.ToPtr(strings.Join(escaped, ","))}).
		Multi(true).IncludeAll(true).AllValue(".*")
}

func textVar(name, def string) *dashboard.TextBoxVariableBuilder {
	return dashboard.NewTextBoxVariableBuilder(name).Label(name).DefaultValue(dashboard.StringOrMap{String: &def}).
		Current(dashboard.VariableOption{Text: str(def), Value: str(def)})
}

// Package alloy builds Grafana Alloy's configuration and HostProcess
// DaemonSet for Windows nodes: pod logs from C:\var\log\pods (LogMonitor's
// lines parsed into structured metadata) and event log channels, pushed to
// Loki through an address the node network reaches; and the LogMonitor
// config for Windows container images that matches the pod pipeline.
package alloy

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/grafana/alloy/syntax/ast"
	"github.com/grafana/alloy/syntax/parser"
	"github.com/grafana/alloy/syntax/token"
	"github.com/grafana/alloy/syntax/token/builder"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/nodeagent"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

// expr is an Alloy expression written as is (a reference or a call), where
// the builder would otherwise quote a string.
type expr string

// AlloyTokenize implements builder.Tokenizer.
func (e expr) AlloyTokenize() []builder.Token {
	return []builder.Token{{Tok: token.LITERAL, Lit: string(e)}}
}

const nodeName = expr(`sys.env("` + nodeagent.NodeNameEnv + `")`)

// Pod log path on Windows nodes: C:\var\log\pods\<ns>_<pod>_<uid>\<container>\N.log.
const podLogPattern = `C:\var\log\pods\*$1\*.log`

// Config returns config.alloy for v. The text is parsed back with Alloy's
// own parser and must hold a component for every configured channel: the
// builder's printer drops what it cannot print, and an Alloy that runs
// without a channel ships nothing from it without a word.
func Config(v view.Alloy) ([]byte, error) {
	f := builder.NewFile()
	body := f.Body()
	for _, b := range podLogBlocks(v) {
		body.AppendBlock(b)
	}
	subs, err := v.EventLog.Subscriptions()
	if err != nil {
		return nil, err
	}
	for _, sub := range subs {
		body.AppendBlock(eventBlock(v, sub))
	}
	if len(subs) > 0 {
		body.AppendBlock(eventProcessBlock(v.Logs.StructuredMetadata))
	}
	body.AppendBlock(writeBlock(v))
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("printing config.alloy: %w", err)
	}
	buf.WriteByte('\n')
	parsed, err := parser.ParseFile("config.alloy", buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("config.alloy does not parse: %w", err)
	}
	components := map[string]bool{}
	for _, stmt := range parsed.Body {
		if b, ok := stmt.(*ast.BlockStmt); ok {
			components[strings.Join(b.Name, ".")+" "+b.Label] = true
		}
	}
	for _, sub := range subs {
		if !components[windowsEventComponent+" "+sub.ComponentLabel()] {
			return nil, fmt.Errorf("config.alloy lacks the component of channel %q", sub.Name)
		}
	}
	return buf.Bytes(), nil
}

const windowsEventComponent = "loki.source.windowsevent"

func block(name, label string, attrs ...any) *builder.Block {
	b := builder.NewBlock(strings.Split(name, "."), label)
	for i := 0; i+1 < len(attrs); i += 2 {
		b.Body().SetAttributeValue(attrs[i].(string), attrs[i+1])
	}
	return b
}

// relabel is one discovery.relabel rule.
func relabel(sources []string, target string, extra ...any) *builder.Block {
	attrs := []any{"target_label", target}
	if len(sources) > 0 {
		attrs = append([]any{"source_labels", sources}, attrs...)
	}
	return block("rule", "", append(attrs, extra...)...)
}

// raw writes s as an Alloy raw string (`...`), which keeps regular
// expressions and LogQL readable in the rendered config; a string holding
// a backtick is quoted as usual.
func raw(s string) any {
	if strings.Contains(s, "`") {
		return s
	}
	return expr("`" + s + "`")
}

// literalReplacement is a relabel replacement that yields s as it is: the
// relabel grammar expands $1, ${name} and $$, so every '$' is doubled.
func literalReplacement(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func podLogBlocks(v view.Alloy) []*builder.Block {
	// Only this node's pods: the API server filters by spec.nodeName.
	discover := block("discovery.kubernetes", "pods", "role", "pod")
	discover.Body().AppendBlock(block("selectors", "", "role", "pod",
		"field", expr(`"spec.nodeName=" + `+string(nodeName))))

	rel := block("discovery.relabel", "pods", "targets", expr("discovery.kubernetes.pods.targets"))
	for _, r := range []*builder.Block{
		relabel([]string{"__meta_kubernetes_namespace"}, contract.LabelNamespace),
		relabel([]string{"__meta_kubernetes_pod_name"}, contract.LabelPod),
		relabel([]string{"__meta_kubernetes_pod_container_name"}, contract.LabelContainer),
		// app: the recommended label, else the classic one.
		relabel([]string{"__meta_kubernetes_pod_label_app_kubernetes_io_name", "__meta_kubernetes_pod_label_app"}, contract.LabelApp,
			"separator", ";", "regex", "^;*([^;]+)(;.*)?$", "replacement", "$1"),
		relabel([]string{"__meta_kubernetes_pod_node_name"}, contract.LabelNode),
		relabel(nil, contract.LabelJob, "replacement", literalReplacement(v.Logs.PodLogsJob)),
		relabel([]string{"__meta_kubernetes_pod_uid", "__meta_kubernetes_pod_container_name"}, "__path__",
			"separator", `\`, "replacement", podLogPattern),
	} {
		rel.Body().AppendBlock(r)
	}

	match := block("local.file_match", "pods", "path_targets", expr("discovery.relabel.pods.output"))
	source := block("loki.source.file", "pods",
		"targets", expr("local.file_match.pods.targets"),
		"forward_to", []expr{"loki.process.pods.receiver"})
	process := block("loki.process", "pods", "forward_to", []expr{"loki.write.default.receiver"})
	process.Body().AppendBlock(block("stage.cri", ""))
	if v.Logs.StructuredMetadata {
		// Without it, the rules and dashboards read LogMonitor's fields
		// from the line (vocab.Terms.PodLogEntries).
		for _, b := range logMonitorStages(v) {
			process.Body().AppendBlock(b)
		}
	}
	return []*builder.Block{discover, rel, match, source, process}
}

// LogMonitor's shapes (its lines in tests/alloy/testdata/logmonitor.jsonl): its
// JSON lines start with the source type, with or without a space after the
// colon (EventLog and File put one, ETW and Process do not); its own
// diagnostics are plain text. The patterns are anchored, so no other line
// pays more than a failed prefix match.
const (
	logMonitorJSON       = `^\{"Source": ?"(?P<lm_logmonitor>EventLog|ETW|File|Process)",`
	logMonitorDiagnostic = `^\[[^\]]*\]\[LOGMONITOR\] (?P<lm_level>[A-Z]+): `
	// logMonitorEventLog reads an EventLog line's fields, which come in a
	// fixed order before the message: LogMonitor before 2.2 leaves a TAB or
	// other control character of the message raw, which no JSON parser
	// accepts, and the event must keep its level, channel and id anyway.
	logMonitorEventLog = `^\{"Source": ?"EventLog","LogEntry": ?\{(?:"EventSource": ?"(?P<lm_event_source>[^"\\]*)",)?"Time": ?"[^"]*",` +
		`"Channel": ?"(?P<lm_channel>[^"\\]*)","Level": ?"(?P<lm_level>\w+)","EventId": ?(?P<lm_event_id>\d+),`
	// logMonitorETW reads an ETW line's fields before its EventData, where
	// LogMonitor writes a value of digits unquoted, so "007" makes the line
	// invalid JSON in every version.
	logMonitorETW = `^\{"Source":"ETW","LogEntry":\{"Time":"[^"]*","ProviderName":"(?P<lm_provider>[^"\\]*)",` +
		`"ProviderId":"[^"]*","DecodingSource":"[^"]*","Execution":\{[^}]*\},"Level":"(?P<lm_level>\w+)",` +
		`"Keyword":"[^"]*","EventId":"(?P<lm_event_id>[^"\\]*)",`
)

// logMonitorFields are LogMonitor's JSON fields (JMESPath) by the
// extracted name the stages give them.
var logMonitorFields = map[string]any{
	"lm_level":        "LogEntry.Level",
	"lm_channel":      "LogEntry.Channel",
	"lm_event_source": "LogEntry.EventSource",
	"lm_provider":     "LogEntry.ProviderName",
	"lm_event_id":     "LogEntry.EventId",
	"lm_file":         "LogEntry.FileName",
}

// levelTemplate maps LogMonitor's levels (EventLog and ETW spell them
// Critical, Error, Warning, Information, Verbose, and ETW's level 0 None;
// its diagnostics ERROR, WARNING, INFO) to Loki's canonical ones, so every
// Loki 3.x shows the same detected_level (Loki < 3.6 maps no
// "Information", none maps "Verbose", and Loki < 3.5 never reads a nested
// JSON level at all).
var levelTemplate = `{{ with .lm_level }}{{ $l := ToLower . }}` +
	`{{ if eq $l "critical" "error" "info" }}{{ $l }}` +
	`{{ else if eq $l "warning" }}` + contract.LevelWarn +
	`{{ else if eq $l "information" }}` + contract.LevelInfo +
	`{{ else if eq $l "verbose" }}` + contract.LevelDebug +
	`{{ else }}` + contract.LevelUnknown + `{{ end }}{{ end }}`

// logMonitorStages parse LogMonitor's lines into structured metadata
// (contract's Meta* names) and leave the line and its CRI time as they are:
// a Process line that is not valid JSON (LogMonitor 2.1.2+ does not escape
// the app's output) still gets its source type and keeps its text, and
// every other line passes untouched. The event's own time is not used: it
// has whole seconds (identical lines in one second would be deduplicated
// by Loki) and startAtOldestRecord replays old times on every start.
func logMonitorStages(v view.Alloy) []*builder.Block {
	pods := vocab.Selector{vocab.Eq(contract.LabelJob, v.Logs.PodLogsJob)}.String()
	metadata := func(names ...string) *builder.Block {
		values := map[string]any{}
		for _, n := range names {
			values[n] = "lm_" + n
		}
		return block("stage.structured_metadata", "", "values", values)
	}
	level := func() *builder.Block {
		return block("stage.template", "", "source", "lm_level", "template", levelTemplate)
	}

	parsed := block("stage.match", "",
		"selector", raw(pods+" |~ "+strconv.Quote(logMonitorJSON)), "pipeline_name", "logmonitor_json")
	for _, b := range []*builder.Block{
		block("stage.regex", "", "expression", raw(logMonitorJSON)),
		block("stage.regex", "", "expression", raw(logMonitorEventLog)),
		block("stage.regex", "", "expression", raw(logMonitorETW)),
		// Valid JSON (most lines) overrides the prefixes' values with
		// properly unescaped ones.
		block("stage.json", "", "expressions", logMonitorFields),
		// ETW's TraceLogging and WPP events have an empty id: no metadata.
		block("stage.template", "", "source", "lm_event_id", "template", "{{ with .lm_event_id }}{{ . }}{{ end }}"),
		block("stage.template", "", "source", "lm_source",
			"template", `{{ if .lm_event_source }}{{ .lm_event_source }}{{ else if .lm_provider }}{{ .lm_provider }}{{ end }}`),
		level(),
		metadata(contract.PodLogMetadata...),
	} {
		parsed.Body().AppendBlock(b)
	}

	diagnostic := block("stage.match", "",
		"selector", raw(pods+" |~ "+strconv.Quote(logMonitorDiagnostic)), "pipeline_name", "logmonitor_diagnostic")
	for _, b := range []*builder.Block{
		block("stage.regex", "", "expression", raw(logMonitorDiagnostic)),
		block("stage.template", "", "source", "lm_"+contract.MetaLogMonitor, "template", "LogMonitor"),
		level(),
		metadata(contract.MetaLogMonitor, contract.MetaLevel),
	} {
		diagnostic.Body().AppendBlock(b)
	}
	return []*builder.Block{parsed, diagnostic}
}

func eventBlock(v view.Alloy, sub config.Subscription) *builder.Block {
	label := sub.ComponentLabel()
	return block(windowsEventComponent, label,
		"eventlog_name", sub.Name,
		// The channel's one query, as the shipper subscribes with it.
		"xpath_query", sub.Query,
		// A fixed locale gives the same levelText on every node.
		"locale", v.EventLog.Locale,
		// One bookmark per component, on the node's disk.
		"bookmark_path", windowsJoin(v.Alloy.StoragePath, "bookmarks", label+".xml"),
		"labels", map[string]any{contract.LabelJob: v.Logs.EventsJob, contract.LabelNode: nodeName},
		"forward_to", []expr{"loki.process.events.receiver"})
}

// eventProcessBlock gives every event the stream class of its own channel
// (windowsevent labels each event with the channel its <Channel> names, a
// collector's ForwardedEvents included) and, with metadata, moves the
// channel into structured metadata: a node's channels share its two
// streams, as the eventlog-shipper writes them. Without, the channel stays
// a stream label (logs.structuredMetadata: false).
func eventProcessBlock(metadata bool) *builder.Block {
	process := block("loki.process", "events", "forward_to", []expr{"loki.write.default.receiver"})
	security := vocab.Selector{vocab.Eq(contract.LabelChannel, contract.ChannelSecurity)}
	for _, c := range []struct {
		sel   vocab.Selector
		class string
	}{
		{security, contract.ClassSecurity},
		{vocab.Selector{vocab.NotEq(contract.LabelChannel, contract.ChannelSecurity)}, contract.ClassNode},
	} {
		match := block("stage.match", "", "selector", raw(c.sel.String()))
		match.Body().AppendBlock(block("stage.static_labels", "", "values", map[string]any{contract.LabelClass: c.class}))
		process.Body().AppendBlock(match)
	}
	if metadata {
		// A label named in values moves to structured metadata.
		process.Body().AppendBlock(block("stage.structured_metadata", "", "values", map[string]any{contract.LabelChannel: ""}))
	}
	return process
}

func writeBlock(v view.Alloy) *builder.Block {
	ep := block("endpoint", "", "url", v.Loki.URL)
	l := v.Loki
	if l.Tenant != "" {
		ep.Body().SetAttributeValue("tenant_id", l.Tenant)
	}
	if l.BearerTokenFile != "" {
		ep.Body().SetAttributeValue("bearer_token_file", l.BearerTokenFile)
	}
	if l.BasicAuth.Username != "" {
		ep.Body().AppendBlock(block("basic_auth", "", "username", l.BasicAuth.Username, "password_file", l.BasicAuth.PasswordFile))
	}
	if l.CAFile != "" {
		ep.Body().AppendBlock(block("tls_config", "", "ca_file", l.CAFile))
	}
	w := block("loki.write", "default")
	w.Body().AppendBlock(ep)
	if v.Cluster.Multi() {
		w.Body().SetAttributeValue("external_labels", map[string]string{v.Cluster.Label: v.Cluster.Name})
	}
	return w
}

// windowsJoin joins a Windows directory and path elements.
func windowsJoin(dir string, elems ...string) string {
	return strings.TrimRight(dir, `\`) + `\` + strings.Join(elems, `\`)
}

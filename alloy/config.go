// Package alloy builds Grafana Alloy's configuration and HostProcess
// DaemonSet for Windows nodes: pod logs from C:\var\log\pods and event log
// channels, pushed to Loki through an address the node network reaches.
package alloy

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/grafana/alloy/syntax/ast"
	"github.com/grafana/alloy/syntax/parser"
	"github.com/grafana/alloy/syntax/token"
	"github.com/grafana/alloy/syntax/token/builder"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/nodeagent"
	"github.com/winobs/winobs/view"
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
	for _, ch := range v.EventLog.Channels {
		body.AppendBlock(eventBlock(v, ch))
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
	for _, ch := range v.EventLog.Channels {
		if !components[windowsEventComponent+" "+ch.ComponentLabel()] {
			return nil, fmt.Errorf("config.alloy lacks the component of channel %q", ch.Name)
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
	return []*builder.Block{discover, rel, match, source, process}
}

func eventBlock(v view.Alloy, ch config.Channel) *builder.Block {
	label := ch.ComponentLabel()
	return block(windowsEventComponent, label,
		"eventlog_name", ch.Name,
		"xpath_query", ch.XPath(),
		// A fixed locale gives the same levelText on every node.
		"locale", v.EventLog.Locale,
		// One bookmark per component, on the node's disk.
		"bookmark_path", windowsJoin(v.Alloy.StoragePath, "bookmarks", label+".xml"),
		"labels", map[string]any{contract.LabelJob: v.Logs.EventsJob, contract.LabelNode: nodeName},
		"forward_to", []expr{"loki.write.default.receiver"})
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

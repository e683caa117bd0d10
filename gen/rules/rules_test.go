package rules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"
	corev1 "k8s.io/api/core/v1"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

func defaultConfig(*testing.T) *config.Config { return config.Default() }

// lokiRules are the Loki ruler's rules for cfg.
func lokiRules(t *testing.T, cfg *config.Config) []rulefmt.Rule {
	t.Helper()
	g, err := LokiGroups(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	return g.Groups[0].Rules
}

// Every alert links to a runbook section that exists and says how to confirm
// the problem from both sides: a query and a command on the node.
func TestRunbooks(t *testing.T) {
	doc, err := os.ReadFile("../../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, s := range strings.Split(string(doc), "\n## ")[1:] {
		title, body, _ := strings.Cut(s, "\n")
		sections[strings.ToLower(title)] = body
	}
	cfg := defaultConfig(t)
	groups, err := Build(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	alerts := append(groups.Groups[1].Rules, lokiRules(t, cfg)...)
	for _, r := range alerts {
		url := r.Annotations["runbook_url"]
		anchor := url[strings.LastIndex(url, "#")+1:]
		body, ok := sections[anchor]
		switch {
		case !strings.HasPrefix(url, "https://github.com/winobs/winobs/blob/main/docs/runbooks.md#"):
			t.Errorf("%s: runbook_url %q", r.Alert, url)
		case !ok:
			t.Errorf("%s: docs/runbooks.md has no section %q", r.Alert, anchor)
		case !strings.Contains(body, "```promql") && !strings.Contains(body, "```logql") || !strings.Contains(body, "```powershell") ||
			!strings.Contains(body, "**Meaning.**") || !strings.Contains(body, "**Act.**"):
			t.Errorf("%s: runbook section lacks meaning, a PromQL or LogQL and a PowerShell check, or actions", r.Alert)
		}
	}
}

// The config is the one source of thresholds, selectors and labels.
func TestBuildFollowsConfig(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Cluster.Label = "k8s_cluster"
	cfg.WindowsExporter.Job = "integrations/windows-exporter"
	cfg.KubeStateMetrics.Job = "ksm"
	cfg.Alerts.NodeCommit.Warning = 0.8
	cfg.Alerts.NodeServices.Services = []string{"kubelet", "hns", "vmcompute.v2"}
	cfg.Alerts.RunbookURL = "https://runbooks.example.com/windows"
	groups, err := Build(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			all.WriteString(r.Expr + "\n" + r.Annotations["runbook_url"] + "\n")
		}
	}
	text := all.String()
	for _, want := range []string{
		`job="integrations/windows-exporter"`, `job="ksm"`, "by (k8s_cluster, container_id)",
		"instance:winobs_windows_memory_commit:ratio > 0.8\n",
		`name=~"(?i)(kubelet|hns|vmcompute\\.v2)"`,
		"https://runbooks.example.com/windows#windowsnodecommitchargehigh",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rules do not contain %q", want)
		}
	}
	for _, unwanted := range []string{`job="windows-exporter"`, `job="kube-state-metrics"`, "(cluster,"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("rules still contain the default %q", unwanted)
		}
	}
}

func TestDedent(t *testing.T) {
	got := dedent("\n\t\tsum by (a) (\n\t\t  x\n\n\t\t)\n\t")
	if want := "sum by (a) (\n  x\n\n)"; got != want {
		t.Errorf("dedent = %q, want %q", got, want)
	}
}

func TestSupportedVersions(t *testing.T) {
	re := regexp.MustCompile("^(?:" + vocab.SupportedExporterVersions + ")$")
	for v, want := range map[string]bool{"0.29.2": true, "0.30.6": true, "v0.31.8": true, "0.32.0": false, "0.28.1": false, "1.0.0": false} {
		if re.MatchString(v) != want {
			t.Errorf("version %s supported = %v, want %v", v, !want, want)
		}
	}
}

// The binary payload of the real 7031 sample (wuauserv) is what the Loki rule
// matches for a service key, NUL-terminated so "hns" cannot match "hnsfoo".
func TestBinaryServiceKeyMatchesRealEvent(t *testing.T) {
	const eventData = "<Data Name='param1'>Windows Update</Data><Data Name='param2'>1</Data><Binary>770075006100750073006500720076000000</Binary>"
	match := regexp.MustCompile(".*<Binary>" + vocab.BinaryServiceKey("wuauserv") + "0000.*")
	if !match.MatchString(eventData) {
		t.Errorf("pattern %s does not match the sample", match)
	}
	if regexp.MustCompile(".*<Binary>" + vocab.BinaryServiceKey("wuau") + "0000.*").MatchString(eventData) {
		t.Error("a prefix of the key matched")
	}
}

// The Loki rules ConfigMap carries the rule file byte for byte, under the
// label the Loki chart's sidecar selects, in the namespace it searches;
// configMap: false leaves it out.
func TestLokiRulesConfigMap(t *testing.T) {
	cfg := config.Default()
	cfg.LokiRules.Namespace, cfg.LokiRules.Label, cfg.LokiRules.LabelValue = "loki", "example.com/loki-rule", "yes"
	files, err := Files(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	var cm *corev1.ConfigMap
	for _, f := range files {
		switch f.Path {
		case "loki-rules/" + LokiGroup + ".yaml":
			raw = f.Raw
		case "loki/" + LokiGroup + ".yaml":
			cm = f.Objects[0].(*corev1.ConfigMap)
		}
	}
	if cm == nil || raw == nil {
		t.Fatal("no ConfigMap or rule file")
	}
	if cm.Namespace != "loki" || cm.Labels["example.com/loki-rule"] != "yes" || cm.Data[LokiGroup+".yaml"] != string(raw) {
		t.Errorf("%+v", cm.ObjectMeta)
	}
	cfg.LokiRules.ConfigMap = false
	files, _ = Files(view.Of(cfg).Rules)
	for _, f := range files {
		if strings.HasPrefix(f.Path, "loki/") {
			t.Errorf("%s rendered with configMap: false", f.Path)
		}
	}
}

// docs/rulers.md states the default render's group sizes: they are the
// rendered ones.
func TestRulersDocCountsTheRules(t *testing.T) {
	doc, err := os.ReadFile("../../docs/rulers.md")
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig(t)
	groups, err := Build(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group, kind string
		n           int
	}{
		{RecordsGroup, "records", len(groups.Groups[0].Rules)},
		{AlertsGroup, "alerts", len(groups.Groups[1].Rules)},
		{LokiGroup, "alerts", len(lokiRules(t, cfg))},
	} {
		m := regexp.MustCompile("\\| `" + regexp.QuoteMeta(tc.group) + "`[^|]*\\| (\\d+) " + tc.kind).FindSubmatch(doc)
		if m == nil || string(m[1]) != strconv.Itoa(tc.n) {
			t.Errorf("docs/rulers.md: %s has %d %s, the doc says %q", tc.group, tc.n, tc.kind, m)
		}
	}
}

// Rule expressions are written one way: a template literal whose values
// arrive through placeholders (vocab's Expand), or one of vocab's views
// (itself a template). No expression is spliced together in Go: every
// alert's expr, every record's expression and every Loki rule's template
// is a string literal or a view call.
func TestExpressionsAreTemplates(t *testing.T) {
	fset := token.NewFileSet()
	isTemplate := func(e ast.Expr) bool {
		if lit, ok := e.(*ast.BasicLit); ok {
			return lit.Kind == token.STRING
		}
		call, ok := e.(*ast.CallExpr)
		if !ok {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		return ok && strings.HasSuffix(sel.Sel.Name, "View")
	}
	checked := 0
	for _, file := range []string{"alerts.go", "records.go", "loki.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var e ast.Expr
			switch n := n.(type) {
			case *ast.KeyValueExpr: // alertDef{expr: ...}
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "expr" {
					e = n.Value
				}
			case *ast.CompositeLit: // {record, expr}
				if len(n.Elts) == 2 {
					if sel, ok := n.Elts[0].(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "Records" {
							e = n.Elts[1]
						}
					}
				}
			case *ast.CallExpr: // ts.fill(name, template, args)
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "fill" && len(n.Args) == 3 {
					e = n.Args[1]
				}
			}
			if e != nil {
				checked++
				if !isTemplate(e) {
					t.Errorf("%s: an expression built in Go; write a template with placeholders", fset.Position(e.Pos()))
				}
			}
			return true
		})
	}
	if checked < 35 {
		t.Errorf("checked only %d expressions", checked)
	}
}

// config.EventReaders, from which gen warns that an exclusion leaves an
// alert blind, holds exactly the Loki alerts that read an event channel,
// each with the channel, ids and levels its query reads.
func TestEventReadersAreTheAlerts(t *testing.T) {
	byAlert := map[string][]config.EventReader{}
	for _, r := range config.EventReaders {
		byAlert[r.Alert] = append(byAlert[r.Alert], r)
	}
	seen := map[string]bool{}
	for _, r := range lokiRules(t, defaultConfig(t)) {
		readers, ok := byAlert[r.Alert]
		if !ok {
			if strings.Contains(r.Expr, `channel="`) || strings.Contains(r.Expr, `channel=~"`) {
				t.Errorf("%s reads an event channel and is missing from config.EventReaders: %s", r.Alert, r.Expr)
			}
			continue
		}
		seen[r.Alert] = true // once, though one rule a node service
		var channels []string
		for _, reader := range readers {
			channels = append(channels, reader.Channel)
		}
		if len(readers) > 1 {
			if w := `channel=~"` + strings.Join(channels, "|") + `"`; !strings.Contains(r.Expr, w) {
				t.Errorf("%s: config.EventReaders says it reads %s, its query does not: %s", r.Alert, w, r.Expr)
			}
		}
		for _, reader := range readers {
			checkReader(t, r, reader, len(readers) > 1)
		}
	}
	if len(seen) != len(byAlert) {
		t.Errorf("%d alerts of config.EventReaders rendered, it lists %d", len(seen), len(byAlert))
	}
}

// checkReader holds one alert's query to what reader says it reads: its
// ids (each compared alone where the alert reads several channels), its
// levels and its channel.
func checkReader(t *testing.T, r rulefmt.Rule, reader config.EventReader, several bool) {
	t.Helper()
	{
		var ids, levels []string
		for _, id := range reader.IDs {
			ids = append(ids, strconv.Itoa(id))
		}
		for _, l := range reader.Levels {
			levels = append(levels, strconv.Itoa(l))
		}
		var want []string
		switch {
		case len(ids) == 1:
			want = append(want, `event_id="`+ids[0]+`"`)
		case len(ids) > 1:
			want = append(want, `event_id=~"`+strings.Join(ids, "|")+`"`)
		}
		if len(levels) > 0 {
			want = append(want, `level=~"`+strings.Join(levels, "|")+`"`)
		}
		if !several {
			want = append(want, `channel="`+reader.Channel+`"`)
		}
		for _, w := range want {
			if !strings.Contains(r.Expr, w) {
				t.Errorf("%s: config.EventReaders says it reads %s, its query does not: %s", r.Alert, w, r.Expr)
			}
		}
	}
}

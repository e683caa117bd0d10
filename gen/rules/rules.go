// Package rules builds winobs's Prometheus recording and alerting rules for
// Windows nodes and containers: as rule files for any Prometheus-compatible
// ruler and as prometheus-operator PrometheusRule objects.
package rules

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/meta"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

// Build returns the rule groups. Every expression is parsed and the encoded
// groups pass the same checks as `promtool check rules`.
func Build(v view.Rules) (rulefmt.RuleGroups, error) {
	groups, _, err := build(v)
	return groups, err
}

// build returns the groups and, for each, its checked rule-file encoding.
func build(v view.Rules) (rulefmt.RuleGroups, [][]byte, error) {
	p := parser.NewParser(parser.Options{})
	t := v.Terms
	ts := &templates{t: t, parse: func(s string) error { _, err := p.ParseExpr(s); return err }}

	recs := rulefmt.RuleGroup{Name: RecordsGroup}
	for _, r := range recordDefs(t) {
		recs.Rules = append(recs.Rules, rulefmt.Rule{Record: r.record, Expr: ts.fill(r.record, r.expr, nil)})
	}
	alerts := rulefmt.RuleGroup{Name: AlertsGroup}
	for _, a := range alertDefs(t, &v.Alerts) {
		alerts.Rules = append(alerts.Rules, rulefmt.Rule{
			Alert:  a.name,
			Expr:   ts.fill(a.name, a.expr, a.args),
			For:    a.hold.Model(),
			Labels: map[string]string{"severity": a.severity},
			Annotations: map[string]string{
				"summary":     a.summary,
				"description": a.description,
				"runbook_url": RunbookURL(v.Alerts.RunbookURL, a.name),
			},
		})
	}
	if err := ts.err(); err != nil {
		return rulefmt.RuleGroups{}, nil, err
	}
	groups := rulefmt.RuleGroups{Groups: []rulefmt.RuleGroup{recs, alerts}}
	raws := make([][]byte, len(groups.Groups))
	for i, g := range groups.Groups {
		raw, err := encodeGroup(g, p)
		if err != nil {
			return rulefmt.RuleGroups{}, nil, err
		}
		raws[i] = raw
	}
	return groups, raws, nil
}

// RunbookURL is the runbook link of an alert: every alert gets it here, from
// one base, with the anchor GitHub gives the alert's heading.
func RunbookURL(base, alert string) string {
	return base + "#" + strings.ToLower(alert)
}

// Files renders the groups as plain rule files (rules/) and, for a
// Prometheus that loads them, as PrometheusRule objects (prometheus/), one
// file per group in each; the event log alerts
// for the Loki ruler (loki-rules/); and both as ruler namespaces for
// mimirtool/cortextool and lokitool (ruler/mimir/, ruler/loki/).
func Files(v view.Rules) ([]render.File, error) {
	groups, raws, err := build(v)
	if err != nil {
		return nil, err
	}
	var files []render.File
	for i, g := range groups.Groups {
		files = append(files, render.File{Path: "rules/" + g.Name + ".yaml", Raw: raws[i]})
		// A managed Prometheus reads no PrometheusRule, and its cluster
		// has no such CRD for kubectl apply -k to take: its own format is
		// rendered beside (package azuremonitor).
		if v.Managed == "" {
			files = append(files, render.File{Path: "prometheus/" + g.Name + ".yaml", Objects: []any{prometheusRule(v, g)}})
		}
	}
	loki, err := LokiGroups(v)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path string
		v    any
	}{
		{"loki-rules/" + LokiGroup + ".yaml", loki},
		{"ruler/mimir/" + MetricsNamespace(v.Ruler) + ".yaml", RulerNamespace{Namespace: MetricsNamespace(v.Ruler), Groups: groups.Groups}},
		{"ruler/loki/" + LogsNamespace(v.Ruler) + ".yaml", RulerNamespace{Namespace: LogsNamespace(v.Ruler), Groups: loki.Groups}},
	} {
		raw, err := render.EncodeYAML(f.v)
		if err != nil {
			return nil, err
		}
		files = append(files, render.File{Path: f.path, Raw: raw})
		if f.path == "loki-rules/"+LokiGroup+".yaml" && v.LokiRules.ConfigMap {
			files = append(files, render.File{Path: "loki/" + LokiGroup + ".yaml", Objects: []any{lokiRulesConfigMap(v, raw)}})
		}
	}
	return files, nil
}

// lokiRulesConfigMap holds the Loki rule file for the Loki chart's rules
// sidecar, which writes each key as a file into the ruler's directory.
func lokiRulesConfigMap(v view.Rules, raw []byte) *corev1.ConfigMap {
	ns := v.LokiRules.Namespace
	if ns == "" {
		ns = v.Namespace
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta.Object(ns, "winobs-loki-rules", meta.ComponentRules, map[string]string{v.LokiRules.Label: v.LokiRules.LabelValue}),
		Data:       map[string]string{LokiGroup + ".yaml": string(raw)},
	}
}

// RulerNamespace is a rule file as mimirtool, cortextool and lokitool load,
// diff and sync it: one ruler namespace and its groups.
type RulerNamespace struct {
	Namespace string              `yaml:"namespace"`
	Groups    []rulefmt.RuleGroup `yaml:"groups"`
}

// MetricsNamespace is the ruler namespace of the Prometheus rules.
func MetricsNamespace(r config.Ruler) string { return r.NamespacePrefix + "-windows" }

// ClusterMetricsNamespace is MetricsNamespace with the cluster's name when
// one is set: the name a managed Prometheus's rule group takes (Azure
// Monitor's group, AMP's rule groups namespace), so several clusters' live
// side by side in one workspace, as Azure's own
// (NodeRecordingRulesRuleGroup-Win-<cluster>).
func ClusterMetricsNamespace(r config.Ruler, c config.Cluster) string {
	if c.Name == "" {
		return MetricsNamespace(r)
	}
	return MetricsNamespace(r) + "-" + c.Name
}

// Split is groups with every group of more than max rules cut, in order,
// into groups of at most max rules, named "<group>", "<group>-2", …: what a
// ruler with a per-group limit takes (AMP's quota, Azure Monitor's 20).
// Each part keeps its group's interval and settings; the parts evaluate
// independently, so a rule may read a record of an earlier part as of that
// part's last evaluation, never a later one's.
func Split(groups rulefmt.RuleGroups, max int) rulefmt.RuleGroups {
	var out rulefmt.RuleGroups
	for _, g := range groups.Groups {
		for i := 0; i < len(g.Rules); i += max {
			part := g
			part.Rules = g.Rules[i:min(i+max, len(g.Rules))]
			if i > 0 {
				part.Name = fmt.Sprintf("%s-%d", g.Name, i/max+1)
			}
			out.Groups = append(out.Groups, part)
		}
	}
	return out
}

// LogsNamespace is the ruler namespace of the Loki event log alerts.
func LogsNamespace(r config.Ruler) string { return r.NamespacePrefix + "-windows-events" }

// encodeGroup encodes one group as a rule file and checks it as promtool does.
func encodeGroup(g rulefmt.RuleGroup, p parser.Parser) ([]byte, error) {
	raw, err := render.EncodeYAML(rulefmt.RuleGroups{Groups: []rulefmt.RuleGroup{g}})
	if err != nil {
		return nil, err
	}
	if _, errs := rulefmt.Parse(raw, false, model.LegacyValidation, p, slog.New(slog.DiscardHandler)); len(errs) > 0 {
		return nil, fmt.Errorf("group %s: %w", g.Name, errors.Join(errs...))
	}
	return raw, nil
}

func prometheusRule(v view.Rules, g rulefmt.RuleGroup) *monitoringv1.PrometheusRule {
	om := meta.Object(v.Namespace, g.Name, meta.ComponentRules, v.RuleLabels)
	spec := monitoringv1.RuleGroup{Name: g.Name}
	for _, r := range g.Rules {
		rule := monitoringv1.Rule{
			Record:      r.Record,
			Alert:       r.Alert,
			Expr:        intstr.FromString(r.Expr),
			Labels:      r.Labels,
			Annotations: r.Annotations,
		}
		if r.For != 0 {
			d := monitoringv1.Duration(r.For.String())
			rule.For = &d
		}
		spec.Rules = append(spec.Rules, rule)
	}
	return &monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.PrometheusRuleKind},
		ObjectMeta: om,
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{spec}},
	}
}

// templates fills rule templates from the vocabulary (vocab's Expand) and
// collects every failure, so that one build reports them all. The result is
// dedented, keeping the template's hand-made layout; with parse set it
// must also parse (PromQL: LogQL has no parser here).
type templates struct {
	t     vocab.Terms
	parse func(string) error
	errs  []error
}

// fill returns the rule name's template filled with args.
func (ts *templates) fill(name, tmpl string, args vocab.Args) string {
	s, err := ts.t.Expand(tmpl, args)
	if err == nil {
		s = dedent(s)
		if ts.parse != nil {
			if perr := ts.parse(s); perr != nil {
				err = fmt.Errorf("parsing %q: %w", s, perr)
			}
		}
	}
	if err != nil {
		ts.errs = append(ts.errs, fmt.Errorf("%s: %w", name, err))
	}
	return s
}

// err joins every failure so far (nil when there was none).
func (ts *templates) err() error { return errors.Join(ts.errs...) }

// dedent removes the indentation that all non-blank lines share, and the
// blank lines around the text.
func dedent(s string) string {
	lines := strings.Split(strings.TrimRight(strings.TrimLeft(s, "\n"), " \t\n"), "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t "))
		if common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		if len(l) >= common {
			lines[i] = strings.TrimRight(l[common:], " \t")
		}
	}
	return strings.Join(lines, "\n")
}

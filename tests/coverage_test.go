package tests

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/winobs/winobs/gen/vocab"
)

const manifests = "../manifests"

// loadRenderedGroups parses the committed rule files as promtool would.
func loadRenderedGroups(t *testing.T) []rulefmt.RuleGroup {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(manifests, "rules", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no rendered rule files; run make generate")
	}
	return ruleFileGroups(t, files...)
}

// ruleFileGroups parses rule files as promtool would and returns their
// groups in file order.
func ruleFileGroups(t testing.TB, files ...string) []rulefmt.RuleGroup {
	t.Helper()
	var groups []rulefmt.RuleGroup
	for _, f := range files {
		rgs, errs := rulefmt.ParseFile(f, false, model.LegacyValidation, promqlParser, slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", f, errs)
		}
		groups = append(groups, rgs.Groups...)
	}
	return groups
}

// TestEveryRuleIsTested: every alert has a case where it fires (with
// annotations) and one where it must stay silent; every record has a case
// that checks its exact value.
func TestEveryRuleIsTested(t *testing.T) {
	fires, silent, recorded := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, path := range testFiles(t) {
		for _, tg := range loadTestFile(t, path).Tests {
			for _, at := range tg.AlertRuleTests {
				if len(at.ExpAlerts) == 0 {
					silent[at.Alertname] = true
				}
				for _, ea := range at.ExpAlerts {
					if len(ea.ExpAnnotations) == 0 {
						t.Errorf("%s: %s at %s: a firing case must state its annotations", path, at.Alertname, at.EvalTime)
					}
					fires[at.Alertname] = true
				}
			}
			for _, et := range tg.PromqlExprTests {
				if len(et.ExpSamples) > 0 {
					recorded[strings.TrimSpace(et.Expr)] = true
				}
			}
		}
	}
	for _, g := range loadRenderedGroups(t) {
		for _, r := range g.Rules {
			switch {
			case r.Alert != "" && !fires[r.Alert]:
				t.Errorf("alert %s has no test case where it fires", r.Alert)
			case r.Alert != "" && !silent[r.Alert]:
				t.Errorf("alert %s has no test case where it must not fire", r.Alert)
			case r.Record != "" && !recorded[r.Record]:
				t.Errorf("record %s has no exact-value test case", r.Record)
			}
		}
	}
}

// TestPrometheusRuleMatchesRuleFiles: the PrometheusRule objects hold exactly
// the groups of the plain rule files.
func TestPrometheusRuleMatchesRuleFiles(t *testing.T) {
	for _, g := range loadRenderedGroups(t) {
		raw, err := os.ReadFile(filepath.Join(manifests, "prometheus", g.Name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var cr monitoringv1.PrometheusRule
		if err := yaml.UnmarshalStrict(raw, &cr); err != nil {
			t.Fatal(err)
		}
		// The spec is a valid rule file on its own, as promtool wants it.
		spec, err := yaml.Marshal(cr.Spec)
		if err != nil {
			t.Fatal(err)
		}
		parsed, errs := rulefmt.Parse(spec, false, model.LegacyValidation, promqlParser, slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatalf("%s spec: %v", g.Name, errs)
		}
		if len(parsed.Groups) != 1 || !equalGroups(parsed.Groups[0], g) {
			t.Errorf("PrometheusRule %s differs from rules/%s.yaml", g.Name, g.Name)
		}
	}
}

func equalGroups(a, b rulefmt.RuleGroup) bool {
	return reflect.DeepEqual(a, b)
}

// TestRulesSelectOnlyKnownMetrics catches a misspelt or renamed metric, the
// way kube-prometheus-stack's rules went empty on exporter 0.31.
func TestRulesSelectOnlyKnownMetrics(t *testing.T) {
	groups := loadRenderedGroups(t)
	known := knownMetrics(t, groups)
	for _, g := range groups {
		for _, r := range g.Rules {
			expr, err := promqlParser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, vs := range parser.ExtractSelectors(expr) {
				for _, m := range vs {
					if _, ok := known[m.Value]; m.Name == model.MetricNameLabel && !ok {
						t.Errorf("%s%s selects unknown metric %q", r.Alert, r.Record, m.Value)
					}
				}
			}
		}
	}
}

// kpsNames are the record names of kube-prometheus-stack 88.5.3 /
// kubernetes-mixin (read from the benchmark's copy of its rules) and Azure
// Managed Prometheus for Windows. Prometheus does not refuse two groups
// recording one name; the series would collide.
func kpsNames(t *testing.T) []string {
	names := []string{":windows_node_cpu_utilisation:avg5m", "node:windows_node_cpu_utilisation:avg5m"} // Azure's
	for _, g := range ruleFileGroups(t, kpsRules) {
		for _, r := range g.Rules {
			names = append(names, r.Record)
		}
	}
	if len(names) != 34 {
		t.Fatalf("%s: %d record names, want kube-prometheus-stack's 32 and Azure's 2", kpsRules, len(names))
	}
	return names
}

var recordName = regexp.MustCompile(`^[a-z_]+:winobs_[a-z0-9_]+:[a-z0-9_]+$`)

// TestRecordNamesAreOurs: no record may take a kube-prometheus-stack, Azure
// or raw exporter name, and every one has the winobs marker and the
// level:metric:operations shape.
func TestRecordNamesAreOurs(t *testing.T) {
	groups := loadRenderedGroups(t)
	raw := knownMetrics(t, nil) // exporter and KSM names only
	theirs := kpsNames(t)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			if !recordName.MatchString(r.Record) {
				t.Errorf("record %s does not follow level:winobs_metric:operations", r.Record)
			}
			if slices.Contains(theirs, r.Record) {
				t.Errorf("record %s collides with kube-prometheus-stack", r.Record)
			}
			if src, ok := raw[r.Record]; ok {
				t.Errorf("record %s collides with a %s metric", r.Record, src)
			}
		}
	}
	// Every record name of the vocabulary is recorded by a rule, and every
	// record a rule writes has its name in the vocabulary.
	recorded := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
				if !slices.Contains(vocab.Records.All(), r.Record) {
					t.Errorf("record %s is not in vocab.Records", r.Record)
				}
			}
		}
	}
	for _, name := range vocab.Records.All() {
		if !recorded[name] {
			t.Errorf("exported record name %s is not recorded by any rule", name)
		}
	}
}

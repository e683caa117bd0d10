package tests

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	promrules "github.com/prometheus/prometheus/rules"
	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
	"github.com/winobs/winobs/internal/testkit/managedrules"
	"github.com/winobs/winobs/internal/testkit/promtest"
)

// Issues 59, 60 and 66: one test set proves every output. Each managed
// platform's rules are read back as Prometheus rules and every rule unit
// test runs on them: Azure Monitor's rule groups of at most 20 rules
// (expression → expr, ISO 8601 `for` → a duration), AMP's namespace file
// as it is (its alerts split in groups of 20), GMP's ClusterRules' groups.
// Each runs twice: the records' groups evaluated first at every step, as
// promtool does; and in the worst phase a ruler that evaluates groups
// independently can have, every alerts' group first, so an alert reading
// a record sees it one evaluation late: each such alert must then hold its
// test's expectation at its eval_time or one interval later (labels; the
// annotations' values move with time), every other alert exactly.
func TestManagedRulesPassTheRuleTests(t *testing.T) {
	for _, platform := range []string{managed.AzureMonitor, managed.AMP, managed.GMP} {
		for _, tc := range []struct{ config, rules string }{
			{"", "../manifests/rules/"},
			{"second/config.yaml", "second/bundle/rules/"},
		} {
			cfg, err := config.Load(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			managedrules.OnService(cfg, platform)
			// Not validated: the second configuration's cluster label is
			// refused on Azure Monitor and GMP (they write cluster), but the
			// translation is what is tested here.
			back, err := managedrules.ReadBack(platform, view.Of(cfg).Managed)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := yaml.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), platform+".yaml")
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			var order, records []string
			for _, g := range back.Groups {
				order = append(order, g.Name)
				for _, r := range g.Rules {
					if r.Record != "" {
						records = append(records, r.Record)
					}
				}
			}
			late := map[string]time.Duration{}
			for _, g := range back.Groups {
				for _, r := range g.Rules {
					if r.Alert != "" && slices.ContainsFunc(records, func(rec string) bool { return strings.Contains(r.Expr, rec) }) {
						late[r.Alert] = time.Minute // the groups' interval, the tests' evaluation_interval
					}
				}
			}
			if len(late) < 5 {
				t.Errorf("%s: only %d alerts read a record", platform, len(late))
			}
			worst := slices.Clone(order)
			slices.Reverse(worst)
			ran, files := 0, 0
			for _, file := range testFiles(t) {
				tf := loadTestFile(t, file)
				if !slices.Equal(tf.RuleFiles, []string{tc.rules + rules.RecordsGroup + ".yaml", tc.rules + rules.AlertsGroup + ".yaml"}) {
					continue
				}
				files++
				tf.RuleFiles = []string{path}
				for i, tg := range tf.Tests {
					t.Run(fmt.Sprintf("%s/%s/%d_%s", platform, strings.TrimSuffix(file, ".yaml"), i, tg.Name), func(t *testing.T) {
						inOrder := *tf
						inOrder.GroupEvalOrder = order
						for _, err := range runGroup(&inOrder, tg) {
							t.Error(err)
						}
						lagged := *tf
						lagged.GroupEvalOrder = worst
						for _, err := range runGroupLagged(&lagged, tg, late) {
							t.Errorf("in the worst phase (alerts' groups first): %v", err)
						}
					})
					ran++
				}
			}
			// alerts, node-health, records and rigour read the default render;
			// second.yaml the second configuration's.
			if want := map[string]int{"": 4, "second/config.yaml": 1}[tc.config]; files != want || ran < 3*files {
				t.Errorf("%s %s: ran %d test groups of %d files, want every group of %d", platform, tc.rules, ran, files, want)
			}
		}
	}
}

// Issue 59: Azure's own Windows recording rules (testdata/azure), which its
// onboarding installs, read names windows_exporter 0.31 removed
// (windows_system_system_up_time, windows_os_visible_memory_bytes): on a
// current exporter those records, and the records built on them, are
// empty. Found both ways: by the names each reads against 0.31.8's list,
// and by evaluating the rules on the synthetic 0.31.8 exposition, where
// the rest record something. winobs's records take none of their names.
func TestAzureOwnWindowsRecordsOn031(t *testing.T) {
	raw, err := os.ReadFile("../testdata/azure/windows-recording-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(raw, false, model.LegacyValidation, promqlParser, promslog.NewNopLogger())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	served := map[string]bool{}
	for _, f := range []string{"../testdata/windows-exporter/metric-names-0.31.8.txt", "../testdata/windows-exporter/kube-state-metrics-names.txt"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
				served[f[0]] = true
			}
		}
	}
	// By name: a record is empty when it reads an unserved name, or an
	// empty record.
	empty := map[string][]string{}
	var records []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			records = append(records, r.Record)
			read, err := vocab.MetricsRead([]string{r.Expr})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range read {
				if _, isEmpty := empty[n]; isEmpty || !served[n] && !slices.Contains(records, n) {
					empty[r.Record] = append(empty[r.Record], n)
				}
			}
		}
	}
	want := []string{":windows_node_memory_MemTotal_bytes:sum", ":windows_node_memory_utilisation:", "node:windows_node:sum",
		"node:windows_node_memory_bytes_total:sum", "node:windows_node_memory_utilisation:", "node:windows_node_memory_utilisation:ratio"}
	if got := slices.Sorted(maps.Keys(empty)); !slices.Equal(got, want) {
		t.Errorf("Azure's records empty on 0.31: %v, want %v (%v)", got, want, empty)
	}
	for r, names := range empty {
		t.Logf("%s is empty on windows_exporter 0.31: reads %s", r, strings.Join(names, ", "))
	}

	// By evaluation on the 0.31.8 sample, scraped as ama-metrics' own job.
	recorded := evaluateOnSample(t, "../testdata/azure/windows-recording-rules.yaml", records)
	for _, r := range records {
		_, isEmpty := empty[r]
		if isEmpty && recorded[r] {
			t.Errorf("%s records on 0.31 although it reads %v", r, empty[r])
		}
		// The sample has no disk, network or second node: those records may
		// be empty for want of input, never the ones listed.
		if !isEmpty && !recorded[r] && !strings.Contains(r, "disk") && !strings.Contains(r, "net") && !strings.Contains(r, "filesystem") && !strings.Contains(r, "cpu_cores") {
			t.Errorf("%s is empty on the 0.31 sample, and reads only served names", r)
		}
	}

	// winobs's records take none of Azure's names.
	cfg := config.Default()
	ours, err := rules.Build(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range ours.Groups {
		for _, r := range g.Rules {
			if r.Record != "" && slices.Contains(records, r.Record) {
				t.Errorf("winobs's record %s takes one of Azure's names", r.Record)
			}
		}
	}
}

// evaluateOnSample loads the synthetic 0.31.8 exposition as scraped under
// job windows-exporter on one node (counters rising), kube-state-metrics'
// rows for its containers, evaluates the rule file for ten minutes as the
// rule manager does, and reports which of records have series at the end.
func evaluateOnSample(t *testing.T, ruleFile string, records []string) map[string]bool {
	t.Helper()
	f, err := os.Open("../testdata/windows-exporter/metrics-0.31.8.prom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	var load strings.Builder
	load.WriteString("load 1m\n")
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			labels := []string{`job="windows-exporter"`, `instance="akswin000001"`}
			var containerID, pod, namespace, container string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				switch l.GetName() {
				case "container_id":
					containerID = l.GetValue()
				case "pod":
					pod = l.GetValue()
				case "namespace":
					namespace = l.GetValue()
				case "container":
					container = l.GetValue()
				}
			}
			v, step := m.GetGauge().GetValue(), "0"
			if fam.GetType().String() == "COUNTER" {
				v, step = m.GetCounter().GetValue(), "1"
			} else if fam.GetType().String() == "UNTYPED" {
				v = m.GetUntyped().GetValue()
			}
			fmt.Fprintf(&load, "  %s{%s} %g+%sx15\n", name, strings.Join(labels, ", "), v, step)
			if name == "windows_container_available" && containerID != "" {
				ksm := fmt.Sprintf(`job="kube-state-metrics", namespace=%q, pod=%q, container=%q`, namespace, pod, container)
				fmt.Fprintf(&load, "  kube_pod_container_info{%s, container_id=%q} 1+0x15\n", ksm, containerID)
				fmt.Fprintf(&load, "  kube_pod_container_resource_limits{%s, resource=\"memory\"} 536870912+0x15\n", ksm)
				fmt.Fprintf(&load, "  kube_pod_container_resource_requests{%s, resource=\"memory\"} 268435456+0x15\n", ksm)
			}
		}
	}
	tf := &promtest.File{Header: promtest.Header{RuleFiles: []string{ruleFile}, EvaluationInterval: promtest.DefaultEvaluationInterval}}
	suite, err := promqltest.NewLazyLoader(load.String(), promqltest.LazyLoaderOpts{Parser: promqlParser})
	if err != nil {
		t.Fatal(err)
	}
	defer suite.Close()
	mgr := promrules.NewManager(&promrules.ManagerOptions{
		QueryFunc: promrules.EngineQueryFunc(suite.QueryEngine(), suite.Storage()), AppendableV2: suite.Storage(),
		Context: context.Background(), NotifyFunc: func(context.Context, string, ...*promrules.Alert) {},
		Logger: promslog.NewNopLogger(), Parser: promqlParser,
	})
	groupMap, errs := mgr.LoadGroups(time.Minute, labels.EmptyLabels(), "", nil, false, tf.RuleFiles...)
	if errs != nil {
		t.Fatal(errs)
	}
	groups := orderGroups(groupMap, []string{"NodeRecordingRulesRuleGroup-Win", "NodeAndKubernetesRecordingRulesRuleGroup-Win"})
	end := time.Unix(0, 0).UTC().Add(10 * time.Minute)
	for ts := time.Unix(0, 0).UTC(); !ts.After(end); ts = ts.Add(time.Minute) {
		suite.WithSamplesTill(ts, func(err error) {
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				g.Eval(suite.Context(), ts)
			}
		})
	}
	out := map[string]bool{}
	for _, r := range records {
		q, err := suite.QueryEngine().NewInstantQuery(suite.Context(), suite.Queryable(), nil, r, end)
		if err != nil {
			t.Fatal(err)
		}
		res := q.Exec(suite.Context())
		if res.Err != nil {
			t.Fatalf("%s: %v", r, res.Err)
		}
		if v, ok := res.Value.(promql.Vector); ok && len(v) > 0 {
			out[r] = true
		}
		q.Close()
	}
	return out
}

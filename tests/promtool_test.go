// Package tests runs winobs's rule unit tests, written in promtool's test-file
// format, with the Prometheus library, so `go test` needs no promtool binary
// and `promtool test rules tests/*.yaml` runs the same files.
package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/winobs/winobs/internal/testkit/promtest"
)

var promqlParser = parser.NewParser(parser.Options{})

// testFiles returns the rule test files next to this file.
func testFiles(t testing.TB) []string {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule test files found: %v", err)
	}
	return files
}

func loadTestFile(t testing.TB, path string) *promtest.File {
	var tf promtest.File
	if err := promtest.Read(path, &tf); err != nil {
		t.Fatal(err)
	}
	return &tf
}

// TestRuleUnitTests runs every test group of every test file as a subtest.
func TestRuleUnitTests(t *testing.T) {
	for _, path := range testFiles(t) {
		tf := loadTestFile(t, path)
		for i, tg := range tf.Tests {
			name := fmt.Sprintf("%s/%d_%s", strings.TrimSuffix(path, ".yaml"), i, tg.Name)
			t.Run(name, func(t *testing.T) {
				for _, err := range runGroup(tf, tg) {
					t.Error(err)
				}
			})
		}
	}
}

// runGroup evaluates one test group as promtool does: the rule groups are
// evaluated at every evaluation interval from zero up to the last eval_time,
// alerts are compared at the evaluation covering their eval_time, and
// expressions are queried at the end over inputs and recorded series alike.
func runGroup(tf *promtest.File, tg promtest.Group) []error { return runGroupLagged(tf, tg, nil) }

// runGroupLagged is runGroup for alerts that may see their inputs late:
// an alert named in lag passes where its labels (not its annotations,
// whose values move with time) are as expected at eval_time or that much
// later. For the alerts that read records of a group evaluated after their
// own, which see them one evaluation late (tests/managed_test.go).
func runGroupLagged(tf *promtest.File, tg promtest.Group, lag map[string]time.Duration) []error {
	interval := time.Duration(tf.EvaluationInterval)
	if tg.Interval == 0 {
		tg.Interval = tf.EvaluationInterval
	}
	var load strings.Builder
	fmt.Fprintf(&load, "load %s\n", tg.Interval)
	for _, s := range tg.InputSeries {
		fmt.Fprintf(&load, "  %s %s\n", s.Series, s.Values)
	}
	suite, err := promqltest.NewLazyLoader(load.String(), promqltest.LazyLoaderOpts{
		EnableAtModifier: true, EnableNegativeOffset: true, Parser: promqlParser,
	})
	if err != nil {
		return []error{err}
	}
	defer suite.Close()
	suite.SubqueryInterval = interval

	mgr := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(suite.QueryEngine(), suite.Storage()),
		AppendableV2: suite.Storage(),
		Context:      context.Background(),
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
		Parser:       promqlParser,
	})
	groupMap, errs := mgr.LoadGroups(time.Duration(tg.Interval), labels.FromMap(tg.ExternalLabels), "", nil, false, tf.RuleFiles...)
	if errs != nil {
		return errs
	}
	groups := orderGroups(groupMap, tf.GroupEvalOrder)
	for _, g := range groups {
		for _, r := range g.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok {
				ar.SetRestored(true) // otherwise alerts never fire and ALERTS is never written
			}
		}
	}

	// Each alert test is tried at one time or, lagged, at two: it fails
	// when every try does.
	type try struct {
		at promtest.AlertTest
		id int
	}
	var maxEval promtest.Duration
	byTime := map[promtest.Duration][]try{}
	tries, failed := map[int]int{}, map[int][]error{}
	for id, at := range tg.AlertRuleTests {
		variants := []promtest.AlertTest{at}
		if d, ok := lag[at.Alertname]; ok {
			at.LabelsOnly = true
			late := at
			late.EvalTime += promtest.Duration(d)
			variants = []promtest.AlertTest{at, late}
		}
		for _, v := range variants {
			byTime[v.EvalTime] = append(byTime[v.EvalTime], try{v, id})
			tries[id]++
			maxEval = max(maxEval, v.EvalTime)
		}
	}
	for _, et := range tg.PromqlExprTests {
		maxEval = max(maxEval, et.EvalTime)
	}
	evalTimes := make([]promtest.Duration, 0, len(byTime))
	for et := range byTime {
		evalTimes = append(evalTimes, et)
	}
	slices.Sort(evalTimes)

	start := time.Unix(0, 0).UTC()
	var failures []error
	next := 0
	for ts := start; !ts.After(start.Add(time.Duration(maxEval))); ts = ts.Add(interval) {
		var evalErrs []error
		suite.WithSamplesTill(ts, func(err error) {
			if err != nil {
				evalErrs = append(evalErrs, err)
				return
			}
			for _, g := range groups {
				g.Eval(suite.Context(), ts)
				for _, r := range g.Rules() {
					if err := r.LastError(); err != nil {
						evalErrs = append(evalErrs, fmt.Errorf("rule %s at %s: %w", r.Name(), ts.Sub(start), err))
					}
				}
			}
		})
		if len(evalErrs) > 0 {
			return append(failures, evalErrs...)
		}
		// This evaluation answers every eval_time in [ts, ts+interval).
		for next < len(evalTimes) && time.Duration(evalTimes[next]) < ts.Add(interval).Sub(start) {
			for _, tr := range byTime[evalTimes[next]] {
				if err := compareAlerts(groups, tr.at); err != nil {
					failed[tr.id] = append(failed[tr.id], err)
				}
			}
			next++
		}
	}
	for id := range tg.AlertRuleTests {
		if errs := failed[id]; len(errs) > 0 && len(errs) == tries[id] {
			failures = append(failures, errs...)
		}
	}
	for _, et := range tg.PromqlExprTests {
		if err := compareExpr(suite, start, et); err != nil {
			failures = append(failures, err)
		}
	}
	return failures
}

func orderGroups(m map[string]*rules.Group, order []string) []*rules.Group {
	groups := make([]*rules.Group, 0, len(m))
	for _, g := range m {
		groups = append(groups, g)
	}
	rank := func(g *rules.Group) int {
		if i := slices.Index(order, g.Name()); i >= 0 {
			return i
		}
		return len(order)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if ri, rj := rank(groups[i]), rank(groups[j]); ri != rj {
			return ri < rj
		}
		return groups[i].Name() < groups[j].Name()
	})
	return groups
}

// compareAlerts checks the firing alerts named at.Alertname against the
// expected ones: labels and annotations must match exactly.
func compareAlerts(groups []*rules.Group, at promtest.AlertTest) error {
	var got, want []string
	for _, g := range groups {
		for _, r := range g.Rules() {
			ar, ok := r.(*rules.AlertingRule)
			if !ok || ar.Name() != at.Alertname {
				continue
			}
			for _, a := range ar.ActiveAlerts() {
				if a.State == rules.StateFiring && at.LabelsOnly {
					got = append(got, a.Labels.String())
				} else if a.State == rules.StateFiring {
					got = append(got, a.Labels.String()+" "+a.Annotations.String())
				}
			}
		}
	}
	for _, ea := range at.ExpAlerts {
		lbls := map[string]string{labels.AlertName: at.Alertname}
		for k, v := range ea.ExpLabels {
			lbls[k] = v
		}
		if at.LabelsOnly {
			want = append(want, labels.FromMap(lbls).String())
			continue
		}
		want = append(want, labels.FromMap(lbls).String()+" "+labels.FromMap(ea.ExpAnnotations).String())
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("alert %s at %s:\n  want %s\n  got  %s", at.Alertname, at.EvalTime,
			strings.Join(want, "\n       "), strings.Join(got, "\n       "))
	}
	return nil
}

// compareExpr queries et.Expr and compares the samples exactly, as promtool
// does without fuzzy_compare.
func compareExpr(suite *promqltest.LazyLoader, start time.Time, et promtest.ExprTest) error {
	q, err := suite.QueryEngine().NewInstantQuery(suite.Context(), suite.Queryable(), nil, et.Expr, start.Add(time.Duration(et.EvalTime)))
	if err != nil {
		return fmt.Errorf("expr %q: %w", et.Expr, err)
	}
	res := q.Exec(suite.Context())
	if res.Err != nil {
		return fmt.Errorf("expr %q at %s: %w", et.Expr, et.EvalTime, res.Err)
	}
	var got []string
	switch v := res.Value.(type) {
	case promql.Vector:
		for _, s := range v {
			got = append(got, fmt.Sprintf("%s %v", s.Metric, s.F))
		}
	case promql.Scalar:
		got = append(got, fmt.Sprintf("{} %v", v.V))
	default:
		return fmt.Errorf("expr %q: result is a %s, not a vector or scalar", et.Expr, res.Value.Type())
	}
	var want []string
	for _, s := range et.ExpSamples {
		lb, err := promqlParser.ParseMetric(s.Labels)
		if err != nil {
			return fmt.Errorf("expr %q: expected labels %q: %w", et.Expr, s.Labels, err)
		}
		want = append(want, fmt.Sprintf("%s %v", lb, s.Value))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("expr %q at %s:\n  want %s\n  got  %s", et.Expr, et.EvalTime,
			strings.Join(want, "\n       "), strings.Join(got, "\n       "))
	}
	return nil
}

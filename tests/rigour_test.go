package tests

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/internal/testkit/promtest"
	"github.com/winobs/winobs/internal/testkit/rulecheck"
)

// TestEveryAlertIsTestedLikeTheMixin holds every alert, old and new, to the
// rigour of windows_exporter's own mixin tests, read off the test files:
//   - for: a firing case and a silent case one evaluation step before it, in
//     one group (the boundary of its hold);
//   - recovery: a firing case, then a silent one later in the same group;
//   - other jobs: a group testing it holds a series of a job the config does
//     not scrape as windows-exporter or kube-state-metrics;
//   - the exact threshold: an alert of the form `record <op> threshold` has a
//     group where the record is checked at the threshold's value;
//   - counter resets: when it reads a counter through rate(), a group testing
//     it (or a record it reads) feeds that counter with a reset;
//   - zero denominators: when it divides by a capacity guarded with `> 0`, a
//     group testing it (or a record it reads) feeds that capacity as 0 (or,
//     for a rate, a counter that does not move).
func TestEveryAlertIsTestedLikeTheMixin(t *testing.T) {
	cfg := config.Default()
	alerts, records := renderedAlerts(t)
	gs := testedGroups(t, map[string]bool{cfg.WindowsExporter.Job: true, cfg.KubeStateMetrics.Job: true})
	names := make([]string, 0, len(alerts))
	for n := range alerts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		defs := alerts[name]
		reads := map[string]bool{name: true} // what a group may test to count for this alert
		var rated, guarded []string
		var thresholds []rulecheck.Threshold
		for _, a := range defs {
			walkRules(a.expr, records, reads, &rated, &guarded)
			guarded = metricsOf(guarded, records)
			thresholds = append(thresholds, rulecheck.RecordThresholds(a.expr)...)
		}
		c := coverageOf(name, reads, gs)
		if defs[0].hold > 0 && !c.boundary {
			t.Errorf("%s: no group has it silent one step (%s) before it fires: its for (%s) boundary is untested", name, gs[0].step, defs[0].hold)
		}
		if !c.recovery {
			t.Errorf("%s: no group has one of its alerts fire and then resolve", name)
		}
		if !c.foreign {
			t.Errorf("%s: no group testing it holds a series of another job", name)
		}
		for _, m := range rated {
			if !c.resets[m] {
				t.Errorf("%s: reads rate(%s) but no group testing it feeds a counter reset", name, m)
			}
		}
		if len(guarded) > 0 && !slices.ContainsFunc(guarded, func(m string) bool { return c.zeros[m] }) {
			t.Errorf("%s: divides by %v guarded by > 0, but no group testing it feeds a zero", name, guarded)
		}
		for _, th := range thresholds {
			if !checkedAt(gs, th) {
				t.Errorf("%s: %s is never checked at the threshold %g", name, th.Record, th.Value)
			}
		}
	}
}

// ruleAlert is one rendered alerting rule (an alert may have several, one
// per severity).
type ruleAlert struct {
	expr parser.Expr
	hold time.Duration
}

// renderedAlerts parses the rendered rules: the alerts by name and every
// record's expression.
func renderedAlerts(t *testing.T) (map[string][]ruleAlert, map[string]parser.Expr) {
	t.Helper()
	alerts, records := map[string][]ruleAlert{}, map[string]parser.Expr{}
	for _, g := range loadRenderedGroups(t) {
		for _, r := range g.Rules {
			e, err := promqlParser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			if r.Record != "" {
				records[r.Record] = e
				continue
			}
			alerts[r.Alert] = append(alerts[r.Alert], ruleAlert{e, time.Duration(r.For)})
		}
	}
	return alerts, records
}

// testedGroup is what one test group of the test files shows.
type testedGroup struct {
	step         time.Duration
	firing       map[string][]time.Duration // alert -> eval times with alerts
	silent       map[string][]time.Duration
	fired        map[string]map[time.Duration]map[string]bool // alert -> eval time -> label sets expected
	checked      map[string][]float64                         // record or expression -> values checked
	foreign      bool                                         // holds a series of a job not ours
	resets, zero map[string]bool                              // metrics fed with a reset, or as all zeros
}

// testedGroups reads every test group of the default configuration's test
// files (another configuration's, such as second.yaml, has other jobs).
func testedGroups(t *testing.T, ourJobs map[string]bool) []testedGroup {
	t.Helper()
	var gs []testedGroup
	for _, path := range testFiles(t) {
		tf := loadTestFile(t, path)
		if len(tf.RuleFiles) == 0 || !strings.HasPrefix(tf.RuleFiles[0], manifests+"/") {
			continue
		}
		for _, tg := range tf.Tests {
			g := testedGroup{step: time.Duration(tf.EvaluationInterval), firing: map[string][]time.Duration{}, silent: map[string][]time.Duration{},
				fired:   map[string]map[time.Duration]map[string]bool{},
				checked: map[string][]float64{}, resets: map[string]bool{}, zero: map[string]bool{}}
			if g.step == 0 {
				g.step = time.Minute
			}
			for _, s := range tg.InputSeries {
				if err := g.readSeries(s.Series+" "+s.Values, ourJobs); err != nil {
					t.Fatalf("%s %q: %v", path, s.Series, err)
				}
			}
			for _, at := range tg.AlertRuleTests {
				g.readAlertTest(at)
			}
			for _, et := range tg.PromqlExprTests {
				key := strings.TrimSpace(et.Expr)
				if e, err := promqlParser.ParseExpr(key); err == nil {
					if vs, ok := e.(*parser.VectorSelector); ok {
						key = vs.Name // a record, narrowed by a selector
					}
				}
				for _, s := range et.ExpSamples {
					g.checked[key] = append(g.checked[key], s.Value)
				}
			}
			gs = append(gs, g)
		}
	}
	return gs
}

// readSeries notes a series of another job, a counter reset, and a metric
// fed as all zeros or flat (a capacity of 0, a rate of 0).
func (g *testedGroup) readSeries(desc string, ourJobs map[string]bool) error {
	lset, values, err := promqlParser.ParseSeriesDesc(desc)
	if err != nil {
		return err
	}
	if job := lset.Get("job"); job != "" && !ourJobs[job] {
		g.foreign = true
	}
	name := lset.Get(model.MetricNameLabel)
	allZero, flat, last := len(values) > 0, len(values) > 1, math.Inf(-1)
	for _, v := range values {
		if v.Omitted {
			continue
		}
		if v.Value < last {
			g.resets[name] = true
		}
		flat = flat && (math.IsInf(last, -1) || v.Value == last)
		last = v.Value
		allZero = allZero && v.Value == 0
	}
	if allZero || flat {
		g.zero[name] = true
	}
	return nil
}

// readAlertTest notes when an alert is expected, with which labels, and
// when it is expected silent.
func (g *testedGroup) readAlertTest(at promtest.AlertTest) {
	if g.fired[at.Alertname] == nil {
		g.fired[at.Alertname] = map[time.Duration]map[string]bool{}
	}
	set := map[string]bool{}
	for _, ea := range at.ExpAlerts {
		set[labels.FromMap(ea.ExpLabels).String()] = true
	}
	g.fired[at.Alertname][time.Duration(at.EvalTime)] = set
	if len(at.ExpAlerts) > 0 {
		g.firing[at.Alertname] = append(g.firing[at.Alertname], time.Duration(at.EvalTime))
	} else {
		g.silent[at.Alertname] = append(g.silent[at.Alertname], time.Duration(at.EvalTime))
	}
}

// coverage is what the groups testing one alert show of it, as the mixin's
// tests show it for each of theirs.
type coverage struct {
	boundary, recovery, foreign bool
	resets, zeros               map[string]bool
}

// coverageOf gathers, over the groups that test the alert or a record it
// reads, its for boundary (silent one step before it fires), a recovery
// (expected, then gone), a foreign job, the counter resets and zeros fed.
func coverageOf(name string, reads map[string]bool, gs []testedGroup) coverage {
	c := coverage{resets: map[string]bool{}, zeros: map[string]bool{}}
	for _, g := range gs {
		tests := len(g.firing[name])+len(g.silent[name]) > 0
		for r := range reads {
			tests = tests || len(g.checked[r]) > 0
		}
		if !tests {
			continue
		}
		c.foreign = c.foreign || g.foreign
		maps.Copy(c.resets, g.resets)
		maps.Copy(c.zeros, g.zero)
		for _, f := range g.firing[name] {
			for _, s := range g.silent[name] {
				c.boundary = c.boundary || f-s == g.step
			}
		}
		for t1, set1 := range g.fired[name] {
			for t2, set2 := range g.fired[name] {
				for l := range set1 {
					c.recovery = c.recovery || (t2 > t1 && !set2[l])
				}
			}
		}
	}
	return c
}

// checkedAt reports whether any group checks the threshold's record at the
// threshold's value.
func checkedAt(gs []testedGroup, th rulecheck.Threshold) bool {
	for _, g := range gs {
		for _, v := range g.checked[th.Record] {
			if math.Abs(v-th.Value) < 1e-9 {
				return true
			}
		}
	}
	return false
}

// walkRules collects, through the records an expression reads, the records
// themselves, the counters it rates, and the metrics it divides by behind a
// "> 0" guard.
func walkRules(e parser.Expr, records map[string]parser.Expr, reads map[string]bool, rated, guarded *[]string) {
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			if sub, ok := records[n.Name]; ok && !reads[n.Name] {
				reads[n.Name] = true
				walkRules(sub, records, reads, rated, guarded)
			}
		case *parser.Call:
			if n.Func.Name == "rate" || n.Func.Name == "increase" {
				for _, vs := range parser.ExtractSelectors(n) {
					for _, m := range vs {
						if m.Name == model.MetricNameLabel {
							*rated = append(*rated, m.Value)
						}
					}
				}
			}
		case *parser.BinaryExpr:
			if n.Op != parser.DIV {
				return nil
			}
			rhs := n.RHS
			for {
				p, ok := rhs.(*parser.ParenExpr)
				if !ok {
					break
				}
				rhs = p.Expr
			}
			if b, ok := rhs.(*parser.BinaryExpr); ok && b.Op == parser.GTR {
				if num, ok := b.RHS.(*parser.NumberLiteral); ok && num.Val == 0 {
					for _, vs := range parser.ExtractSelectors(b.LHS) {
						for _, m := range vs {
							if m.Name == model.MetricNameLabel && !strings.HasPrefix(m.Value, "rate") {
								*guarded = append(*guarded, m.Value)
							}
						}
					}
				}
			}
		}
		return nil
	})
}

// metricsOf replaces the records among names with the metrics they read.
func metricsOf(names []string, records map[string]parser.Expr) []string {
	var out []string
	for _, n := range names {
		e, ok := records[n]
		if !ok {
			out = append(out, n)
			continue
		}
		for _, vs := range parser.ExtractSelectors(e) {
			for _, m := range vs {
				if m.Name == model.MetricNameLabel {
					out = append(out, metricsOf([]string{m.Value}, records)...)
				}
			}
		}
	}
	return out
}

package tests

import (
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/internal/rulecheck"
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
	ourJobs := map[string]bool{cfg.WindowsExporter.Job: true, cfg.KubeStateMetrics.Job: true}
	groups := loadRenderedGroups(t)
	recordExpr := map[string]parser.Expr{}
	type alert struct {
		expr parser.Expr
		hold time.Duration
	}
	alerts := map[string][]alert{}
	for _, g := range groups {
		for _, r := range g.Rules {
			e, err := promqlParser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			if r.Record != "" {
				recordExpr[r.Record] = e
				continue
			}
			alerts[r.Alert] = append(alerts[r.Alert], alert{e, time.Duration(r.For)})
		}
	}

	// What the test files show, per group.
	type group struct {
		step         time.Duration
		firing       map[string][]time.Duration // alert -> eval times with alerts
		silent       map[string][]time.Duration
		fired        map[string]map[time.Duration]map[string]bool // alert -> eval time -> label sets expected
		checked      map[string][]float64                         // record or expression -> values checked
		foreign      bool
		resets, zero map[string]bool // metrics fed with a reset, or as all zeros
	}
	var gs []group
	for _, path := range testFiles(t) {
		tf := loadTestFile(t, path)
		if len(tf.RuleFiles) == 0 || !strings.HasPrefix(tf.RuleFiles[0], manifests+"/") {
			continue // another configuration's (second.yaml): its jobs are not ours
		}
		for _, tg := range tf.Tests {
			g := group{step: time.Duration(tf.EvaluationInterval), firing: map[string][]time.Duration{}, silent: map[string][]time.Duration{},
				fired:   map[string]map[time.Duration]map[string]bool{},
				checked: map[string][]float64{}, resets: map[string]bool{}, zero: map[string]bool{}}
			if g.step == 0 {
				g.step = time.Minute
			}
			for _, s := range tg.InputSeries {
				lset, values, err := promqlParser.ParseSeriesDesc(s.Series + " " + s.Values)
				if err != nil {
					t.Fatalf("%s %q: %v", path, s.Series, err)
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
				// A capacity of 0, or a counter that does not move (a rate of 0).
				if allZero || flat {
					g.zero[name] = true
				}
			}
			for _, at := range tg.AlertRuleTests {
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
			walkRules(a.expr, recordExpr, reads, &rated, &guarded)
			guarded = metricsOf(guarded, recordExpr)
			thresholds = append(thresholds, rulecheck.RecordThresholds(a.expr)...)
		}
		var boundary, recovery, foreign bool
		resets, zeros := map[string]bool{}, map[string]bool{}
		for _, g := range gs {
			tests := len(g.firing[name])+len(g.silent[name]) > 0
			for r := range reads {
				tests = tests || len(g.checked[r]) > 0
			}
			if !tests {
				continue
			}
			foreign = foreign || g.foreign
			for m := range g.resets {
				resets[m] = true
			}
			for m := range g.zero {
				zeros[m] = true
			}
			for _, f := range g.firing[name] {
				for _, s := range g.silent[name] {
					boundary = boundary || f-s == g.step
				}
			}
			// Recovery: an alert expected at one time and gone at a later one.
			for t1, set1 := range g.fired[name] {
				for t2, set2 := range g.fired[name] {
					for l := range set1 {
						recovery = recovery || (t2 > t1 && !set2[l])
					}
				}
			}
		}
		if defs[0].hold > 0 && !boundary {
			t.Errorf("%s: no group has it silent one step (%s) before it fires: its for (%s) boundary is untested", name, gs[0].step, defs[0].hold)
		}
		if !recovery {
			t.Errorf("%s: no group has one of its alerts fire and then resolve", name)
		}
		if !foreign {
			t.Errorf("%s: no group testing it holds a series of another job", name)
		}
		for _, m := range rated {
			if !resets[m] {
				t.Errorf("%s: reads rate(%s) but no group testing it feeds a counter reset", name, m)
			}
		}
		if len(guarded) > 0 {
			found := false
			for _, m := range guarded {
				found = found || zeros[m]
			}
			if !found {
				t.Errorf("%s: divides by %v guarded by > 0, but no group testing it feeds a zero", name, guarded)
			}
		}
		for _, th := range thresholds {
			at := false
			for _, g := range gs {
				for _, v := range g.checked[th.Record] {
					at = at || math.Abs(v-th.Value) < 1e-9
				}
			}
			if !at {
				t.Errorf("%s: %s is never checked at the threshold %g", name, th.Record, th.Value)
			}
		}
	}
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

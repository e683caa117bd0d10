package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/logqlcheck"
)

// Many clusters share one ruler and one Grafana: Mimir, Thanos Ruler or a
// central Prometheus evaluate the rules over every cluster's series at once.
// A rule that aggregates the cluster label away mixes clusters. (That every
// dashboard query selects the cluster is tested in package dashboards.)

// multiClusterConfig is a two-cluster setup with a cluster label other than
// the default, so the tests prove the label is read from the config.
func multiClusterConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Name, cfg.Cluster.Label = "lab", "k8s_cluster"
	return cfg
}

// clusterProblems walks a PromQL expression and names every place where the
// cluster label is lost: an aggregation whose by() lacks it or whose
// without() has it, a vector match whose on() lacks it or whose ignoring()
// has it, a group_left/right that would copy it from the other side, and
// functions whose result has no labels or that overwrite it.
func clusterProblems(e parser.Expr, label string) []string {
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.AggregateExpr:
			switch n.Op {
			case parser.TOPK, parser.BOTTOMK, parser.LIMITK, parser.LIMIT_RATIO:
				return nil // these return the input series with their labels
			}
			if n.Without == slices.Contains(n.Grouping, label) {
				how := "by"
				if n.Without {
					how = "without"
				}
				out = append(out, fmt.Sprintf("%s %s (%s)", n.Op, how, strings.Join(n.Grouping, ", ")))
			}
		case *parser.BinaryExpr:
			vm := n.VectorMatching
			if vm == nil || n.LHS.Type() != parser.ValueTypeVector || n.RHS.Type() != parser.ValueTypeVector {
				return nil
			}
			if (vm.On || len(vm.MatchingLabels) > 0) && vm.On != slices.Contains(vm.MatchingLabels, label) {
				how := "on"
				if !vm.On {
					how = "ignoring"
				}
				out = append(out, fmt.Sprintf("%s %s (%s)", n.Op, how, strings.Join(vm.MatchingLabels, ", ")))
			}
			if slices.Contains(vm.Include, label) {
				out = append(out, fmt.Sprintf("%s group_x (%s) copies %s", n.Op, strings.Join(vm.Include, ", "), label))
			}
		case *parser.Call:
			switch n.Func.Name {
			case "absent", "absent_over_time", "vector":
				out = append(out, n.Func.Name+"() has no labels")
			case "label_replace", "label_join":
				if dst, ok := n.Args[1].(*parser.StringLiteral); ok && dst.Val == label {
					out = append(out, n.Func.Name+"() overwrites "+label)
				}
			}
		}
		return nil
	})
	return out
}

// TestRulesKeepTheClusterLabel: with cluster.name set, every aggregation and
// join in every Prometheus rule keeps the cluster label, so every record and
// every alert carries it.
func TestRulesKeepTheClusterLabel(t *testing.T) {
	cfg := multiClusterConfig(t)
	groups, err := rules.Build(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			e, err := promqlParser.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			n++
			for _, p := range clusterProblems(e, cfg.Cluster.Label) {
				t.Errorf("%s%s: %s loses %s", r.Record, r.Alert, p, cfg.Cluster.Label)
			}
		}
	}
	if n < 20 {
		t.Fatalf("walked %d rules, want the whole bundle", n)
	}
}

// TestClusterCheckCatchesMutations: dropping the cluster label from any by()
// or on() of any rule is caught, so the test above cannot pass vacuously.
func TestClusterCheckCatchesMutations(t *testing.T) {
	cfg := multiClusterConfig(t)
	label := cfg.Cluster.Label
	groups, err := rules.Build(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	without := func(ls []string) []string {
		return slices.DeleteFunc(slices.Clone(ls), func(l string) bool { return l == label })
	}
	mutants := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			// Each mutant drops the label from one clause: the i-th that has it.
			for i := 0; ; i++ {
				e, _ := promqlParser.ParseExpr(r.Expr)
				seen, done := 0, false
				parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
					if done {
						return nil
					}
					switch n := n.(type) {
					case *parser.AggregateExpr:
						if !n.Without && slices.Contains(n.Grouping, label) {
							if seen == i {
								n.Grouping, done = without(n.Grouping), true
							}
							seen++
						}
					case *parser.BinaryExpr:
						if vm := n.VectorMatching; vm != nil && vm.On && slices.Contains(vm.MatchingLabels, label) {
							if seen == i {
								vm.MatchingLabels, done = without(vm.MatchingLabels), true
							}
							seen++
						}
					}
					return nil
				})
				if !done {
					break
				}
				mutants++
				// Print and parse again, as a user editing the rule file would.
				m, err := promqlParser.ParseExpr(e.String())
				if err != nil {
					t.Fatalf("%s%s mutant %d: %v", r.Record, r.Alert, i, err)
				}
				if len(clusterProblems(m, label)) == 0 {
					t.Errorf("%s%s: dropping %s from clause %d went unnoticed:\n%s", r.Record, r.Alert, label, i, m)
				}
			}
		}
	}
	t.Logf("%d mutants, each caught", mutants)
	if mutants < 40 {
		t.Errorf("made %d mutants, want one per by()/on() clause of the bundle", mutants)
	}
}

// TestLokiRulesKeepTheClusterLabel: the event log alerts group by the
// cluster label too (the agents add it to every stream).
func TestLokiRulesKeepTheClusterLabel(t *testing.T) {
	cfg := multiClusterConfig(t)
	for _, r := range lokiRules(t, cfg) {
		gs := logqlcheck.Grouping.FindAllStringSubmatch(r.Expr, -1)
		if len(gs) == 0 {
			t.Errorf("%s: no by() clause in %s", r.Alert, r.Expr)
		}
		for _, m := range gs {
			if !slices.Contains(splitLabels(m[1]), cfg.Cluster.Label) {
				t.Errorf("%s: by (%s) loses %s", r.Alert, m[1], cfg.Cluster.Label)
			}
		}
	}
}

func splitLabels(s string) []string {
	var out []string
	for _, l := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

// lokiRules are the Loki ruler's rules for cfg.
func lokiRules(t *testing.T, cfg *config.Config) []rulefmt.Rule {
	t.Helper()
	g, err := rules.LokiGroups(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	return g.Groups[0].Rules
}

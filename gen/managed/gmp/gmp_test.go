package gmp_test

import (
	"slices"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/managed/gmp"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/managedrules"
)

func gmpView(t *testing.T, scope string) view.Managed {
	t.Helper()
	c := config.Default()
	c.Prometheus.Managed, c.Prometheus.GMP.Scope = managed.GMP, scope
	if probs := config.Validate(c); len(probs) > 0 {
		t.Fatal(probs)
	}
	return view.Of(c).Managed
}

// Issue 60: every record and alert of the default render is in the rules
// object once, in order, with the same expression, `for`, labels and
// annotations (read back as Prometheus rules), every group with its interval (the CRD requires it; the
// bundle's schema test validates the object against the published CRDs).
// As a ClusterRules, no rule sets a label GMP's evaluator scopes (it would
// refuse the object), and no selector matches one (the evaluator's added
// matcher would conflict): the rules' cluster is GMP's own.
func TestRulesObject(t *testing.T) {
	for scope, kind := range map[string]string{config.GMPScopeCluster: "ClusterRules", config.GMPScopeGlobal: "GlobalRules"} {
		v := gmpView(t, scope)
		want, err := rules.Build(v.Rules)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := gmp.Object(v, want)
		if err != nil {
			t.Fatal(err)
		}
		if obj.Kind != kind || obj.APIVersion != "monitoring.googleapis.com/v1" || obj.Namespace != "" || len(obj.Spec.Groups) != len(want.Groups) {
			t.Fatalf("%s %s %q %d groups", obj.APIVersion, obj.Kind, obj.Namespace, len(obj.Spec.Groups))
		}
		back, err := managedrules.ReadBack(managed.GMP, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range managedrules.Diff(want, back) {
			t.Errorf("%s: %s", kind, d)
		}
		p := parser.NewParser(parser.Options{})
		for i, g := range want.Groups {
			got := obj.Spec.Groups[i]
			if got.Name != g.Name || got.Interval != "1m" || len(got.Rules) != len(g.Rules) {
				t.Fatalf("group %s: %+v", g.Name, got)
			}
			for j, r := range g.Rules {
				a := got.Rules[j]
				for k := range a.Labels {
					if slices.Contains(gmp.ScopingLabels, k) {
						t.Errorf("%s%s sets %s", r.Record, r.Alert, k)
					}
				}
				expr, err := p.ParseExpr(a.Expr)
				if err != nil {
					t.Fatal(err)
				}
				parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
					if vs, ok := n.(*parser.VectorSelector); ok {
						for _, m := range vs.LabelMatchers {
							if slices.Contains(gmp.ScopingLabels, m.Name) {
								t.Errorf("%s%s: %s matches %s, which GMP's evaluator sets", r.Record, r.Alert, vs, m.Name)
							}
						}
					}
					return nil
				})
			}
		}
	}
	// A rule that sets a scoping label is refused, as GMP would.
	v := gmpView(t, config.GMPScopeCluster)
	groups, _ := rules.Build(v.Rules)
	groups.Groups[0].Rules[0].Labels = map[string]string{"cluster": "x"}
	if _, err := gmp.Object(v, groups); err == nil {
		t.Error("a rule setting cluster was taken")
	}
}

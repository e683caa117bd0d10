package managedrules_test

import (
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/managedrules"
)

// Each platform's rules read back are the default render's, and Diff names
// every kind of difference: another expression, `for`, label or
// annotation, a rule missing, two rules swapped.
func TestReadBackAndDiff(t *testing.T) {
	for _, platform := range []string{managed.AzureMonitor, managed.AMP, managed.GMP} {
		c := config.Default()
		managedrules.OnService(c, platform)
		if probs := config.Validate(c); len(probs) > 0 {
			t.Fatal(probs)
		}
		v := view.Of(c)
		want, err := rules.Build(v.Rules)
		if err != nil {
			t.Fatal(err)
		}
		back, err := managedrules.ReadBack(platform, v.Managed)
		if err != nil {
			t.Fatal(err)
		}
		if d := managedrules.Diff(want, back); len(d) > 0 {
			t.Errorf("%s: %v", platform, d)
		}
	}
	if _, err := managedrules.ReadBack("prometheus", view.Of(config.Default()).Managed); err == nil {
		t.Error("an unknown platform read back")
	}

	want, _ := rules.Build(view.Of(config.Default()).Rules)
	alert := func(rs []rulefmt.Rule) int {
		for i, r := range rs {
			if r.Alert != "" && r.For != 0 && len(r.Labels) > 0 && len(r.Annotations) > 0 {
				return i
			}
		}
		t.Fatal("no alert with for, labels and annotations")
		return 0
	}
	for name, change := range map[string]func(g *rulefmt.RuleGroup){
		"expression":   func(g *rulefmt.RuleGroup) { g.Rules[0].Expr += " > 0" },
		"for":          func(g *rulefmt.RuleGroup) { g.Rules[alert(g.Rules)].For += model.Duration(1) },
		"label":        func(g *rulefmt.RuleGroup) { g.Rules[alert(g.Rules)].Labels = map[string]string{"severity": "none"} },
		"annotation":   func(g *rulefmt.RuleGroup) { g.Rules[alert(g.Rules)].Annotations = nil },
		"rule missing": func(g *rulefmt.RuleGroup) { g.Rules = g.Rules[:len(g.Rules)-1] },
		"swapped":      func(g *rulefmt.RuleGroup) { g.Rules[0], g.Rules[1] = g.Rules[1], g.Rules[0] },
	} {
		got, _ := rules.Build(view.Of(config.Default()).Rules)
		i := len(got.Groups) - 1 // the alerts
		change(&got.Groups[i])
		if d := managedrules.Diff(want, got); len(d) == 0 {
			t.Errorf("%s: no difference found", name)
		} else if name == "rule missing" && !strings.Contains(d[0], "rules, want") {
			t.Errorf("%s: %v", name, d)
		}
	}
}

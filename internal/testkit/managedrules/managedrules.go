// Package managedrules reads each managed Prometheus's rendered
// rules back as Prometheus rule groups, and compares them with the render's
// own, for tests: what Azure Monitor, AMP and GMP are given must be the
// rules the rule tests prove.
package managedrules

import (
	"fmt"
	"log/slog"
	"maps"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/managed/amp"
	"github.com/winobs/winobs/gen/managed/azuremonitor"
	"github.com/winobs/winobs/gen/managed/gmp"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
)

// Example settings of each service, as a user's config would hold them:
// what the tests render with.
var (
	ExampleAzure = config.AzureMonitor{Location: "westeurope",
		Workspace: "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg/providers/Microsoft.Monitor/accounts/amw"}
	ExampleAMP = config.AMP{WorkspaceID: "ws-8a6f7e7e-4d1e-4b88-8b4c-0123456789ab", Region: "eu-west-1"}
)

// OnService sets c to render for service with the example settings it
// needs (Azure Monitor's workspace, AMP's workspace and region; GMP none),
// and no other service's.
func OnService(c *config.Config, service string) {
	c.Prometheus.Managed = service
	c.Prometheus.Azure, c.Prometheus.AMP = config.AzureMonitor{}, config.AMP{}
	switch service {
	case managed.AzureMonitor:
		c.Prometheus.Azure = ExampleAzure
	case managed.AMP:
		c.Prometheus.AMP = ExampleAMP
	}
}

// ReadBack is the service's rendered rules as a Prometheus rule file:
// Azure Monitor's rule group (expression → expr, ISO 8601 `for` → a
// duration); AMP's namespace file and GMP's rules object's groups parsed by
// Prometheus' rulefmt.
func ReadBack(service string, v view.Managed) (rulefmt.RuleGroups, error) {
	groups, err := rules.Build(v.Rules)
	if err != nil {
		return rulefmt.RuleGroups{}, err
	}
	var back rulefmt.RuleGroups
	switch service {
	case managed.AzureMonitor:
		tmpl, err := azuremonitor.Template(v, groups)
		if err != nil {
			return back, err
		}
		for _, res := range tmpl.Resources {
			g := rulefmt.RuleGroup{Name: res.Name}
			for _, r := range res.Properties.Rules {
				hold := rulefmt.Rule{Record: r.Record, Alert: r.Alert, Expr: r.Expression, Labels: r.Labels, Annotations: r.Annotations}
				if r.For != "" {
					if hold.For, err = azuremonitor.ParseISODuration(r.For); err != nil {
						return back, err
					}
				}
				g.Rules = append(g.Rules, hold)
			}
			back.Groups = append(back.Groups, g)
		}
	case managed.AMP:
		files, err := amp.Files(v, groups)
		if err != nil {
			return back, err
		}
		return parse(files[0].Path, files[0].Raw)
	case managed.GMP:
		// The CRD's groups are Prometheus' rule file format (for as a
		// duration string): read by rulefmt as Prometheus would.
		obj, err := gmp.Object(v, groups)
		if err != nil {
			return back, err
		}
		raw, err := sigyaml.Marshal(obj.Spec)
		if err != nil {
			return back, err
		}
		return parse("the "+obj.Kind+" object", raw)
	default:
		return back, fmt.Errorf("no managed Prometheus %q", service)
	}
	return back, nil
}

// parse reads a rule file as Prometheus' rulefmt does.
func parse(what string, raw []byte) (rulefmt.RuleGroups, error) {
	parsed, errs := rulefmt.Parse(raw, false, model.LegacyValidation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return rulefmt.RuleGroups{}, fmt.Errorf("%s: %v", what, errs)
	}
	return *parsed, nil
}

// Diff compares got's rules with want's, in order across groups (a
// service may regroup them): the same record or alert, expression, `for`,
// labels and annotations, each once. It returns every difference.
func Diff(want, got rulefmt.RuleGroups) []string {
	flat := func(gs rulefmt.RuleGroups) []rulefmt.Rule {
		var out []rulefmt.Rule
		for _, g := range gs.Groups {
			out = append(out, g.Rules...)
		}
		return out
	}
	w, g := flat(want), flat(got)
	var diffs []string
	if len(w) != len(g) {
		diffs = append(diffs, fmt.Sprintf("%d rules, want %d", len(g), len(w)))
	}
	for i := range min(len(w), len(g)) {
		a, b := g[i], w[i]
		if a.Record != b.Record || a.Alert != b.Alert || a.Expr != b.Expr || a.For != b.For ||
			!maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Annotations, b.Annotations) {
			diffs = append(diffs, fmt.Sprintf("rule %d is %s%s (for %v), want %s%s (for %v), or their labels or annotations differ",
				i, a.Record, a.Alert, a.For, b.Record, b.Alert, b.For))
		}
	}
	return diffs
}

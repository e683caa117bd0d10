// Package bundle lists the artifact families gen renders, in one place, so
// gen and the tests that check the rendered output build the same thing.
package bundle

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/winobs/winobs/gen/alloy"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/dashboards"
	"github.com/winobs/winobs/gen/exporters"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/managed/amp"
	"github.com/winobs/winobs/gen/managed/azuremonitor"
	"github.com/winobs/winobs/gen/managed/gmp"
	"github.com/winobs/winobs/gen/nodeagent"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/shipperdeploy"
	"github.com/winobs/winobs/gen/view"
)

// Builder renders one artifact family from its view of the config; each is
// a pure function of that view.
type Builder struct {
	Name  string
	Build func(view.Bundle) ([]render.File, error)
}

// Builders are every artifact family of the bundle, each given the view it
// reads.
var Builders = []Builder{
	{"namespace", func(b view.Bundle) ([]render.File, error) { return nodeagent.NamespaceFiles(b.Agents) }},
	{"rules", func(b view.Bundle) ([]render.File, error) { return rules.Files(b.Rules) }},
	{"dashboards", func(b view.Bundle) ([]render.File, error) { return dashboards.Files(b.Dashboards) }},
	{"alloy", func(b view.Bundle) ([]render.File, error) { return alloy.Files(b.Alloy) }},
	{"exporters", func(b view.Bundle) ([]render.File, error) { return exporters.Files(b.Exporters) }},
	{"eventlog-shipper", func(b view.Bundle) ([]render.File, error) { return shipperdeploy.Files(b.Shipper) }},
	{"managed", func(b view.Bundle) ([]render.File, error) { return Managed(b.Managed) }},
}

// Renderers are the renderer of each managed Prometheus of package
// managed's table, by its name: its files from the rule groups. (The row
// cannot hold it: config and view read the table, and the renderers read
// the views.)
var Renderers = map[string]func(view.Managed, rulefmt.RuleGroups) ([]render.File, error){
	managed.AzureMonitor: azuremonitor.Files,
	managed.AMP:          amp.Files,
	managed.GMP:          gmp.Files,
}

// Managed renders the rules for the managed Prometheus the view names,
// with its renderer, or nothing when the rules go to a Prometheus that
// loads PrometheusRule objects.
func Managed(v view.Managed) ([]render.File, error) {
	if v.Service.Name == "" {
		return nil, nil
	}
	files, ok := Renderers[v.Service.Name]
	if !ok {
		return nil, fmt.Errorf("%s has no renderer", v.Service.Name)
	}
	groups, err := rules.Build(v.Rules)
	if err != nil {
		return nil, err
	}
	return files(v, groups)
}

// Build routes the config to every builder's view, once, and runs them.
func Build(cfg *config.Config) ([]render.File, error) {
	views := view.Of(cfg)
	var files []render.File
	for _, b := range Builders {
		fs, err := b.Build(views)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", b.Name, err)
		}
		files = append(files, fs...)
	}
	return files, nil
}

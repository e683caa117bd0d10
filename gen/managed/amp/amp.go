// Package amp renders what Amazon Managed Service for Prometheus (EKS)
// needs of winobs, which loads no PrometheusRule: the records and alerts as
// one rule groups namespace (a plain Prometheus rule file, uploaded with
// aws amp create-rule-groups-namespace), within AMP's quotas; and a scrape
// configuration that finds the Windows nodes' exporters, for AWS's managed
// scraper or any Prometheus agent that remote-writes to the workspace.
package amp

import (
	"fmt"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
)

// AMP's quotas that a rule file meets (Amazon Managed Service for
// Prometheus service quotas): rules a group (adjustable, 20 by default),
// the namespace's name and a group's name together, the file's size.
const (
	MaxRulesPerGroup = 20
	MaxNameBytes     = 721
	MaxFileBytes     = 1 << 20
)

// Files renders the rule groups namespace and the scrape configuration
// into the service's folder (outside kustomization.yaml: they go to AWS's APIs).
func Files(v view.Managed, groups rulefmt.RuleGroups) ([]render.File, error) {
	ns, err := Namespace(v, groups)
	if err != nil {
		return nil, err
	}
	raw, err := render.EncodeYAML(ns)
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxFileBytes {
		return nil, fmt.Errorf("the rule groups namespace is %d bytes, over AMP's %d", len(raw), MaxFileBytes)
	}
	scrape, err := render.EncodeYAML(ScrapeConfig(v))
	if err != nil {
		return nil, err
	}
	return []render.File{
		{Path: v.Service.Dir + NamespaceName(v) + ".yaml", Raw: raw},
		{Path: v.Service.Dir + "scrape-config.yaml", Raw: scrape},
	}, nil
}

// NamespaceName is the rule groups namespace: the ruler namespace's name
// (ruler.namespacePrefix), as mimirtool's, with the cluster's when set.
func NamespaceName(v view.Managed) string {
	return rules.ClusterMetricsNamespace(v.Rules.Ruler, v.Cluster)
}

// Namespace is the groups as AMP takes them: a group of more than
// MaxRulesPerGroup rules is split, in order, into groups of at most that
// many ("<group>-2", …). The records stay one group (17): Prometheus, and
// AMP's ruler, evaluate groups independently, so an alert reads the
// records' last evaluation, as with any Prometheus that loads the two
// groups; alerts read no alert, so splitting them changes nothing.
func Namespace(v view.Managed, groups rulefmt.RuleGroups) (rulefmt.RuleGroups, error) {
	ns := NamespaceName(v)
	out := rules.Split(groups, MaxRulesPerGroup)
	for _, g := range out.Groups {
		if n := len(ns) + len(g.Name); n > MaxNameBytes {
			return rulefmt.RuleGroups{}, fmt.Errorf("the namespace %q and the group %q are %d bytes together, over AMP's %d", ns, g.Name, n, MaxNameBytes)
		}
	}
	return out, nil
}

package config

import (
	"strings"

	"github.com/winobs/winobs/gen/managed"
)

// validateManaged checks the managed Prometheus the rules go to
// (prometheus.platform): a row of package managed's table, and its values
// each by its form, at its line (Azure's resource ids, AMP's workspace and
// region); a service's values without that service chosen are a mistake
// said at once.
func validateManaged(v *validator, c *Config) {
	p, a := c.Prometheus.Managed, c.Prometheus.Azure
	m := c.Prometheus.AMP
	for field, set := range map[string]bool{"azure.workspace": a.Workspace != "", "azure.location": a.Location != "", "azure.cluster": a.Cluster != "",
		"azure.actionGroups": len(a.ActionGroups) > 0, "amp.workspaceId": m.WorkspaceID != "", "amp.region": m.Region != ""} {
		want := managed.AzureMonitor
		if strings.HasPrefix(field, "amp.") {
			want = managed.AMP
		}
		v.check("prometheus."+field, !set || p == want, "is set, but prometheus.platform is not %s: set prometheus.platform: %s, or remove it", want, want)
	}
	v.check("prometheus.gmp.scope", c.Prometheus.GMP.Scope == GMPScopeCluster || c.Prometheus.GMP.Scope == GMPScopeGlobal,
		"must be %s (ClusterRules) or %s (GlobalRules), got %q", GMPScopeCluster, GMPScopeGlobal, c.Prometheus.GMP.Scope)
	if svc, _ := managed.Lookup(p); svc.ClusterLabel != "" && c.Cluster.Label != svc.ClusterLabel {
		// ama-metrics and GMP's collectors write the label themselves.
		v.add("cluster.label", "must be %s on %s, whose collectors label every series %[1]s=<name>, got %q", svc.ClusterLabel, p, c.Cluster.Label)
	}
	switch p {
	case "", managed.GMP:
	case managed.AMP:
		v.check("prometheus.amp.workspaceId", ampWorkspace.MatchString(m.WorkspaceID),
			"must be the workspace's id, ws- and 36 letters, digits and dashes (aws amp list-workspaces --query 'workspaces[].workspaceId'), got %q", m.WorkspaceID)
		v.check("prometheus.amp.region", awsRegion.MatchString(m.Region), "must be an AWS region such as eu-west-1, got %q", m.Region)
	case managed.AzureMonitor:
		validateAzure(v, c)
	default:
		v.add("prometheus.platform", "must be \"\" (a Prometheus that loads PrometheusRule objects), %s, got %q", managed.Names(), p)
	}
}

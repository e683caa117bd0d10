package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Azure resource ids winobs's config names: the providers are matched
// case-insensitively, as Azure Resource Manager does; a subscription is a
// GUID; a resource group and a name are Azure's characters (letters,
// digits, '_', '-', '.', '(' and ')'; a group ends in no '.').
var (
	azureWorkspaceID   = azureID("Microsoft.Monitor/accounts")
	azureClusterID     = azureID("Microsoft.ContainerService/managedClusters")
	azureActionGroupID = azureID("Microsoft.Insights/actionGroups")
	// azureLocation is a region's programmatic name: eastus, westeurope.
	azureLocation = regexp.MustCompile(`^[a-z][a-z0-9]{1,39}$`)
	// ampWorkspace is an AMP workspace id (ws- and a UUID's characters);
	// awsRegion a region such as eu-west-1 or us-gov-west-1.
	ampWorkspace = regexp.MustCompile(`^ws-[0-9a-fA-F-]{36}$`)
	awsRegion    = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]$`)
)

func azureID(provider string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)^/subscriptions/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}` +
		`/resourceGroups/[A-Za-z0-9_().-]{0,89}[A-Za-z0-9_()-]/providers/` + regexp.QuoteMeta(provider) + `/[A-Za-z0-9_().-]{1,260}$`)
}

// validatePlatform checks the managed Prometheus the rules go to: a known
// platform, and its values each by its form, at its line (Azure's resource
// ids, AMP's workspace and region); a platform's values without the
// platform are a mistake said at once.
func validatePlatform(v *validator, c *Config) {
	p, a := c.Prometheus.Platform, c.Prometheus.Azure
	m := c.Prometheus.AMP
	for field, set := range map[string]bool{"azure.workspace": a.Workspace != "", "azure.location": a.Location != "", "azure.cluster": a.Cluster != "",
		"azure.actionGroups": len(a.ActionGroups) > 0, "amp.workspaceId": m.WorkspaceID != "", "amp.region": m.Region != ""} {
		want := PlatformAzureMonitor
		if strings.HasPrefix(field, "amp.") {
			want = PlatformAMP
		}
		v.check("prometheus."+field, !set || p == want, "is set, but prometheus.platform is not %s: set prometheus.platform: %s, or remove it", want, want)
	}
	v.check("prometheus.gmp.scope", c.Prometheus.GMP.Scope == GMPScopeCluster || c.Prometheus.GMP.Scope == GMPScopeGlobal,
		"must be %s (ClusterRules) or %s (GlobalRules), got %q", GMPScopeCluster, GMPScopeGlobal, c.Prometheus.GMP.Scope)
	if (p == PlatformAzureMonitor || p == PlatformGMP) && c.Cluster.Label != "cluster" {
		// ama-metrics and GMP's collectors write the label themselves.
		v.add("cluster.label", "must be cluster on %s, whose collectors label every series cluster=<name>, got %q", p, c.Cluster.Label)
	}
	switch p {
	case "", PlatformGMP:
		return
	case PlatformAMP:
		v.check("prometheus.amp.workspaceId", ampWorkspace.MatchString(m.WorkspaceID),
			"must be the workspace's id, ws- and 36 letters, digits and dashes (aws amp list-workspaces --query 'workspaces[].workspaceId'), got %q", m.WorkspaceID)
		v.check("prometheus.amp.region", awsRegion.MatchString(m.Region), "must be an AWS region such as eu-west-1, got %q", m.Region)
		return
	case PlatformAzureMonitor:
	default:
		v.add("prometheus.platform", "must be \"\" (a Prometheus that loads PrometheusRule objects), %s, %s or %s, got %q", PlatformAzureMonitor, PlatformAMP, PlatformGMP, p)
		return
	}
	v.check("prometheus.azure.workspace", azureWorkspaceID.MatchString(a.Workspace),
		"must be the Azure Monitor workspace's resource id, /subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.Monitor/accounts/<name> (az monitor account show --query id), got %q", a.Workspace)
	v.check("prometheus.azure.location", azureLocation.MatchString(a.Location),
		"must be the workspace's region as Azure names it (eastus, westeurope: az monitor account show --query location), got %q", a.Location)
	v.check("prometheus.azure.cluster", a.Cluster == "" || azureClusterID.MatchString(a.Cluster),
		"must be empty or the AKS cluster's resource id, /subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.ContainerService/managedClusters/<name> (az aks show --query id), got %q", a.Cluster)
	for i, g := range a.ActionGroups {
		v.check(fmt.Sprintf("prometheus.azure.actionGroups[%d]", i), azureActionGroupID.MatchString(g),
			"must be an action group's resource id, /subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.Insights/actionGroups/<name>, got %q", g)
	}
}

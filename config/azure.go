package config

import (
	"fmt"
	"regexp"
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
)

func azureID(provider string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)^/subscriptions/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}` +
		`/resourceGroups/[A-Za-z0-9_().-]{0,89}[A-Za-z0-9_()-]/providers/` + regexp.QuoteMeta(provider) + `/[A-Za-z0-9_().-]{1,260}$`)
}

// validatePlatform checks the managed Prometheus the rules go to: a known
// platform, and for Azure Monitor each resource id by its form, at its
// line; Azure values without the platform are a mistake said at once.
func validatePlatform(v *validator, c *Config) {
	p, a := c.Prometheus.Platform, c.Prometheus.Azure
	switch p {
	case "":
		for field, set := range map[string]bool{"workspace": a.Workspace != "", "location": a.Location != "", "cluster": a.Cluster != "", "actionGroups": len(a.ActionGroups) > 0} {
			v.check("prometheus.azure."+field, !set, "is set, but prometheus.platform is not %s: set prometheus.platform: %s, or remove prometheus.azure", PlatformAzureMonitor, PlatformAzureMonitor)
		}
		return
	case PlatformAzureMonitor:
	default:
		v.add("prometheus.platform", "must be \"\" (a Prometheus that loads PrometheusRule objects) or %s, got %q", PlatformAzureMonitor, p)
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

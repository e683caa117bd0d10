package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/winobs/winobs/gen/managed"
)

// Azure resource ids winobs's config names: the providers are matched
// case-insensitively, as Azure Resource Manager does; a subscription is a
// GUID; a resource group and a name are Azure's characters (letters,
// digits, '_', '-', '.', '(' and ')'; a group ends in no '.').
var (
	azureWorkspaceID   = azureID("Microsoft.Monitor/accounts", azureName)
	azureClusterID     = azureID("Microsoft.ContainerService/managedClusters", aksName)
	azureActionGroupID = azureID("Microsoft.Insights/actionGroups", azureName)
	// azureLocation is a region's programmatic name: eastus, westeurope.
	azureLocation = regexp.MustCompile(`^[a-z][a-z0-9]{1,39}$`)
	// ampWorkspace is an AMP workspace id (ws- and a UUID's characters);
	// awsRegion a region such as eu-west-1 or us-gov-west-1.
	ampWorkspace = regexp.MustCompile(`^ws-[0-9a-fA-F-]{36}$`)
	awsRegion    = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]$`)
)

// A resource's name: Azure's characters; an AKS cluster's, the managed
// clusters API's resourceName pattern (Azure REST API, Managed Clusters -
// Create Or Update; az aks create checks the same): 1-63 letters, digits,
// '-' and '_', starting and ending with a letter or digit.
const (
	azureName = `[A-Za-z0-9_().-]{1,260}`
	aksName   = `[a-zA-Z0-9]|[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]`
)

var aksClusterName = regexp.MustCompile(`^(` + aksName + `)$`)

// gkeClusterName is what GKE takes as a cluster's name (gcloud container
// clusters create: lower-case letters, digits and '-', starting with a
// letter and ending with a letter or digit, at most 40 characters).
var gkeClusterName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`)

func azureID(provider, name string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)^/subscriptions/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}` +
		`/resourceGroups/[A-Za-z0-9_().-]{0,89}[A-Za-z0-9_()-]/providers/` + regexp.QuoteMeta(provider) + `/(?-i:` + name + `)$`)
}

// aliasRewrite is what ama-metrics replaces in a cluster_alias.
var aliasRewrite = regexp.MustCompile(`[^0-9a-zA-Z]+`)

// AzureClusterLabel is the cluster label ama-metrics writes on every series
// of an AKS cluster, decided as its settings parser decides it
// (Azure/prometheus-collector, otelcollector/shared/configmap/mp/
// tomlparser-prometheus-collector-settings.go, lines 20-31 and 123-133 at
// 39583fd): a cluster_alias (quotes and surrounding spaces removed) with
// every run of characters outside [0-9a-zA-Z] replaced by one '_' and
// leading and trailing '_' trimmed, unless that leaves nothing; otherwise,
// the add-on being managed (MAC=true), the last segment of the cluster's
// resource id (its CLUSTER variable: the add-on chart's AzureResourceID).
func AzureClusterLabel(clusterID, alias string) string {
	if a := strings.Trim(aliasRewrite.ReplaceAllString(strings.TrimSpace(alias), "_"), "_"); a != "" {
		return a
	}
	parts := strings.Split(strings.TrimSpace(clusterID), "/")
	return parts[len(parts)-1]
}

// validateAzure checks Azure Monitor's values, each by its form at its
// line, and the cluster label ama-metrics will write.
func validateAzure(v *validator, c *Config) {
	a := c.Prometheus.Azure
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
	validateAzureCluster(v, c)
}

// validateAzureCluster holds cluster.name, which the rule groups'
// clusterName, the dashboards and doctor select, to the cluster label
// ama-metrics writes (AzureClusterLabel): by default the AKS resource name;
// with prometheus.azure.clusterAlias, cluster.name rewritten as ama-metrics
// rewrites an alias (Resolve uses that form everywhere).
func validateAzureCluster(v *validator, c *Config) {
	a, name := c.Prometheus.Azure, c.Cluster.Name
	switch {
	case a.ClusterAlias && name == "":
		v.add("prometheus.azure.clusterAlias", "is true, but cluster.name is empty: set cluster.name to the alias ama-metrics is to write, or remove clusterAlias")
	case a.ClusterAlias && AzureClusterLabel("", name) == "":
		v.add("cluster.name", "is written as ama-metrics' cluster_alias (prometheus.azure.clusterAlias: true), and has no letter or digit: "+
			"ama-metrics rewrites every other character to '_', trims them and ignores an alias left empty, got %q", name)
	case a.ClusterAlias || name == "":
	case azureClusterID.MatchString(a.Cluster):
		if label := AzureClusterLabel(a.Cluster, ""); name != label {
			v.add("cluster.name", "is %q, but ama-metrics labels this cluster's series cluster=%q, the AKS resource name (the last segment of prometheus.azure.cluster): "+
				"the rule groups, dashboards and doctor would select no series. Set cluster.name: %s (or remove it: it then defaults to that); "+
				"or set prometheus.azure.clusterAlias: true to have ama-metrics write %q instead, as %q (that renames the label for every series of the cluster)",
				name, label, label, name, AzureClusterLabel("", name))
		}
	case !aksClusterName.MatchString(name):
		v.add("cluster.name", "is %q, which no AKS cluster can be named (1-63 letters, digits, '-' and '_', starting and ending with a letter or digit), "+
			"so ama-metrics never labels series with it: set it to the AKS cluster's name; or set prometheus.azure.clusterAlias: true to have ama-metrics write it, as %q "+
			"(that renames the label for every series of the cluster)", name, AzureClusterLabel("", name))
	}
}

// Resolve settles the values a managed Prometheus decides rather than the file, once,
// for every artifact and doctor, on a valid config; it returns what the
// user should know of it, as warnings. On azure-monitor cluster.name
// becomes the cluster label ama-metrics writes (AzureClusterLabel): its
// rewritten form with prometheus.azure.clusterAlias, the AKS resource name
// when it was empty and prometheus.azure.cluster names the cluster.
func Resolve(c *Config) Problems {
	if c.Prometheus.Managed != managed.AzureMonitor {
		return nil
	}
	a, name := c.Prometheus.Azure, c.Cluster.Name
	switch {
	case a.ClusterAlias:
		label := AzureClusterLabel("", name)
		c.Cluster.Name = label
		rewritten := ""
		if label != name {
			rewritten = fmt.Sprintf(" (ama-metrics rewrites %q as %q: winobs selects %q everywhere)", name, label, label)
		}
		return Problems{{Path: "prometheus.azure.clusterAlias", Related: "cluster.name", Msg: fmt.Sprintf(
			"is true: ama-metrics labels every series of this cluster cluster=%q%s instead of the AKS resource name, "+
				"so Azure's own recommended rules and dashboards, and any rule, alert or dashboard of yours that selects the AKS name, select nothing from now on", label, rewritten)}}
	case name == "" && a.Cluster != "":
		c.Cluster.Name = AzureClusterLabel(a.Cluster, "")
	case name != "" && a.Cluster == "":
		return Problems{{Path: "cluster.name", Msg: fmt.Sprintf(
			"cannot be checked against the cluster label ama-metrics writes, the AKS resource name, while prometheus.azure.cluster is empty: "+
				"if the AKS cluster is not named %q, the rule groups, dashboards and doctor select no series (set prometheus.azure.cluster: az aks show --query id)", name)}}
	}
	return nil
}

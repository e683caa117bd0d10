// Package managed is the one table of the managed Prometheus services the
// rules can run in (prometheus.platform): a row each, with its name, its
// output folder, where the exporter's monitor goes, what doctor says of it
// and how doctor reaches it. config, view, doctor and gen init read the row;
// each service's renderer is a package beneath this one (azuremonitor, amp,
// gmp), which bundle runs for the row (bundle.Managed). Adding a service is
// a row here, a package beneath, and its renderer named in bundle.
//
// The table imports nothing of winobs: config validates by it, and the
// renderers, which read the views, sit below it.
package managed

import (
	"slices"
	"strings"
)

// The managed services, by prometheus.platform's value ("" is a Prometheus
// that loads PrometheusRule objects: kube-prometheus-stack, the operator).
const (
	// AzureMonitor is Azure Monitor managed Prometheus (AKS).
	AzureMonitor = "azure-monitor"
	// AMP is Amazon Managed Service for Prometheus (EKS).
	AMP = "amp"
	// GMP is Google Cloud Managed Service for Prometheus (GKE).
	GMP = "gmp"
)

// The services' output folders, named once for their rows and for the
// commands their rows tell.
const (
	azureMonitorDir = "azure-monitor/"
	ampDir          = "amp/"
	gmpDir          = "gmp/"
)

// Service is one managed Prometheus: what every part of gen needs to know
// of it apart from its renderer.
type Service struct {
	// Name is prometheus.platform's value, and --prometheus's.
	Name string
	// Title is its product name; Collector, what collects a cluster's
	// metrics for it, where a user knows it by that name.
	Title, Collector string
	// Distribution is the Kubernetes distribution (gen init --platform)
	// whose clusters usually send their metrics to it.
	Distribution string
	// InitFlags are what gen init needs besides --prometheus, as shown to
	// the user.
	InitFlags string
	// ClusterLabel is the label its collectors write on every series
	// themselves, naming the cluster; "" when the user's scrape does.
	ClusterLabel string
	// Dir is the output folder its files are written to.
	Dir string
	// MonitorAPI is the apiVersion of the PodMonitor its collector reads;
	// "" for prometheus-operator's.
	MonitorAPI string
	// MonitorBeside: its clusters have no monitoring.coreos.com CRD for
	// apply -k to meet, and its managed collector does not read one: the
	// exporter's monitor is written into Dir, for a self-run collector.
	MonitorBeside bool
	// Doctor is what gen doctor says of it.
	Doctor Doctor
}

// Doctor is what gen doctor tells of a managed service, and how it reaches
// the service's query API.
type Doctor struct {
	// Endpoint is what its query endpoint is called; Reach, how to reach
	// it when it does not answer.
	Endpoint, Reach string
	// NoRules is why its rules and alerts are not read, and where to see
	// them instead.
	NoRules string
	// Deploy is how its rules are deployed.
	Deploy string
	// OneMetricPerQuery: its query API takes one __name__ matcher in a
	// query, so doctor joins metrics itself or skips a join it cannot make.
	OneMetricPerQuery bool
	// SigV4: its query API is signed with AWS SigV4 for the workspace's
	// region, with credentials from AWS's standard chain.
	SigV4 bool
	// QueryURL is its query API for a workspace in a region, when that is
	// all it takes; nil when the user gives --prometheus.
	QueryURL func(region, workspace string) string
}

// Services are the managed Prometheus services, in the order help and
// errors list them.
var Services = []Service{
	{
		Name: AzureMonitor, Title: "Azure Monitor managed Prometheus", Collector: "the ama-metrics add-on", Distribution: "aks",
		InitFlags: "--azure-workspace <id> --azure-location <region>",
		Dir:       azureMonitorDir, ClusterLabel: "cluster",
		// ama-metrics reads the same PodMonitor as prometheus-operator, in
		// a group of its own (its chart's podmonitors.azmonitoring.coreos.com CRD).
		MonitorAPI: "azmonitoring.coreos.com/v1",
		Doctor: Doctor{
			Endpoint: "Azure Monitor workspace",
			Reach: "check the URL (the workspace's query endpoint: az monitor account show --ids <workspace id> --query metrics.prometheusQueryEndpoint -o tsv) and the token: " +
				"--prometheus-bearer-token-file with a token for https://prometheus.monitor.azure.com (az account get-access-token --resource https://prometheus.monitor.azure.com --query accessToken -o tsv), " +
				"of an identity with Monitoring Data Reader on the workspace",
			NoRules: "Azure Monitor's query API serves no rules, alerts or configuration (documented: query, query_range, series, labels, __name__ values): " +
				"see the rule groups with az resource list --resource-type Microsoft.AlertsManagement/prometheusRuleGroups, and its alerts in the portal's Alerts",
			Deploy: "deploy them: az deployment group create -g <the workspace's resource group> --template-file out/" + azureMonitorDir + "prometheus-rule-groups.json; their clusterName is the cluster label ama-metrics writes (docs/platforms.md#the-cluster-label): a cluster_alias in the cluster's ama-metrics settings that winobs's config does not know renames it (gen azure-settings finds it)",
			// "Query Prometheus metrics using the API and PromQL", API
			// limitations: "There can only be one __name__ label matcher in a query".
			OneMetricPerQuery: true,
		},
	},
	{
		Name: AMP, Title: "Amazon Managed Service for Prometheus", Distribution: "eks",
		InitFlags: "--amp-workspace ws-… --amp-region <region>",
		Dir:       ampDir, MonitorBeside: true,
		Doctor: Doctor{
			Endpoint: "AMP workspace",
			Reach: "check the URL (https://aps-workspaces.<region>.amazonaws.com/workspaces/<ws-id>) and the AWS credentials doctor signs with " +
				"(SigV4: the standard chain, AWS_PROFILE or the environment, never a flag; aps:QueryMetrics on the workspace)",
			NoRules: "doctor reads no rules or alerts from Amazon Managed Service for Prometheus, whose namespace splits the alerts by its quota: " +
				"see them with aws amp describe-rule-groups-namespace and the workspace's alert manager",
			Deploy: "upload it: aws amp create-rule-groups-namespace (or put-rule-groups-namespace) --workspace-id <ws-id> --name <namespace> --data fileb://out/" + ampDir + "<namespace>.yaml",
			SigV4:  true,
			QueryURL: func(region, workspace string) string {
				return "https://aps-workspaces." + region + ".amazonaws.com/workspaces/" + workspace
			},
		},
	},
	{
		Name: GMP, Title: "Google Cloud Managed Service for Prometheus", Distribution: "gke",
		Dir: gmpDir, MonitorBeside: true, ClusterLabel: "cluster",
		Doctor: Doctor{
			Endpoint: "GMP frontend",
			Reach: "check the URL (the frontend's Service, port-forwarded: http://127.0.0.1:9090) and, when not through the frontend, the token: " +
				"--prometheus-bearer-token-file with gcloud auth print-access-token's output",
			NoRules: "GMP's frontend serves the query API alone: see the ClusterRules with kubectl describe clusterrules, and the alerts in Cloud Monitoring",
			Deploy:  "apply it: kubectl apply -k out (" + gmpDir + "winobs-windows.yaml), with GMP's managed collection on so its CRDs and rule evaluator exist",
		},
	},
}

// Lookup is the service named name; ok is false for "" (no managed
// service) and for a name no row holds.
func Lookup(name string) (s Service, ok bool) {
	i := slices.IndexFunc(Services, func(s Service) bool { return s.Name == name })
	if i < 0 {
		return Service{}, false
	}
	return Services[i], true
}

// Names are the services' names, in the table's order, joined for a
// message: "azure-monitor, amp or gmp".
func Names() string {
	var names []string
	for _, s := range Services {
		names = append(names, s.Name)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

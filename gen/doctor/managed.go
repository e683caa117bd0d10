package doctor

// A managed Prometheus (prometheus.platform): doctor reads no build info,
// configuration, rules or alerts there, proves the rules run by their
// records, and skips, saying why, each check that needs what it does not
// read. Azure Monitor's workspace query endpoint
// (az monitor account show --query metrics.prometheusQueryEndpoint) documents
// /api/v1/query, query_range, series, labels and label/__name__/values
// alone, each query scoped to a metric name, so there doctor asks for
// several metrics one name at a time. GMP's frontend proxies the query
// API alone. AMP serves its rules through the namespace's split groups
// (docs/platforms.md), which doctor leaves to the AWS CLI.

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/vocab"
)

// platformDoc is what doctor tells of one managed platform.
type platformDoc struct {
	// endpoint is what its query endpoint is called, and reach how to
	// reach it when it does not answer.
	endpoint, reach string
	// noRules is why its rules and alerts are not read, and where to see
	// them instead.
	noRules string
	// deploy is how its rules are deployed.
	deploy string
}

// platformDocs are the managed platforms doctor knows, by
// prometheus.platform.
var platformDocs = map[string]platformDoc{
	config.PlatformAzureMonitor: {
		endpoint: "Azure Monitor workspace",
		reach: "check the URL (the workspace's query endpoint: az monitor account show --ids <workspace id> --query metrics.prometheusQueryEndpoint -o tsv) and the token: " +
			"--prometheus-bearer-token-file with a token for https://prometheus.monitor.azure.com (az account get-access-token --resource https://prometheus.monitor.azure.com --query accessToken -o tsv), " +
			"of an identity with Monitoring Data Reader on the workspace",
		noRules: "Azure Monitor's query API serves no rules, alerts or configuration (documented: query, query_range, series, labels, __name__ values): " +
			"see the rule groups with az resource list --resource-type Microsoft.AlertsManagement/prometheusRuleGroups, and its alerts in the portal's Alerts",
		deploy: "deploy them: az deployment group create -g <the workspace's resource group> --template-file out/azure-monitor/prometheus-rule-groups.json; their clusterName is the cluster label ama-metrics writes (docs/platforms.md#the-cluster-label): a cluster_alias in the cluster's ama-metrics settings that winobs's config does not know renames it (gen azure-settings finds it)",
	},
	config.PlatformAMP: {
		endpoint: "AMP workspace",
		reach: "check the URL (https://aps-workspaces.<region>.amazonaws.com/workspaces/<ws-id>) and the AWS credentials doctor signs with " +
			"(SigV4: the standard chain, AWS_PROFILE or the environment, never a flag; aps:QueryMetrics on the workspace)",
		noRules: "doctor reads no rules or alerts from Amazon Managed Service for Prometheus, whose namespace splits the alerts by its quota: " +
			"see them with aws amp describe-rule-groups-namespace and the workspace's alert manager",
		deploy: "upload it: aws amp create-rule-groups-namespace (or put-rule-groups-namespace) --workspace-id <ws-id> --name <namespace> --data fileb://out/amp/<namespace>.yaml",
	},
	config.PlatformGMP: {
		endpoint: "GMP frontend",
		reach: "check the URL (the frontend's Service, port-forwarded: http://127.0.0.1:9090) and, when not through the frontend, the token: " +
			"--prometheus-bearer-token-file with gcloud auth print-access-token's output",
		noRules: "GMP's frontend serves the query API alone: see the ClusterRules with kubectl describe clusterrules, and the alerts in Cloud Monitoring",
		deploy:  "apply it: kubectl apply -k out (gmp/winobs-windows.yaml), with GMP's managed collection on so its CRDs and rule evaluator exist",
	},
}

// managed: the rules run in a managed Prometheus.
func (r *run) managed() bool { return r.v.Platform != "" }

// azure: the rules run in Azure Monitor, whose query API takes only
// selectors scoped to one metric name.
func (r *run) azure() bool { return r.v.Platform == config.PlatformAzureMonitor }

// joinsMetrics is a need: a query API that takes a query joining several
// metrics. Azure Monitor's takes one __name__ matcher in a query ("Query
// Prometheus metrics using the API and PromQL", API limitations: "There
// can only be one __name__ label matcher in a query"); the checks whose
// join doctor makes itself (scrapedWithout, containerLabels) ask one
// metric a query there, and the one whose join is three of
// kube-state-metrics' metrics over every pod of the cluster is not asked.
func joinsMetrics(f *facts) string {
	if f.platform == config.PlatformAzureMonitor {
		return "Azure Monitor's query API takes one metric name in a query, and this check joins kube-state-metrics' running containers with their pods and nodes: " +
			"not asked there (the records check shows the container info record has series)"
	}
	return ""
}

// rulesAPI is a need: a Prometheus whose rules and alerts doctor reads.
func rulesAPI(f *facts) string { return platformDocs[f.platform].noRules }

// managedReachable: the endpoint answers a query scoped to a metric, with
// the credentials given (it may have no build info to ask).
func (r *run) managedReachable(ctx context.Context, api *API, id string) Check {
	c := Check{ID: id, Title: api.name + " answers its API"}
	doc := platformDocs[r.v.Platform]
	if _, err := api.Query(ctx, "count(up)"); err != nil {
		c.Status, c.Evidence, c.Fix = Fail, []string{err.Error()}, doc.reach
		return c
	}
	c.Status, c.Evidence = Pass, []string{doc.endpoint + " at " + api.base.Redacted() + " answers PromQL"}
	return c
}

// managedRules: the platform's rules run, as their records arrive (the
// node info record has a series whenever an exporter is scraped).
func (r *run) managedRules(ctx context.Context, c Check) Check {
	if r.exportersUp == 0 {
		return skip(c, "no exporter target is up: no record can be written, nothing to check (see windows-nodes-scraped)")
	}
	n, err := r.count(ctx, "count("+r.t.Cluster().Of(vocab.Records.NodeInfo)+")")
	if err != nil {
		return failed(c, err)
	}
	if n == 0 {
		c.Status = Fail
		c.Evidence = []string{fmt.Sprintf("%s has no series although exporters are scraped: the rules are not deployed, disabled, or scoped to another cluster", vocab.Records.NodeInfo)}
		c.Fix = platformDocs[r.v.Platform].deploy
		return c
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("the rules evaluate: %s has %d series", vocab.Records.NodeInfo, n)}
	return c
}

// present reports which metric names have series under sel: one query
// with a regular expression over __name__ on a Prometheus; on Azure
// Monitor, one query a name.
func (r *run) present(ctx context.Context, names []string, sel func(...vocab.Matcher) vocab.Selector) (map[string]bool, error) {
	out := map[string]bool{}
	if !r.azure() {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = regexp.QuoteMeta(n)
		}
		ss, err := r.query(ctx, "count by (__name__) ("+sel(vocab.Re("__name__", strings.Join(quoted, "|"))).String()+")")
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			out[s.Metric["__name__"]] = true
		}
		return out, nil
	}
	for _, n := range names {
		k, err := r.count(ctx, "count("+sel().Of(n)+")")
		if err != nil {
			return nil, err
		}
		out[n] = k > 0
	}
	return out, nil
}

// managedLoaded: the rule groups as the facts see them where no rules API
// is read: the records group when its records arrive, the alerts group
// never known.
func (r *run) managedLoaded(ctx context.Context) map[string]bool {
	n, err := r.count(ctx, "count("+r.t.Cluster().Of(vocab.Records.NodeInfo)+")")
	return map[string]bool{rules.RecordsGroup: err == nil && n > 0}
}

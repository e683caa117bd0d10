package doctor

// Azure Monitor managed Prometheus: its workspace's query endpoint
// (https://<workspace>.<region>.prometheus.monitor.azure.com) documents
// /api/v1/query, query_range, series, labels and label/__name__/values
// alone, and each query must be scoped to a metric name. So doctor reads
// no rules, alerts, build info or configuration there, and asks for
// several metrics one name at a time. Each check that needs what it does
// not serve is skipped with the reason, never passed.

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/rules"
	"github.com/winobs/winobs/vocab"
)

// azureAPIs is what the workspace's query API serves, for skip reasons.
const azureAPIs = "Azure Monitor's query API serves no rules, alerts or configuration (documented: query, query_range, series, labels, __name__ values)"

// azure: the rules run in Azure Monitor.
func (r *run) azure() bool { return r.v.Platform == config.PlatformAzureMonitor }

// rulesAPI is a need: a Prometheus that serves its rules and alerts.
func rulesAPI(f *facts) string {
	if f.azure {
		return azureAPIs + ": see the rule group with az resource list --resource-type Microsoft.AlertsManagement/prometheusRuleGroups, and its alerts in the portal's Alerts"
	}
	return ""
}

// azureReachable: the workspace answers a query scoped to a metric, with
// the token given (it has no build info to ask).
func (r *run) azureReachable(ctx context.Context, api *API, id string) Check {
	c := Check{ID: id, Title: api.name + " answers its API"}
	if _, err := api.Query(ctx, "count(up)"); err != nil {
		c.Status, c.Evidence = Fail, []string{err.Error()}
		c.Fix = "check the URL (the workspace's query endpoint, https://<workspace>.<region>.prometheus.monitor.azure.com) and the token: " +
			"--prometheus-bearer-token-file with a token for https://prometheus.monitor.azure.com (az account get-access-token --resource https://prometheus.monitor.azure.com --query accessToken -o tsv), " +
			"of an identity with Monitoring Data Reader on the workspace"
		return c
	}
	c.Status, c.Evidence = Pass, []string{"Azure Monitor workspace at " + api.base.Redacted() + " answers PromQL"}
	return c
}

// azureRuleGroup: the Azure rule group runs, as its records arrive (the
// node info record has a series whenever an exporter is scraped).
func (r *run) azureRuleGroup(ctx context.Context, c Check) Check {
	if r.exportersUp == 0 {
		return skip(c, "no exporter target is up: no record can be written, nothing to check (see windows-nodes-scraped)")
	}
	n, err := r.count(ctx, "count("+r.t.Cluster().Of(vocab.Records.NodeInfo)+")")
	if err != nil {
		return failed(c, err)
	}
	if n == 0 {
		c.Status = Fail
		c.Evidence = []string{fmt.Sprintf("%s has no series although exporters are scraped: the rule group is not deployed, disabled, or scoped to another cluster", vocab.Records.NodeInfo)}
		c.Fix = "deploy it: az deployment group create -g <the workspace's resource group> --template-file out/azure-monitor/prometheus-rule-groups.json; its clusterName must be the cluster label ama-metrics writes (cluster.name, cluster_alias)"
		return c
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("the rule group evaluates: %s has %d series", vocab.Records.NodeInfo, n)}
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

// groupsReadable: the rule groups as the loaded facts see them on Azure,
// where no rules API says which are loaded: the records group when its
// records arrive, the alerts group never known.
func (r *run) azureLoaded(ctx context.Context) map[string]bool {
	n, err := r.count(ctx, "count("+r.t.Cluster().Of(vocab.Records.NodeInfo)+")")
	return map[string]bool{rules.RecordsGroup: err == nil && n > 0}
}

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

	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/vocab"
)

// managed: the rules run in a managed Prometheus.
func (r *run) managed() bool { return r.v.Managed.Name != "" }

// oneMetric: the rules run in a managed Prometheus whose query API takes
// one metric name a query (Azure Monitor's).
func (r *run) oneMetric() bool { return r.v.Managed.Doctor.OneMetricPerQuery }

// joinsMetrics is a need: a query API that takes a query joining several
// metrics. Azure Monitor's takes one __name__ matcher in a query ("Query
// Prometheus metrics using the API and PromQL", API limitations: "There
// can only be one __name__ label matcher in a query"); the checks whose
// join doctor makes itself (scrapedWithout, containerLabels) ask one
// metric a query there, and the one whose join is three of
// kube-state-metrics' metrics over every pod of the cluster is not asked.
func joinsMetrics(f *facts) string {
	if f.managed.Doctor.OneMetricPerQuery {
		return "Azure Monitor's query API takes one metric name in a query, and this check joins kube-state-metrics' running containers with their pods and nodes: " +
			"not asked there (the records check shows the container info record has series)"
	}
	return ""
}

// rulesAPI is a need: a Prometheus whose rules and alerts doctor reads.
func rulesAPI(f *facts) string { return f.managed.Doctor.NoRules }

// managedReachable: the endpoint answers a query scoped to a metric, with
// the credentials given (it may have no build info to ask).
func (r *run) managedReachable(ctx context.Context, api *API, id string) Check {
	c := Check{ID: id, Title: api.name + " answers its API"}
	doc := r.v.Managed.Doctor
	if _, err := api.Query(ctx, "count(up)"); err != nil {
		c.Status, c.Evidence, c.Fix = Fail, []string{err.Error()}, doc.Reach
		return c
	}
	c.Status, c.Evidence = Pass, []string{doc.Endpoint + " at " + api.base.Redacted() + " answers PromQL"}
	return c
}

// managedRules: the managed service's rules run, as their records arrive (the
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
		c.Fix = r.v.Managed.Doctor.Deploy
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
	if !r.oneMetric() {
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

package doctor

// The checks of the nodes and their exporters: scraped, versions, collectors,
// the commit limit, the cluster label and the shipper's counters.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/vocab"
)

// nodesScraped: every Windows node has an exporter target that is up.
func (r *run) nodesScraped(ctx context.Context, c Check) Check {
	if r.scrapeErr != nil {
		return failed(c, r.scrapeErr)
	}
	missing, down := r.missing, r.down
	c.Evidence = append(c.Evidence, fmt.Sprintf("%d Windows nodes in kube-state-metrics, %d exporter targets (job %q), %d down",
		len(r.windowsNodes), r.targets, r.v.ExporterJob, len(down)))
	switch {
	case len(r.windowsNodes) == 0:
		c.Status, c.Fix = Fail, fmt.Sprintf("kube-state-metrics (job %q) reports no node with a Windows os_image: check that job name (kubeStateMetrics.job) and that Prometheus scrapes it", r.v.KSMJob)
		if down := r.ksmDown(ctx); down != "" {
			c.Evidence = append(c.Evidence, "kube-state-metrics targets down: "+down)
			c.Fix = fmt.Sprintf("kube-state-metrics (job %q) is down: its pod's status and log say why; until it is back, no container has its pod's labels", r.v.KSMJob)
		}
	case len(missing) > 0:
		c.Status = Fail
		c.Evidence = append(c.Evidence, fmt.Sprintf("%d of %d Windows nodes have no exporter target: %s", len(missing), len(r.windowsNodes), names(missing)))
		c.Fix = fmt.Sprintf("check the exporter DaemonSet runs on those nodes (nodes.selector, nodes.tolerations), that the monitor is selected by your Prometheus (windowsExporter.monitorLabels) and that its job is %q (%s)", r.v.ExporterJob, r.runbook(rules.AlertExporterDown))
	case len(down) > 0:
		c.Status = Fail
		c.Evidence = append(c.Evidence, "targets down: "+names(down))
		c.Fix = "a target that is down is usually firewalled: windowsExporter.firewall.allowFrom must list the nodes your Prometheus pods run on (" + r.runbook(rules.AlertExporterDown) + ")"
	default:
		c.Status = Pass
	}
	return c
}

// ksmDown names kube-state-metrics' targets that are down, if it has
// targets and none is up.
func (r *run) ksmDown(ctx context.Context) string {
	ss, err := r.query(ctx, r.t.KSM().Of("up"))
	if err != nil || len(ss) == 0 {
		return ""
	}
	var down []string
	for _, s := range ss {
		if s.Value == 1 {
			return ""
		}
		down = append(down, s.Metric["instance"])
	}
	return names(down)
}

// shipperNodes are the nodes kube-state-metrics lists a pod of the
// shipper's DaemonSet (in the config's namespace) on.
func (r *run) shipperNodes(ctx context.Context) ([]string, error) {
	ss, err := r.query(ctx, fmt.Sprintf("count by (%s) (%s)", contract.LabelNode,
		r.t.KSM(vocab.Eq("namespace", r.v.Namespace), vocab.Eq("created_by_kind", "DaemonSet"), vocab.Eq("created_by_name", contract.ShipperName)).Of("kube_pod_info")))
	return label(ss, contract.LabelNode), err
}

// exporterVersion: every exporter runs a version the rules are tested with.
func (r *run) exporterVersion(ctx context.Context, c Check) Check {
	ss, err := r.query(ctx, fmt.Sprintf(`count by (version) (%s)`, r.t.Exporter().Of(vocab.Metrics.BuildInfo)))
	if err != nil {
		return failed(c, err)
	}
	tested := regexp.MustCompile("^(?:" + vocab.SupportedExporterVersions + ")$")
	var bad []string
	for _, s := range ss {
		v := s.Metric["version"]
		n, err := countOf(s)
		if err != nil {
			return failed(c, err)
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s on %d nodes", v, n))
		if !tested.MatchString(v) {
			bad = append(bad, v)
		}
	}
	switch {
	case len(ss) == 0 && r.exportersUp == 0:
		return skip(c, noExporter)
	case len(ss) == 0:
		c.Status, c.Fix = Fail, "exporter targets are up but none reports "+vocab.Metrics.BuildInfo+": is the job's target really windows_exporter?"
	case len(bad) > 0:
		c.Status, c.Fix = Fail, "untested versions "+names(bad)+": metric names may have changed (0.32 renames the commit limit); pin windowsExporter.image to a tested version ("+r.runbook(rules.AlertExporterVersionUntested)+")"
	default:
		c.Status = Pass
	}
	return c
}

// collectors: every collector of every exporter succeeds.
func (r *run) collectors(ctx context.Context, c Check) Check {
	ss, err := r.query(ctx, r.t.Exporter().Of(vocab.Metrics.CollectorSuccess)+" == 0")
	if err != nil {
		return failed(c, err)
	}
	if len(ss) == 0 {
		c.Status = Pass
		return c
	}
	var failing []string
	for _, s := range ss {
		failing = append(failing, s.Metric["instance"]+" "+s.Metric["collector"])
	}
	c.Status, c.Evidence = Fail, []string{fmt.Sprintf("%d failing: %s", len(ss), names(failing))}
	c.Fix = "see the exporter's log on that node (" + r.runbook(rules.AlertExporterCollectorFailing) + ")"
	return c
}

// commitPerNode: the commit charge record exists for every scraped node.
func (r *run) commitPerNode(ctx context.Context, c Check) Check {
	c.Fix = "see commit-limit-metric: the record needs " + vocab.Metrics.MemoryCommitted + " and " + vocab.Metrics.MemoryCommitLimit
	return r.scrapedWithout(ctx, c, vocab.Records.NodeCommitRatio, r.t.Cluster())
}

// commitLimitMetric: every scraped node reports the commit limit (renamed
// in 0.32).
func (r *run) commitLimitMetric(ctx context.Context, c Check) Check {
	c.Fix = "the memory collector is off or the exporter is 0.32+ (" + r.runbook(rules.AlertNodeCommitLimitMetricAbsent) + ")"
	if r.v.Managed.Name == managed.AzureMonitor {
		// Azure's minimal ingestion profile keeps neither commit metric.
		c.Fix = "ama-metrics drops it unless kept: apply out/" + r.v.Managed.Dir + "ama-metrics-settings-configmap.yaml (its keep-lists hold every metric winobs reads; docs/platforms.md), or " + c.Fix
	}
	return r.scrapedWithout(ctx, c, vocab.Metrics.MemoryCommitLimit, r.t.Exporter())
}

// scrapedWithout fails c, naming them, when exporter targets that are up
// have no metric (selected by sel) for their instance.
func (r *run) scrapedWithout(ctx context.Context, c Check, metric string, sel vocab.Selector) Check {
	fix := c.Fix
	c.Fix = ""
	var without []string
	if !r.oneMetric() {
		ss, err := r.query(ctx, fmt.Sprintf(`max by (instance) (%s == 1) unless on (instance) max by (instance) (%s)`,
			r.t.Exporter().Of("up"), sel.Of(metric)))
		if err != nil {
			return failed(c, err)
		}
		without = label(ss, "instance")
	} else {
		// One metric a query (joinsMetrics): the difference made here.
		up, err := r.query(ctx, fmt.Sprintf(`max by (instance) (%s == 1)`, r.t.Exporter().Of("up")))
		if err != nil {
			return failed(c, err)
		}
		has, err := r.query(ctx, fmt.Sprintf(`max by (instance) (%s)`, sel.Of(metric)))
		if err != nil {
			return failed(c, err)
		}
		with := map[string]bool{}
		for _, i := range label(has, "instance") {
			with[i] = true
		}
		for _, i := range label(up, "instance") {
			if !with[i] {
				without = append(without, i)
			}
		}
	}
	if len(without) > 0 {
		c.Status, c.Fix = Fail, fix
		c.Evidence = []string{fmt.Sprintf("%d scraped nodes without %s: %s", len(without), metric, names(without))}
		return c
	}
	c.Status = Pass
	return c
}

// clusterLabel: with a cluster name configured, the series carry it where
// they leave this Prometheus. kube-prometheus-stack sets it as an external
// label, which a Prometheus adds to remote write, federation and alerts
// but never shows in its own query answers: so the configuration is read
// first, and the series only when it is not there.
func (r *run) clusterLabel(ctx context.Context, c Check) Check {
	if !r.v.Cluster.Multi() {
		return skip(c, "single cluster (cluster.name is empty): nothing to check")
	}
	name, want := r.v.Cluster.Label, r.v.Cluster.Name
	ext := r.external
	if r.managed() {
		// A managed Prometheus serves no configuration, and its collectors
		// write the label on the series themselves.
		ext = map[string]string{}
	}
	if ext == nil {
		var err error
		if ext, err = r.prom.ExternalLabels(ctx); err != nil {
			return failed(c, err)
		}
	}
	// What the exporter's own series carry: the dashboards read them so
	// (docs/dashboards.md, "The cluster label").
	ss, err := r.query(ctx, fmt.Sprintf(`count by (%s) (%s)`, name, vocab.Selector{vocab.Eq(contract.LabelJob, r.v.ExporterJob)}.Of("up")))
	if err != nil {
		return failed(c, err)
	}
	values := label(ss, name)
	unlabelled := slices.Contains(values, "")
	if v, ok := ext[name]; ok {
		if v == want {
			c.Status, c.Evidence = Pass, []string{fmt.Sprintf("external label %s=%q: Prometheus adds it to everything it sends (remote write, federation, alerts)", name, want)}
			if unlabelled {
				c.Evidence = append(c.Evidence, fmt.Sprintf("its own series carry no %s (only an external label): read on this Prometheus, the dashboards take them as this cluster's", name))
			}
			return c
		}
		c.Status = Fail
		c.Evidence = []string{fmt.Sprintf("external label %s=%q, but cluster.name is %q", name, v, want)}
		c.Fix = "make cluster.name and the external label the same name (kube-prometheus-stack: prometheus.prometheusSpec.externalLabels)"
		return c
	}
	if !slices.Contains(values, want) {
		c.Status = Fail
		c.Evidence = []string{fmt.Sprintf("no external label %s, and its values on the exporter's up series are %s; want %q", name, names(quoteAll(values)), want)}
		if unlabelled {
			c.Evidence = append(c.Evidence, fmt.Sprintf("read on this Prometheus, the dashboards show its series without %s as this cluster's; its alerts and what it remote-writes carry no cluster", name))
		}
		c.Fix = fmt.Sprintf("set the external label %s: %q on this Prometheus (kube-prometheus-stack: prometheus.prometheusSpec.externalLabels; docs/rulers.md), or cluster.name/cluster.label to what your series carry", name, want)
		if r.oneMetric() {
			c.Evidence[0] = fmt.Sprintf("ama-metrics labels the exporter's series %s=%s; want %q", name, names(quoteAll(values)), want)
			c.Fix = "ama-metrics writes the AKS resource name, or a cluster_alias of the cluster's ama-metrics settings rewritten (docs/platforms.md#the-cluster-label): " +
				"set cluster.name to what it writes (with prometheus.azure.clusterAlias: true when that is an alias), render, and deploy the rule groups again; gen azure-settings names an alias the config does not know"
		}
		return c
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("the exporter's series carry %s=%q", name, want)}
	return c
}

// shipperCounters: the eventlog-shipper dropped nothing and pushed without
// errors in the last hour (its metrics arrive through the exporter).
func (r *run) shipperCounters(ctx context.Context, c Check) Check {
	present, err := r.query(ctx, "count("+r.t.Exporter().Of(contract.ShipperEventsRead)+")")
	if err != nil {
		return failed(c, err)
	}
	channels, err := countIn(present)
	if err != nil {
		return failed(c, err)
	}
	if channels == 0 {
		shipperDefault := r.v.ShipperDefault
		switch {
		case shipperDefault && !r.v.ExporterDeployed:
			c.Status, c.Evidence = Fail, []string{"the eventlog-shipper is the log agent of every unlabelled node, but no " + contract.ShipperEventsRead + " reaches Prometheus"}
			c.Fix = "its counters are a textfile that winobs's exporter reads (shipper.textfileDir), and windowsExporter.deploy is false: its drops are invisible; deploy winobs's exporter, or have yours read that directory (--collector.textfile.directories)"
		case shipperDefault && r.exportersUp == 0:
			return skip(c, noExporter)
		case shipperDefault:
			c.Status, c.Evidence = Fail, []string{"the eventlog-shipper is the log agent of every unlabelled node, but no " + contract.ShipperEventsRead + " reaches Prometheus"}
			c.Fix = "check that the shipper's pods run on the Windows nodes (kubectl get pods -l app.kubernetes.io/name=" + contract.ShipperName + ") and its log"
		default:
			on, err := r.shipperNodes(ctx)
			if err != nil {
				return failed(c, err)
			}
			if len(on) == 0 {
				return skip(c, "no node runs the eventlog-shipper (kube-state-metrics lists no pod of the "+contract.ShipperName+" DaemonSet, and no "+contract.ShipperEventsRead+"): nothing to check")
			}
			c.Status, c.Evidence = Fail, []string{"the eventlog-shipper runs on " + names(on) + " (kube-state-metrics), but no " + contract.ShipperEventsRead + " reaches Prometheus"}
			c.Fix = "its counters are a textfile that windows-exporter reads (shipper.textfileDir): check that the exporter on those nodes is winobs's, or reads that directory (--collector.textfile.directories), and the shipper's log"
		}
		return c
	}
	var problems []string
	metadata := false
	for _, m := range []struct {
		metric, what string
		by           []string
	}{
		{contract.ShipperEventsDropped, "dropped", []string{contract.LabelReason}},
		{contract.ShipperPushErrors, "push errors", []string{contract.LabelStatus, contract.LabelReason}},
	} {
		ss, err := r.query(ctx, fmt.Sprintf("sum by (instance, %s) (increase(%s[1h])) > 0", strings.Join(m.by, ", "), r.t.Exporter().Of(m.metric)))
		if err != nil {
			return failed(c, err)
		}
		for _, s := range ss {
			var by []string
			for _, l := range m.by {
				if v := s.Metric[l]; v != "" {
					by = append(by, l+"="+v)
				}
			}
			problems = append(problems, fmt.Sprintf("%s %s %s: %.0f in the last hour", s.Metric["instance"], m.what, strings.Join(by, " "), s.Value))
			metadata = metadata || m.metric == contract.ShipperPushErrors && s.Metric[contract.LabelReason] == contract.PushDisallowedMetadata
		}
	}
	if len(problems) > 0 {
		c.Status, c.Evidence = Fail, problems
		c.Fix = "the reasons are in the shipper's log and docs/reliability.md; push errors name Loki's answer"
		if metadata {
			c.Fix = "Loki refuses structured metadata (limits_config.allow_structured_metadata is false), so every event waits: allow it (Loki 3.0+ on schema v13 and tsdb), " +
				"or render winobs with loki.structuredMetadata: false (docs/loki.md); " + c.Fix
		}
		return c
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("%d shipper channels", channels)}
	return c
}

package doctor

// The checks of winobs's rules on Prometheus: loaded, recording, covering
// every container with its pod's labels, alerts firing.

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/vocab"
)

// rulesLoaded: the groups winobs rendered are loaded, healthy, without an
// error and evaluated recently.
func (r *run) rulesLoaded(ctx context.Context, c Check) Check {
	if r.managed() {
		return r.managedRules(ctx, c)
	}
	loaded, err := r.promGroups, r.promGroupsErr
	if err != nil {
		return failed(c, err)
	}
	now := r.now()
	var problems []string
	for _, want := range r.rules.Groups {
		i := slices.IndexFunc(loaded, func(g RuleGroup) bool { return g.Name == want.Name })
		if i < 0 {
			problems = append(problems, fmt.Sprintf("group %s is not loaded", want.Name))
			continue
		}
		g := loaded[i]
		have := map[string]bool{}
		for _, rule := range g.Rules {
			have[rule.Name] = true
			if rule.Health != "" && rule.Health != "ok" {
				problems = append(problems, fmt.Sprintf("%s: %s is %s: %s", g.Name, rule.Name, rule.Health, message(rule.LastError)))
			} else if rule.LastError != "" {
				problems = append(problems, fmt.Sprintf("%s: %s: %s", g.Name, rule.Name, message(rule.LastError)))
			}
		}
		var absent []string
		for _, rule := range want.Rules {
			if name := rule.Record + rule.Alert; !have[name] {
				absent = append(absent, name)
			}
		}
		if len(absent) > 0 {
			problems = append(problems, fmt.Sprintf("group %s lacks %s (an older render?)", g.Name, names(absent)))
		}
		interval := time.Duration(g.Interval * float64(time.Second))
		if interval <= 0 {
			interval = time.Minute
		}
		if g.LastEvaluation.IsZero() || now.Sub(g.LastEvaluation) > 3*interval+time.Minute {
			problems = append(problems, fmt.Sprintf("group %s was last evaluated %s", g.Name, ago(now, g.LastEvaluation)))
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s: %d rules, every %s, last evaluated %s", g.Name, len(g.Rules), interval, ago(now, g.LastEvaluation)))
	}
	return verdict(c, problems, "a group that is not loaded is not selected by your Prometheus: prometheus.ruleLabels must match its ruleSelector (or load rules/*.yaml); re-apply the current render")
}

// records: every record winobs renders produces series.
func (r *run) records(ctx context.Context, c Check) Check {
	var recorded []string
	for _, g := range r.rules.Groups {
		for _, rule := range g.Rules {
			if rule.Record != "" {
				recorded = append(recorded, rule.Record)
			}
		}
	}
	present, err := r.present(ctx, recorded, r.t.Cluster)
	if err != nil {
		return failed(c, err)
	}
	var empty []string
	for _, g := range r.rules.Groups {
		for _, rule := range g.Rules {
			if rule.Record != "" && !present[rule.Record] {
				empty = append(empty, rule.Record)
			}
		}
	}
	n := len(recorded)
	c.Evidence = []string{fmt.Sprintf("%d of %d records have series", n-len(empty), n)}
	if len(empty) == n && r.exportersUp == 0 {
		return skip(c, "the records group is loaded, but there is no exporter data to record: nothing to check (see windows-nodes-scraped)")
	}
	if len(empty) == n {
		c.Status, c.Fix = Fail, "no record has series although exporters are scraped: check the rules' job selectors (windowsExporter.job, kubeStateMetrics.job) against your targets' job labels"
		return c
	}
	// Records of what a cluster may not have are not failures.
	optional := map[string]bool{vocab.Records.ContainerNoMemoryLimit: true}
	var required []string
	for _, e := range empty {
		if !optional[e] {
			required = append(required, e)
		} else {
			c.Evidence = append(c.Evidence, e+" is empty, as it should be when every Windows container has a memory limit")
		}
	}
	if len(required) > 0 && len(r.windowsNodes) == 0 {
		c.Evidence = append(c.Evidence, "empty: "+names(required))
		return skip(c, "the container records read kube-state-metrics, which reports no Windows node (see windows-nodes-scraped)")
	}
	if len(required) > 0 {
		c.Status = Fail
		c.Evidence = append(c.Evidence, "empty: "+names(required))
		c.Fix = "an empty record reads a metric that is not scraped: check the exporter's collectors (windowsExporter.services, the collector list) and kube-state-metrics (kubeStateMetrics.job)"
		return c
	}
	c.Status = Pass
	return c
}

// windowsContainers selects the running containers of pods on Windows
// nodes, as kube-state-metrics reports them.
func (r *run) windowsContainers() string {
	by := r.t.By("namespace", "pod", "container")
	windows := []vocab.Matcher{vocab.Re("os_image", "(?i).*windows.*")}
	if len(r.unscraped) > 0 {
		quoted := make([]string, len(r.unscraped))
		for i, n := range r.unscraped {
			quoted[i] = regexp.QuoteMeta(n)
		}
		windows = append(windows, vocab.NotRe(contract.LabelNode, strings.Join(quoted, "|")))
	}
	return fmt.Sprintf(`max by (%s) (
  %s == 1
  and on (%s) max by (%s) (%s * on (%s) group_left () max by (%s) (%s))
)`, by, r.t.KSM().Of("kube_pod_container_status_running"),
		r.t.By("namespace", "pod"), r.t.By("namespace", "pod"), r.t.KSM().Of("kube_pod_info"),
		r.t.By(contract.LabelNode), r.t.By(contract.LabelNode), r.t.KSM(windows...).Of("kube_node_info"))
}

// containerCoverage: the info record names every running Windows
// container.
func (r *run) containerCoverage(ctx context.Context, c Check) Check {
	by := r.t.By("namespace", "pod", "container")
	m, err := r.count(ctx, "count("+r.windowsContainers()+")")
	if err != nil {
		return failed(c, err)
	}
	missing, err := r.query(ctx, fmt.Sprintf("topk(%d, %s unless on (%s) %s)", listed, r.windowsContainers(), by, r.t.Cluster().Of(vocab.Records.ContainerInfo)))
	if err != nil {
		return failed(c, err)
	}
	miss, err := r.count(ctx, fmt.Sprintf("count(%s unless on (%s) %s)", r.windowsContainers(), by, r.t.Cluster().Of(vocab.Records.ContainerInfo)))
	if err != nil {
		return failed(c, err)
	}
	if miss > m {
		return failed(c, fmt.Errorf("the server counted %d missing of %d running containers: not an answer doctor can believe", miss, m))
	}
	c.Evidence = []string{fmt.Sprintf("%d of %d running Windows containers covered", m-miss, m)}
	if len(r.unscraped) > 0 {
		c.Evidence = append(c.Evidence, "not counted: the containers on "+names(r.unscraped)+", whose exporter is not scraped (windows-nodes-scraped)")
	}
	if m == 0 {
		return skip(c, "kube-state-metrics reports no running container on a Windows node: nothing to check")
	}
	if !r.loaded[rules.RecordsGroup] {
		return skip(c, groupMissing(rules.RecordsGroup))
	}
	if miss > 0 {
		var ns []string
		for _, s := range missing {
			ns = append(ns, s.Metric["namespace"]+"/"+s.Metric["pod"]+"/"+s.Metric["container"])
		}
		c.Status = Fail
		c.Evidence = append(c.Evidence, "missing: "+names(ns))
		c.Fix = "the exporter's container collector does not report them: check " + vocab.Metrics.ContainerAvailable + " on their node, and that kube-state-metrics reports their container_id"
		return c
	}
	c.Status = Pass
	return c
}

// containerLabels: container series carry the pods' labels, not exported_*
// where winobs's own monitor (honorLabels) scrapes, and never the exporter
// pod's own.
func (r *run) containerLabels(ctx context.Context, c Check) Check {
	nExported, err := r.count(ctx, "count("+r.t.Exporter(vocab.NotEq("exported_pod", "")).Of(vocab.Metrics.ContainerAvailable)+")")
	if err != nil {
		return failed(c, err)
	}
	nOwn, err := r.ownPodContainers(ctx)
	if err != nil {
		return failed(c, err)
	}
	var problems []string
	if n := nExported; n > 0 {
		msg := fmt.Sprintf("%d container series carry exported_namespace/exported_pod: the monitor scrapes without honorLabels", n)
		if r.v.ExporterDeployed {
			problems = append(problems, msg+", but winobs deploys its own monitor with honorLabels: another monitor (kube-prometheus-stack's windowsMonitoring) scrapes the same exporter")
		} else {
			c.Evidence = append(c.Evidence, msg+" (kube-prometheus-stack's ServiceMonitor): the info record maps them back")
		}
	}
	if n := nOwn; n > 0 {
		problems = append(problems, fmt.Sprintf("%d container series carry the exporter pod's own namespace/pod (an exporter before 0.31, or containers whose labels it could not read from containerd): winobs's info record takes theirs from kube-state-metrics, any other query attributes them to the exporter", n))
	}
	return verdict(c, problems, "exported_*: set kube-prometheus-stack's windowsMonitoring.enabled: false (two exporters fight over port 9182), or windowsExporter.deploy: false to use its exporter; the exporter pod's labels: run windows_exporter 0.31 (windowsExporter.image)")
}

// ownPodContainers counts the container series that carry the exporter
// pod's own namespace and pod (those of its build info); on Azure Monitor,
// one metric a query (joinsMetrics), the join made here.
func (r *run) ownPodContainers(ctx context.Context) (int, error) {
	own := r.t.Exporter(vocab.Eq("exported_pod", ""), vocab.NotEq("pod", "")).Of(vocab.Metrics.ContainerAvailable)
	by := r.t.By("instance", "namespace", "pod")
	if !r.oneMetric() {
		return r.count(ctx, fmt.Sprintf(`count(%s and on (%s) %s)`, own, by, r.t.Exporter().Of(vocab.Metrics.BuildInfo)))
	}
	containers, err := r.query(ctx, fmt.Sprintf(`count by (%s) (%s)`, by, own))
	if err != nil {
		return 0, err
	}
	exporters, err := r.query(ctx, fmt.Sprintf(`count by (%s) (%s)`, by, r.t.Exporter().Of(vocab.Metrics.BuildInfo)))
	if err != nil {
		return 0, err
	}
	key := func(s Sample) string {
		return s.Metric["instance"] + "\x00" + s.Metric["namespace"] + "\x00" + s.Metric["pod"]
	}
	pods := map[string]bool{}
	for _, s := range exporters {
		pods[key(s)] = true
	}
	n := 0
	for _, s := range containers {
		if pods[key(s)] {
			k, err := countOf(s)
			if err != nil {
				return 0, err
			}
			n += k
		}
	}
	return n, nil
}

// alertsFiring: no winobs alert fires now; the firing ones, grouped.
func (r *run) alertsFiring(ctx context.Context, c Check) Check {
	if why := exporterUp(&r.facts); why != "" {
		return skip(c, "no winobs alert can fire without exporter data: "+why)
	}
	alerts, err := r.prom.Alerts(ctx)
	if err != nil {
		return failed(c, err)
	}
	ours := map[string]bool{}
	for _, g := range r.rules.Groups {
		for _, rule := range g.Rules {
			if rule.Alert != "" {
				ours[rule.Alert] = true
			}
		}
	}
	firing := map[string][]string{}
	for _, a := range alerts {
		name := a.Labels["alertname"]
		if a.State != "firing" || !ours[name] {
			continue
		}
		what := a.Labels[contract.LabelNode]
		if what == "" {
			what = a.Labels["instance"]
		}
		if p := a.Labels["pod"]; p != "" {
			what = a.Labels["namespace"] + "/" + p
		}
		firing[name] = append(firing[name], what)
	}
	if len(firing) == 0 {
		c.Status = Pass
		return c
	}
	for _, name := range slices.Sorted(maps.Keys(firing)) {
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s ×%d: %s (%s)", name, len(firing[name]), names(firing[name]), r.runbook(name)))
	}
	c.Status, c.Fix = Fail, "each alert's runbook says what to do"
	return c
}

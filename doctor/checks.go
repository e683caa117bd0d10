package doctor

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/rules"
	"github.com/winobs/winobs/view"
	"github.com/winobs/winobs/vocab"
)

// Status is a check's outcome.
type Status string

// Outcomes of a check.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip" // nothing to check, or it depends on a check that failed (named in its evidence)
)

// Check is one item of the checklist: what was found, and how to fix it.
type Check struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Status   Status   `json:"status"`
	Evidence []string `json:"evidence,omitempty"`
	Fix      string   `json:"fix,omitempty"`
}

// Report is every check of one run.
type Report struct {
	Prometheus string  `json:"prometheus"`
	Loki       string  `json:"loki,omitempty"`
	Checks     []Check `json:"checks"`
}

// OK reports whether every check passed or was skipped only for want of Loki.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if c.Status == Fail {
			return false
		}
	}
	return true
}

// listed is how many names evidence lists before "and N more".
const listed = 10

// names lists up to `listed` names, sorted, and how many more there are.
func names(ns []string) string {
	ns = slices.Clone(ns)
	sort.Strings(ns)
	ns = slices.Compact(ns)
	if len(ns) > listed {
		return strings.Join(ns[:listed], ", ") + fmt.Sprintf(" and %d more", len(ns)-listed)
	}
	return strings.Join(ns, ", ")
}

// run holds what the checks share.
type run struct {
	cfg *config.Config
	// t selects the series of this cluster in Prometheus: with the cluster
	// name an external label of the Prometheus asked, its series lack the
	// label (it is added on the way out), so t selects without it. lt
	// selects in Loki, where the agents write the label on every stream.
	t, lt vocab.Terms
	// external are the Prometheus's external labels (nil: unknown).
	external map[string]string
	prom     *API
	loki     *API
	rules    rulefmt.RuleGroups
	// windowsNodes are the Windows nodes kube-state-metrics knows.
	windowsNodes []string
	// exportersUp counts the exporter targets that are up; loaded names
	// the winobs rule groups Prometheus has loaded. Later checks that need
	// them skip, naming the check that found the cause, instead of
	// failing again with another fix.
	exportersUp int
	loaded      map[string]bool
	// unscraped are the Windows nodes without an exporter target that is
	// up: their containers cannot be covered, which windows-nodes-scraped
	// reports, so container-coverage leaves them out.
	unscraped []string
	now       func() time.Time
}

// runbook is an alert's runbook link, as the rules' runbook_url gives it
// (alerts.runbookURL).
func (r *run) runbook(alert string) string { return rules.RunbookURL(r.cfg.Alerts.RunbookURL, alert) }

// skip marks c skipped, saying why.
func skip(c Check, why string) Check {
	c.Status, c.Evidence, c.Fix = Skip, append(c.Evidence, why), ""
	return c
}

// noExporter is why a check of exporter data has nothing to check.
const noExporter = "no exporter target is up: nothing to check (see windows-nodes-scraped)"

// groupMissing is why a check of a rule group's output has nothing to check.
func groupMissing(group string) string {
	return "the " + group + " group is not loaded: nothing to check (see rules-loaded)"
}

// Run checks what gen renders for cfg against prom (and loki, when not
// nil). Each check is bounded by ctx.
func Run(ctx context.Context, cfg *config.Config, prom, loki *API) Report {
	groups, err := rules.Build(view.Of(cfg).Rules)
	r := &run{cfg: cfg, t: vocab.ForCluster(cfg), lt: vocab.ForCluster(cfg), prom: prom, loki: loki, rules: groups, now: time.Now, loaded: map[string]bool{}}
	rep := Report{Prometheus: prom.base.Redacted()}
	if loki != nil {
		rep.Loki = loki.base.Redacted()
	}
	if err != nil {
		rep.Checks = append(rep.Checks, Check{ID: "config", Title: "the config builds its rules", Status: Fail, Evidence: []string{err.Error()}})
		return rep
	}
	reach := r.reachable(ctx, prom, "prometheus-reachable")
	rep.Checks = append(rep.Checks, reach)
	if reach.Status == Pass {
		// Select as the rules do (no cluster matcher) when Prometheus adds
		// the cluster on the way out, or when no series carries it: then
		// only cluster-label fails, and the other checks still see the data.
		if r.external, err = prom.ExternalLabels(ctx); err == nil && cfg.Cluster.Multi() && (r.external[cfg.Cluster.Label] == cfg.Cluster.Name || !r.seriesCarryCluster(ctx)) {
			r.t = vocab.ForRules(cfg)
		}
		r.windowsNodes, err = r.nodes(ctx)
		if err != nil {
			rep.Checks = append(rep.Checks, Check{ID: "windows-nodes", Title: "kube-state-metrics lists the Windows nodes", Status: Fail,
				Evidence: []string{err.Error()}})
		}
		for _, check := range []func(context.Context) Check{
			r.nodesScraped, r.exporterVersion, r.collectors, r.rulesLoaded, r.records, r.commitPerNode,
			r.containerCoverage, r.containerLabels, r.commitLimitMetric, r.exporterNames, r.clusterLabel, r.alertsFiring, r.shipperCounters,
		} {
			rep.Checks = append(rep.Checks, check(ctx))
		}
	}
	if loki == nil {
		rep.Checks = append(rep.Checks, Check{ID: "loki", Title: "events and pod logs reach Loki", Status: Skip,
			Evidence: []string{"no --loki URL given"}, Fix: "run again with --loki URL to check the log pipeline"})
		return rep
	}
	lreach := r.reachable(ctx, loki, "loki-reachable")
	rep.Checks = append(rep.Checks, lreach)
	if lreach.Status == Pass {
		rep.Checks = append(rep.Checks, r.eventsPerNode(ctx), r.podLogs(ctx))
	}
	return rep
}

// seriesCarryCluster reports whether any target's up series carries the
// configured cluster (an error counts as yes: the checks then say more).
func (r *run) seriesCarryCluster(ctx context.Context) bool {
	ss, err := r.query(ctx, "count("+r.t.Cluster().Of("up")+")")
	return err != nil || len(ss) > 0
}

func (r *run) reachable(ctx context.Context, api *API, id string) Check {
	c := Check{ID: id, Title: api.name + " answers its API"}
	v, err := api.BuildInfo(ctx)
	if err != nil {
		c.Status, c.Evidence = Fail, []string{err.Error()}
		example := "http://prometheus-operated.monitoring:9090"
		if api.name == "Loki" {
			example = "http://loki-gateway.loki (the gateway, or Loki's own :3100)"
		}
		c.Fix = "check the URL (the base URL, such as " + example + "), the network path from here, and the credentials"
		return c
	}
	if v == "" {
		v = "(version not stamped)"
	}
	c.Status, c.Evidence = Pass, []string{api.name + " " + v + " at " + api.base.Redacted()}
	return c
}

// query runs expr on Prometheus and returns its samples.
func (r *run) query(ctx context.Context, expr string) ([]Sample, error) {
	return r.prom.Query(ctx, expr)
}

// label collects one label's values from samples.
func label(ss []Sample, name string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Metric[name])
	}
	return out
}

// failed turns a query error into a failed check.
func failed(c Check, err error) Check {
	c.Status, c.Evidence = Fail, append(c.Evidence, err.Error())
	return c
}

func (r *run) nodes(ctx context.Context) ([]string, error) {
	ss, err := r.query(ctx, fmt.Sprintf(`max by (node) (%s)`, r.t.KSM(vocab.Re("os_image", "(?i).*windows.*")).Of("kube_node_info")))
	return label(ss, contract.LabelNode), err
}

// nodesScraped: every Windows node has an exporter target that is up.
func (r *run) nodesScraped(ctx context.Context) Check {
	c := Check{ID: "windows-nodes-scraped", Title: "every Windows node has a windows-exporter target that is up"}
	up, err := r.query(ctx, fmt.Sprintf(`max by (instance, node) (%s)`, r.t.Exporter().Of("up")))
	if err != nil {
		return failed(c, err)
	}
	info, err := r.query(ctx, fmt.Sprintf(`max by (instance, node) (%s)`, r.t.Cluster().Of(vocab.Records.NodeInfo)))
	if err != nil {
		return failed(c, err)
	}
	nodeOf := map[string]string{}
	for _, s := range info {
		nodeOf[s.Metric["instance"]] = s.Metric[contract.LabelNode]
	}
	scraped, down := map[string]bool{}, []string{}
	for _, s := range up {
		node := s.Metric[contract.LabelNode]
		if node == "" {
			node = nodeOf[s.Metric["instance"]]
		}
		if node != "" {
			scraped[node] = true
		}
		if s.Value != 1 {
			down = append(down, s.Metric["instance"]+orNode(node))
			if node != "" {
				r.unscraped = append(r.unscraped, node)
			}
		} else {
			r.exportersUp++
		}
	}
	var missing []string
	for _, n := range r.windowsNodes {
		if !scraped[n] {
			missing = append(missing, n)
		}
	}
	r.unscraped = append(r.unscraped, missing...)
	c.Evidence = append(c.Evidence, fmt.Sprintf("%d Windows nodes in kube-state-metrics, %d exporter targets (job %q), %d down",
		len(r.windowsNodes), len(up), r.cfg.WindowsExporter.Job, len(down)))
	switch {
	case len(r.windowsNodes) == 0:
		c.Status, c.Fix = Fail, fmt.Sprintf("kube-state-metrics (job %q) reports no node with a Windows os_image: check that job name (kubeStateMetrics.job) and that Prometheus scrapes it", r.cfg.KubeStateMetrics.Job)
		if down := r.ksmDown(ctx); down != "" {
			c.Evidence = append(c.Evidence, "kube-state-metrics targets down: "+down)
			c.Fix = fmt.Sprintf("kube-state-metrics (job %q) is down: its pod's status and log say why; until it is back, no container has its pod's labels", r.cfg.KubeStateMetrics.Job)
		}
	case len(missing) > 0:
		c.Status = Fail
		c.Evidence = append(c.Evidence, fmt.Sprintf("%d of %d Windows nodes have no exporter target: %s", len(missing), len(r.windowsNodes), names(missing)))
		c.Fix = fmt.Sprintf("check the exporter DaemonSet runs on those nodes (nodes.selector, nodes.tolerations), that the monitor is selected by your Prometheus (windowsExporter.monitorLabels) and that its job is %q (%s)", r.cfg.WindowsExporter.Job, r.runbook(rules.AlertExporterDown))
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
		r.t.KSM(vocab.Eq("namespace", r.cfg.Namespace), vocab.Eq("created_by_kind", "DaemonSet"), vocab.Eq("created_by_name", contract.ShipperName)).Of("kube_pod_info")))
	return label(ss, contract.LabelNode), err
}

func orNode(node string) string {
	if node == "" {
		return ""
	}
	return " (" + node + ")"
}

// exporterVersion: every exporter runs a version the rules are tested with.
func (r *run) exporterVersion(ctx context.Context) Check {
	c := Check{ID: "exporter-version", Title: "every exporter runs a tested windows_exporter version (" + contract.ExporterRange + ")"}
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
func (r *run) collectors(ctx context.Context) Check {
	c := Check{ID: "collectors", Title: "every exporter collector succeeds"}
	if r.exportersUp == 0 {
		return skip(c, noExporter)
	}
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

// rulesLoaded: the groups winobs rendered are loaded, healthy, without an
// error and evaluated recently.
func (r *run) rulesLoaded(ctx context.Context) Check {
	c := Check{ID: "rules-loaded", Title: "the winobs rule groups are loaded, healthy and evaluated"}
	loaded, err := r.prom.Rules(ctx)
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
		if r.loaded == nil {
			r.loaded = map[string]bool{}
		}
		r.loaded[g.Name] = true
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
	if len(problems) > 0 {
		c.Status, c.Evidence = Fail, append(problems, c.Evidence...)
		c.Fix = "a group that is not loaded is not selected by your Prometheus: prometheus.ruleLabels must match its ruleSelector (or load rules/*.yaml); re-apply the current render"
		return c
	}
	c.Status = Pass
	return c
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// records: every record winobs renders produces series.
func (r *run) records(ctx context.Context) Check {
	c := Check{ID: "records", Title: "every winobs record produces series"}
	if !r.loaded[rules.RecordsGroup] {
		return skip(c, groupMissing(rules.RecordsGroup))
	}
	var recorded []string
	for _, g := range r.rules.Groups {
		for _, rule := range g.Rules {
			if rule.Record != "" {
				recorded = append(recorded, regexp.QuoteMeta(rule.Record))
			}
		}
	}
	// One query for all of them: the series count of each record present.
	ss, err := r.query(ctx, "count by (__name__) ("+r.t.Cluster(vocab.Re("__name__", strings.Join(recorded, "|"))).String()+")")
	if err != nil {
		return failed(c, err)
	}
	present := map[string]bool{}
	for _, s := range ss {
		present[s.Metric["__name__"]] = true
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

// commitPerNode: the commit charge record exists for every scraped node.
func (r *run) commitPerNode(ctx context.Context) Check {
	return r.scrapedWithout(ctx, Check{ID: "commit-per-node", Title: "the commit charge record covers every scraped Windows node",
		Fix: "see commit-limit-metric: the record needs " + vocab.Metrics.MemoryCommitted + " and " + vocab.Metrics.MemoryCommitLimit},
		vocab.Records.NodeCommitRatio, r.t.Cluster())
}

// commitLimitMetric: every scraped node reports the commit limit (renamed
// in 0.32).
func (r *run) commitLimitMetric(ctx context.Context) Check {
	return r.scrapedWithout(ctx, Check{ID: "commit-limit-metric", Title: "every scraped node reports its commit limit",
		Fix: "the memory collector is off or the exporter is 0.32+ (" + r.runbook(rules.AlertNodeCommitLimitMetricAbsent) + ")"},
		vocab.Metrics.MemoryCommitLimit, r.t.Exporter())
}

// scrapedWithout fails c, naming them, when exporter targets that are up
// have no metric (selected by sel) for their instance.
func (r *run) scrapedWithout(ctx context.Context, c Check, metric string, sel vocab.Selector) Check {
	fix := c.Fix
	c.Fix = ""
	if r.exportersUp == 0 {
		return skip(c, noExporter)
	}
	if strings.Contains(metric, ":") && !r.loaded[rules.RecordsGroup] {
		return skip(c, groupMissing(rules.RecordsGroup))
	}
	ss, err := r.query(ctx, fmt.Sprintf(`max by (instance) (%s == 1) unless on (instance) max by (instance) (%s)`,
		r.t.Exporter().Of("up"), sel.Of(metric)))
	if err != nil {
		return failed(c, err)
	}
	if len(ss) > 0 {
		c.Status, c.Fix = Fail, fix
		c.Evidence = []string{fmt.Sprintf("%d scraped nodes without %s: %s", len(ss), metric, names(label(ss, "instance")))}
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
func (r *run) containerCoverage(ctx context.Context) Check {
	c := Check{ID: "container-coverage", Title: "every running Windows container has its real pod labels (the info record)"}
	by := r.t.By("namespace", "pod", "container")
	all, err := r.query(ctx, "count("+r.windowsContainers()+")")
	if err != nil {
		return failed(c, err)
	}
	missing, err := r.query(ctx, fmt.Sprintf("topk(%d, %s unless on (%s) %s)", listed, r.windowsContainers(), by, r.t.Cluster().Of(vocab.Records.ContainerInfo)))
	if err != nil {
		return failed(c, err)
	}
	nMissing, err := r.query(ctx, fmt.Sprintf("count(%s unless on (%s) %s)", r.windowsContainers(), by, r.t.Cluster().Of(vocab.Records.ContainerInfo)))
	if err != nil {
		return failed(c, err)
	}
	m, err := countIn(all)
	if err != nil {
		return failed(c, err)
	}
	miss, err := countIn(nMissing)
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

// countIn reads a count() answer: none is 0, else one whole, non-negative
// number; anything else is a server doctor cannot believe.
func countIn(ss []Sample) (int, error) {
	switch len(ss) {
	case 0:
		return 0, nil
	case 1:
		return countOf(ss[0])
	}
	return 0, fmt.Errorf("a count answered %d series, not one: not an answer doctor can believe", len(ss))
}

// countOf reads one sample of a count.
func countOf(s Sample) (int, error) {
	if s.Value < 0 || s.Value != math.Trunc(s.Value) || s.Value > 1e9 {
		return 0, fmt.Errorf("a count of %g: not an answer doctor can believe", s.Value)
	}
	return int(s.Value), nil
}

// containerLabels: container series carry the pods' labels, not exported_*
// where winobs's own monitor (honorLabels) scrapes, and never the exporter
// pod's own.
func (r *run) containerLabels(ctx context.Context) Check {
	c := Check{ID: "container-labels", Title: "container series carry their pods' labels"}
	if r.exportersUp == 0 {
		return skip(c, noExporter)
	}
	exported, err := r.query(ctx, "count("+r.t.Exporter(vocab.NotEq("exported_pod", "")).Of(vocab.Metrics.ContainerAvailable)+")")
	if err != nil {
		return failed(c, err)
	}
	own, err := r.query(ctx, fmt.Sprintf(`count(%s and on (%s) %s)`,
		r.t.Exporter(vocab.Eq("exported_pod", ""), vocab.NotEq("pod", "")).Of(vocab.Metrics.ContainerAvailable), r.t.By("instance", "namespace", "pod"),
		r.t.Exporter().Of(vocab.Metrics.BuildInfo)))
	if err != nil {
		return failed(c, err)
	}
	nExported, err := countIn(exported)
	if err != nil {
		return failed(c, err)
	}
	nOwn, err := countIn(own)
	if err != nil {
		return failed(c, err)
	}
	var problems []string
	if n := nExported; n > 0 {
		msg := fmt.Sprintf("%d container series carry exported_namespace/exported_pod: the monitor scrapes without honorLabels", n)
		if r.cfg.WindowsExporter.Deploy {
			problems = append(problems, msg+", but winobs deploys its own monitor with honorLabels: another monitor (kube-prometheus-stack's windowsMonitoring) scrapes the same exporter")
		} else {
			c.Evidence = append(c.Evidence, msg+" (kube-prometheus-stack's ServiceMonitor): the info record maps them back")
		}
	}
	if n := nOwn; n > 0 {
		problems = append(problems, fmt.Sprintf("%d container series carry the exporter pod's own namespace/pod (an exporter before 0.31, or containers whose labels it could not read from containerd): winobs's info record takes theirs from kube-state-metrics, any other query attributes them to the exporter", n))
	}
	if len(problems) > 0 {
		c.Status, c.Evidence = Fail, append(problems, c.Evidence...)
		c.Fix = "exported_*: set kube-prometheus-stack's windowsMonitoring.enabled: false (two exporters fight over port 9182), or windowsExporter.deploy: false to use its exporter; the exporter pod's labels: run windows_exporter 0.31 (windowsExporter.image)"
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
func (r *run) clusterLabel(ctx context.Context) Check {
	c := Check{ID: "cluster-label", Title: "series carry the configured cluster label"}
	if !r.cfg.Cluster.Multi() {
		return skip(c, "single cluster (cluster.name is empty): nothing to check")
	}
	name, want := r.cfg.Cluster.Label, r.cfg.Cluster.Name
	ext := r.external
	if ext == nil {
		var err error
		if ext, err = r.prom.ExternalLabels(ctx); err != nil {
			return failed(c, err)
		}
	}
	// What the exporter's own series carry: the dashboards read them so
	// (docs/dashboards.md, "The cluster label").
	ss, err := r.query(ctx, fmt.Sprintf(`count by (%s) (%s)`, name, vocab.Selector{vocab.Eq(contract.LabelJob, r.cfg.WindowsExporter.Job)}.Of("up")))
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
		return c
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("the exporter's series carry %s=%q", name, want)}
	return c
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// alertsFiring: no winobs alert fires now; the firing ones, grouped.
func (r *run) alertsFiring(ctx context.Context) Check {
	c := Check{ID: "alerts-firing", Title: "no winobs alert is firing"}
	if !r.loaded[rules.AlertsGroup] {
		return skip(c, groupMissing(rules.AlertsGroup))
	}
	if r.exportersUp == 0 {
		return skip(c, "no exporter target is up: no winobs alert can fire, nothing to check (see windows-nodes-scraped)")
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

// shipperCounters: the eventlog-shipper dropped nothing and pushed without
// errors in the last hour (its metrics arrive through the exporter).
func (r *run) shipperCounters(ctx context.Context) Check {
	c := Check{ID: "shipper-counters", Title: "the eventlog-shipper dropped nothing and pushes without errors"}
	present, err := r.query(ctx, "count("+r.t.Exporter().Of(contract.ShipperEventsRead)+")")
	if err != nil {
		return failed(c, err)
	}
	channels, err := countIn(present)
	if err != nil {
		return failed(c, err)
	}
	if channels == 0 {
		shipperDefault := r.cfg.LogAgent.Default == config.AgentShipper
		switch {
		case shipperDefault && !r.cfg.WindowsExporter.Deploy:
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
	for _, m := range []struct{ metric, by, what string }{
		{contract.ShipperEventsDropped, contract.LabelReason, "dropped"},
		{contract.ShipperPushErrors, contract.LabelStatus, "push errors"},
	} {
		ss, err := r.query(ctx, fmt.Sprintf("sum by (instance, %s) (increase(%s[1h])) > 0", m.by, r.t.Exporter().Of(m.metric)))
		if err != nil {
			return failed(c, err)
		}
		for _, s := range ss {
			problems = append(problems, fmt.Sprintf("%s %s %s=%s: %.0f in the last hour", s.Metric["instance"], m.what, m.by, s.Metric[m.by], s.Value))
		}
	}
	if len(problems) > 0 {
		c.Status, c.Evidence = Fail, problems
		c.Fix = "the reasons are in the shipper's log and docs/reliability.md; push errors name Loki's answer"
		return c
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("%d shipper channels", channels)}
	return c
}

// eventsPerNode: every Windows node's events reached Loki in the last hour.
// The node names come from Loki's label-values API, which no series limit
// bounds (a query by node and channel is refused past max_query_series, 500
// by default: 250 nodes of two channels); the channels from a query by
// channel, a handful of series.
func (r *run) eventsPerNode(ctx context.Context) Check {
	c := Check{ID: "loki-events", Title: "every Windows node's events reached Loki in the last hour"}
	nodes, err := r.loki.LabelValues(ctx, contract.LabelNode, r.lt.Events().String(), time.Hour)
	if err != nil {
		return failed(c, err)
	}
	if len(nodes) == 0 {
		return r.noStreams(ctx, c, r.cfg.Logs.EventsJob, fmt.Sprintf("no stream with job %q in the last hour: check logs.eventsJob and loki.url", r.cfg.Logs.EventsJob))
	}
	ss, err := r.loki.Query(ctx, fmt.Sprintf(`sum by (channel) (count_over_time(%s [1h]))`, r.lt.Events()))
	if err != nil {
		return failed(c, err)
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n] = true
	}
	var missing []string
	for _, n := range r.windowsNodes {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	c.Evidence = []string{fmt.Sprintf("%d nodes, channels %s", len(nodes), names(label(ss, contract.LabelChannel)))}
	if len(missing) > 0 {
		c.Status = Fail
		c.Evidence = append(c.Evidence, fmt.Sprintf("%d of %d Windows nodes sent no event: %s", len(missing), len(r.windowsNodes), names(missing)))
		c.Fix = "a node whose agent cannot reach Loki sends nothing: check loki.url from the node's network (not a Service name) and the agent's log; a node with no event of the forwarded levels in the hour is silent too (eventLog.channels)"
		return c
	}
	c.Status = Pass
	return c
}

// noStreams fails c for a job without streams, after telling a tenant that
// holds nothing at all (a wrong tenant answers 200 and empty, like a
// silent cluster) from one that lacks only this job.
func (r *run) noStreams(ctx context.Context, c Check, job, fix string) Check {
	c.Status, c.Fix = Fail, fix
	all, err := r.loki.LabelValues(ctx, contract.LabelJob, "", 24*time.Hour)
	if err != nil {
		return failed(c, err)
	}
	tenant := r.loki.auth.Tenant
	switch {
	case len(all) == 0 && tenant != "":
		c.Evidence = append(c.Evidence, fmt.Sprintf("tenant %q holds no logs at all in the last day", tenant))
		c.Fix = fmt.Sprintf("check the tenant: the agents push as loki.tenant (%q here); a Loki answers an unknown tenant with an empty result", tenant)
	case len(all) == 0:
		c.Evidence = append(c.Evidence, "this Loki holds no logs at all in the last day")
	default:
		c.Evidence = append(c.Evidence, fmt.Sprintf("no stream with job %q; jobs here: %s", job, names(quoteAll(all))))
	}
	return c
}

// podLogs: Windows pod logs reached Loki in the last hour.
func (r *run) podLogs(ctx context.Context) Check {
	c := Check{ID: "loki-pod-logs", Title: "Windows pod logs reached Loki in the last hour"}
	nodes, err := r.loki.LabelValues(ctx, contract.LabelNode, r.lt.PodLogs().String(), time.Hour)
	if err != nil {
		return failed(c, err)
	}
	if len(nodes) == 0 {
		return r.noStreams(ctx, c, r.cfg.Logs.PodLogsJob, fmt.Sprintf("no stream with job %q: the Alloy DaemonSet reads C:\\var\\log\\pods on nodes labelled for it (logAgent); check its log", r.cfg.Logs.PodLogsJob))
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("lines from %d nodes", len(nodes))}
	return c
}

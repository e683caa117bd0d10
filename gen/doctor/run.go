package doctor

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

// run is one doctor run: what it asks (the config's view, its rules, the APIs)
// and the facts, gathered once before any check runs and read, never
// changed, by the checks.
type run struct {
	v     view.Doctor
	prom  *API
	loki  *API
	rules rulefmt.RuleGroups
	now   func() time.Time
	facts
}

// facts are what several checks read: gathered in one pass, in the order
// they depend on each other, so no check's result depends on which checks
// ran before it.
type facts struct {
	// t selects this cluster's series in Prometheus: with the cluster name
	// an external label of the Prometheus asked, its series lack the label
	// (it is added on the way out), so t selects without it. lt selects in
	// Loki, where the agents write the label on every stream.
	t, lt vocab.Terms
	// external are the Prometheus's external labels (nil: unknown).
	external map[string]string
	// windowsNodes are the Windows nodes kube-state-metrics knows.
	windowsNodes []string
	nodesErr     error
	// The exporter targets: how many, which are down, which Windows nodes
	// have none, how many are up. unscraped are the Windows nodes without
	// a target that is up: their containers cannot be covered, which
	// windows-nodes-scraped reports, so container-coverage leaves them out.
	scrapeErr            error
	targets, exportersUp int
	down, missing        []string
	unscraped            []string
	// The rule groups Prometheus has loaded, and which of winobs's are
	// among them.
	promGroups    []RuleGroup
	promGroupsErr error
	loaded        map[string]bool
	// managed is the managed Prometheus the rules run in (Name "" for
	// none): doctor reads no rules or alerts there.
	managed managed.Service
	// metadataRefused: the Loki refuses the structured metadata the
	// rendered layout sends (loki-structured-metadata found it).
	metadataRefused bool
}

// lokiTakesLayout is a need: a Loki that takes what the agents send.
func lokiTakesLayout(f *facts) string {
	if f.metadataRefused {
		return "Loki refuses the structured metadata the agents send (see loki-structured-metadata): Alloy drops what it refuses, the eventlog-shipper holds it; nothing to check until it is fixed"
	}
	return ""
}

// need is what a check needs of the facts: "" when they have it, else why
// the check has nothing to check, naming the check that found the cause.
type need func(f *facts) string

func exporterUp(f *facts) string {
	if f.scrapeErr != nil {
		return "the exporter targets could not be read: nothing to check (see windows-nodes-scraped)"
	}
	if f.exportersUp == 0 {
		return noExporter
	}
	return ""
}

func groupLoaded(group string) need {
	return func(f *facts) string {
		if !f.loaded[group] {
			return groupMissing(group)
		}
		return ""
	}
}

// spec is one row of the checklist: the check, what it needs, and the
// function that checks it. A check whose needs are not met is skipped with
// the reason, never passed.
type spec struct {
	id, title string
	needs     []need
	check     func(r *run, ctx context.Context, c Check) Check
}

// prometheusChecks are the checks of the Prometheus side, in the report's
// order.
var prometheusChecks = []spec{
	{"windows-nodes-scraped", "every Windows node has a windows-exporter target that is up", nil, (*run).nodesScraped},
	{"exporter-version", "every exporter runs a tested windows_exporter version (" + contract.ExporterRange + ")", nil, (*run).exporterVersion},
	{"collectors", "every exporter collector succeeds", []need{exporterUp}, (*run).collectors},
	{"rules-loaded", "the winobs rule groups are loaded, healthy and evaluated", nil, (*run).rulesLoaded},
	{"records", "every winobs record produces series", []need{groupLoaded(rules.RecordsGroup)}, (*run).records},
	{"commit-per-node", "the commit charge record covers every scraped Windows node", []need{exporterUp, groupLoaded(rules.RecordsGroup)}, (*run).commitPerNode},
	{"container-coverage", "every running Windows container has its real pod labels (the info record)", []need{joinsMetrics}, (*run).containerCoverage},
	{"container-labels", "container series carry their pods' labels", []need{exporterUp}, (*run).containerLabels},
	{"commit-limit-metric", "every scraped node reports its commit limit", []need{exporterUp}, (*run).commitLimitMetric},
	{"exporter-names", "the exporters serve every metric name the rules read", []need{exporterUp}, (*run).exporterNames},
	{"cluster-label", "series carry the configured cluster label", nil, (*run).clusterLabel},
	{"alerts-firing", "no winobs alert is firing", []need{rulesAPI, groupLoaded(rules.AlertsGroup)}, (*run).alertsFiring},
	{"shipper-counters", "the eventlog-shipper dropped nothing and pushes without errors", nil, (*run).shipperCounters},
}

// lokiChecks are the checks of the Loki side.
var lokiChecks = []spec{
	{"loki-structured-metadata", "Loki keeps what the rendered event layout sends (logs.structuredMetadata)", nil, (*run).structuredMetadata},
	{"loki-events", "every Windows node's events reached Loki in the last hour", []need{lokiTakesLayout}, (*run).eventsPerNode},
	{"loki-pod-logs", "Windows pod logs reached Loki in the last hour", []need{lokiTakesLayout}, (*run).podLogs},
	{"loki-detections", "every Loki detection selects the events as they arrive (their class and channel)", []need{lokiTakesLayout}, (*run).detectionInputs},
}

// do runs the checks in order, each with its needs.
func (r *run) do(ctx context.Context, specs []spec) []Check {
	var out []Check
	for _, s := range specs {
		c := Check{ID: s.id, Title: s.title}
		why := ""
		for _, n := range s.needs {
			if why = n(&r.facts); why != "" {
				break
			}
		}
		if why != "" {
			out = append(out, skip(c, why))
			continue
		}
		out = append(out, s.check(r, ctx, c))
	}
	return out
}

// Run checks what gen renders for the config v views against prom (and
// loki, when not nil). Each check is bounded by ctx.
func Run(ctx context.Context, v view.Doctor, prom, loki *API) Report {
	groups, err := rules.Build(v.Rules)
	// Until gather knows better (a reachable Prometheus), this cluster's
	// terms select; the Loki checks read them whatever Prometheus says.
	r := &run{v: v, prom: prom, loki: loki, rules: groups, now: time.Now, facts: facts{t: v.Terms, lt: v.Terms}}
	rep := Report{Prometheus: prom.base.Redacted()}
	if loki != nil {
		rep.Loki = loki.base.Redacted()
	}
	if err != nil {
		rep.Checks = append(rep.Checks, Check{ID: "config", Title: "the config builds its rules", Status: Fail, Evidence: []string{err.Error()}})
		return rep
	}
	reach := r.reachable(ctx, prom, "prometheus-reachable")
	if r.managed() {
		reach = r.managedReachable(ctx, prom, "prometheus-reachable")
	}
	rep.Checks = append(rep.Checks, reach)
	if reach.Status == Pass {
		r.facts = r.gather(ctx)
		if r.nodesErr != nil {
			rep.Checks = append(rep.Checks, Check{ID: "windows-nodes", Title: "kube-state-metrics lists the Windows nodes", Status: Fail,
				Evidence: []string{r.nodesErr.Error()}})
		}
		rep.Checks = append(rep.Checks, r.do(ctx, prometheusChecks)...)
	}
	if loki == nil {
		rep.Checks = append(rep.Checks, Check{ID: "loki", Title: "events and pod logs reach Loki", Status: Skip,
			Evidence: []string{"no --loki URL given"}, Fix: "run again with --loki URL to check the log pipeline"})
		return rep
	}
	lreach := r.reachable(ctx, loki, "loki-reachable")
	rep.Checks = append(rep.Checks, lreach)
	if lreach.Status == Pass {
		rep.Checks = append(rep.Checks, r.do(ctx, lokiChecks)...)
	}
	return rep
}

// gather asks Prometheus, once, what several checks read.
func (r *run) gather(ctx context.Context) facts {
	f := facts{t: r.v.Terms, lt: r.v.Terms, loaded: map[string]bool{}, managed: r.v.Managed}
	if r.managed() {
		// No configuration, rules or alerts to read: the series carry the
		// cluster label ama-metrics writes, and the records tell the rule
		// group runs.
		r.facts = f
		ss, err := r.prom.Query(ctx, fmt.Sprintf(`max by (node) (%s)`, f.t.KSM(vocab.Re("os_image", "(?i).*windows.*")).Of("kube_node_info")))
		f.windowsNodes, f.nodesErr = label(ss, contract.LabelNode), err
		f.scrape(ctx, r.prom)
		r.facts = f
		f.loaded = r.managedLoaded(ctx)
		return f
	}
	cluster := r.v.Cluster
	// Select as the rules do (no cluster matcher) when Prometheus adds the
	// cluster on the way out, or when no series carries it: then only
	// cluster-label fails, and the other checks still see the data.
	var err error
	if f.external, err = r.prom.ExternalLabels(ctx); err == nil && cluster.Multi() &&
		(f.external[cluster.Label] == cluster.Name || !r.seriesCarryCluster(ctx, f.t)) {
		f.t = r.v.RuleTerms
	}
	ss, err := r.prom.Query(ctx, fmt.Sprintf(`max by (node) (%s)`, f.t.KSM(vocab.Re("os_image", "(?i).*windows.*")).Of("kube_node_info")))
	f.windowsNodes, f.nodesErr = label(ss, contract.LabelNode), err
	f.scrape(ctx, r.prom)
	f.promGroups, f.promGroupsErr = r.prom.Rules(ctx)
	for _, want := range r.rules.Groups {
		if slices.ContainsFunc(f.promGroups, func(g RuleGroup) bool { return g.Name == want.Name }) {
			f.loaded[want.Name] = true
		}
	}
	return f
}

// scrape reads the exporter targets: which are up, on which node.
func (f *facts) scrape(ctx context.Context, prom *API) {
	up, err := prom.Query(ctx, fmt.Sprintf(`max by (instance, node) (%s)`, f.t.Exporter().Of("up")))
	if err != nil {
		f.scrapeErr = err
		return
	}
	info, err := prom.Query(ctx, fmt.Sprintf(`max by (instance, node) (%s)`, f.t.Cluster().Of(vocab.Records.NodeInfo)))
	if err != nil {
		f.scrapeErr = err
		return
	}
	nodeOf := map[string]string{}
	for _, s := range info {
		nodeOf[s.Metric["instance"]] = s.Metric[contract.LabelNode]
	}
	scraped := map[string]bool{}
	f.targets = len(up)
	for _, s := range up {
		node := s.Metric[contract.LabelNode]
		if node == "" {
			node = nodeOf[s.Metric["instance"]]
		}
		if node != "" {
			scraped[node] = true
		}
		if s.Value != 1 {
			f.down = append(f.down, s.Metric["instance"]+orNode(node))
			if node != "" {
				f.unscraped = append(f.unscraped, node)
			}
		} else {
			f.exportersUp++
		}
	}
	for _, n := range f.windowsNodes {
		if !scraped[n] {
			f.missing = append(f.missing, n)
		}
	}
	f.unscraped = append(f.unscraped, f.missing...)
}

// seriesCarryCluster reports whether any target's up series carries the
// configured cluster (an error counts as yes: the checks then say more).
func (r *run) seriesCarryCluster(ctx context.Context, t vocab.Terms) bool {
	ss, err := r.prom.Query(ctx, "count("+t.Cluster().Of("up")+")")
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

// countIn reads a count() answer: none is 0, else one whole, non-negative
// number; anything else is a server doctor cannot believe.
// count runs a count() query and reads its one number (0 when empty).
func (r *run) count(ctx context.Context, expr string) (int, error) {
	ss, err := r.query(ctx, expr)
	if err != nil {
		return 0, err
	}
	return countIn(ss)
}

package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	promrules "github.com/prometheus/prometheus/rules"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
)

// The checks run against a stand-in for Prometheus that is Prometheus' own
// engine and rule manager over a fixture cluster, answering in the
// envelopes of the recorded answers (testdata/prometheus-api): every query
// doctor sends is evaluated as a real Prometheus would, and the loaded
// groups carry the rule manager's own health and errors.

// cluster describes the fixture; a broken variant changes one thing.
type cluster struct {
	nodes            []string // Windows nodes
	down             string   // a node whose exporter is down
	noTarget         string   // a Windows node without an exporter target
	version          string   // the exporters' version
	exportedLabels   bool     // container series with exported_* (no honorLabels)
	uncovered        bool     // a running container the exporter does not report
	noCommitLimit    bool     // the 0.32 rename: no windows_memory_commit_limit
	bootTime         string   // the boot time's name ("": 0.31's)
	failingCollector bool
	ksmDown          bool
	shipperOn        string // a node kube-state-metrics lists a shipper pod on (no textfile counters)
	clusterName      string
	// exporterPodLabels: container series labelled with the exporter pod's
	// own namespace/pod (an exporter before 0.31).
	exporterPodLabels bool
}

func healthy() cluster {
	return cluster{nodes: []string{"win-1", "win-2", "win-3"}, version: "0.31.8"}
}

// fixtureSeries is one series of the fixture: scraped from target ("ksm"
// or a node), with its exposition labels, a start value and an increase
// per 30 s.
type fixtureSeries struct {
	target, metric, labels string
	start, delta           float64
}

// target is one scrape target of the fixture.
type target struct {
	name, instance, node string
	down                 bool
}

// targets are kube-state-metrics and one exporter per Windows node.
func (c cluster) targets() []target {
	out := []target{{name: "ksm", instance: "10.244.0.9:8080", down: c.ksmDown}}
	for i, n := range c.nodes {
		if n != c.noTarget {
			out = append(out, target{name: n, instance: fmt.Sprintf("10.1.1.%d:9182", i+1), node: n, down: n == c.down})
		}
	}
	return out
}

// series lists every series the targets expose.
func (c cluster) series() []fixtureSeries {
	var out []fixtureSeries
	add := func(target, metric, labels string, start, delta float64) {
		out = append(out, fixtureSeries{target, metric, labels, start, delta})
	}
	add("ksm", "kube_node_info", `node="linux-1",os_image="Debian GNU/Linux 13",internal_ip="10.1.0.1"`, 1, 0)
	for i, n := range c.nodes {
		add("ksm", "kube_node_info", fmt.Sprintf(`node="%s",os_image="Windows Server 2025 Datacenter",internal_ip="10.1.1.%d"`, n, i+1), 1, 0)
		add("ksm", "kube_node_spec_unschedulable", `node="`+n+`"`, 0, 0)
		pod := "app-" + n
		add("ksm", "kube_pod_info", fmt.Sprintf(`namespace="shop",pod="%s",node="%s"`, pod, n), 1, 0)
		if n == c.shipperOn {
			// In the config's namespace, where doctor looks for it.
			add("ksm", "kube_pod_info", fmt.Sprintf(`namespace=%q,pod="winobs-eventlog-shipper-x7k2p",node="%s",created_by_kind="DaemonSet",created_by_name="winobs-eventlog-shipper"`, config.Default().Namespace, n), 1, 0)
		}
		containers := []string{"app"}
		if c.uncovered && i == 0 {
			containers = append(containers, "sidecar") // the exporter does not report it
		}
		for k, name := range containers {
			cont := fmt.Sprintf(`namespace="shop",pod="%s",container="%s"`, pod, name)
			add("ksm", "kube_pod_container_info", cont+fmt.Sprintf(`,container_id="containerd://%064x"`, 100*(i+1)+k), 1, 0)
			add("ksm", "kube_pod_container_status_running", cont, 1, 0)
			add("ksm", "kube_pod_container_resource_limits", cont+`,resource="memory",unit="byte"`, 268435456, 0)
		}
		build := `version="` + c.version + `"`
		if c.exporterPodLabels { // the exporter pod's target labels, as a PodMonitor adds them
			build += fmt.Sprintf(`,namespace="monitoring",pod="windows-exporter-%d"`, i)
		}
		add(n, "windows_exporter_build_info", build, 1, 0)
		success := 1.0
		if c.failingCollector && i == 0 {
			success = 0
		}
		add(n, "windows_exporter_collector_success", `collector="memory"`, success, 0)
		add(n, "windows_memory_committed_bytes", "", 6442450944, 0)
		if !c.noCommitLimit {
			add(n, "windows_memory_commit_limit", "", 12884901888, 0)
		}
		add(n, "windows_memory_physical_total_bytes", "", 8589934592, 0)
		add(n, "windows_memory_available_bytes", "", 2147483648, 0)
		add(n, "windows_memory_swap_page_operations_total", "", 0, 30)
		add(n, "windows_cpu_time_total", `core="0,0",mode="idle"`, 0, 15)
		add(n, "windows_time_computed_time_offset_seconds", "", 0.001, 0)
		add(n, "windows_time_ntp_client_time_sources", "", 1, 0)
		// Booted a day before the fixture starts; the node services running.
		bootTime := "windows_system_boot_time_timestamp"
		if c.bootTime != "" {
			bootTime = c.bootTime
		}
		add(n, bootTime, "", -86400, 0)
		for _, svc := range []string{"containerd", "hns", "kubelet", "vmcompute"} {
			add(n, "windows_service_state", `name="`+svc+`",state="running"`, 1, 0)
			add(n, "windows_service_state", `name="`+svc+`",state="stopped"`, 0, 0)
		}
		add(n, "windows_pagefile_free_bytes", `file="C:\\pagefile.sys"`, 4294967296, 0)
		add(n, "windows_pagefile_limit_bytes", `file="C:\\pagefile.sys"`, 8589934592, 0)
		add(n, "windows_logical_disk_free_bytes", `volume="C:"`, 68719476736, 0)
		add(n, "windows_logical_disk_size_bytes", `volume="C:"`, 137438953472, 0)
		for _, m := range []string{"read_latency_seconds", "write_latency_seconds", "reads", "writes"} {
			add(n, "windows_logical_disk_"+m+"_total", `volume="C:"`, 0, 10)
		}
		for _, m := range []string{"packets", "packets_received_errors", "packets_outbound_errors", "packets_received_discarded", "packets_outbound_discarded"} {
			add(n, "windows_net_"+m+"_total", `nic="Ethernet"`, 0, 10)
		}
		labels := fmt.Sprintf(`container_id="containerd://%064x",namespace="shop",pod="%s",container="app"`, 100*(i+1), pod)
		if c.exportedLabels {
			labels = fmt.Sprintf(`container_id="containerd://%064x",exported_namespace="shop",exported_pod="%s",exported_container="app",namespace="monitoring",pod="windows-exporter-%d",container="windows-exporter"`, 100*(i+1), pod, i)
		}
		if c.exporterPodLabels {
			labels = fmt.Sprintf(`container_id="containerd://%064x",namespace="monitoring",pod="windows-exporter-%d",container="windows-exporter"`, 100*(i+1), i)
		}
		add(n, "windows_container_available", labels, 1, 0)
		add(n, "windows_container_memory_usage_commit_bytes", labels, 104857600, 0)
	}
	return out
}

// targetLabels are what Prometheus adds to a target's series: job,
// instance, the node label winobs's monitor sets, and the cluster.
func (c cluster) targetLabels(t target) string {
	job := "windows-exporter"
	if t.name == "ksm" {
		job = "kube-state-metrics"
	}
	l := fmt.Sprintf(`job="%s",instance="%s"`, job, t.instance)
	if t.node != "" {
		l += `,node="` + t.node + `"`
	}
	if c.clusterName != "" {
		l += `,cluster="` + c.clusterName + `"`
	}
	return l
}

// script writes the fixture as a promqltest load script, as Prometheus
// would store its scrapes: 40 samples 30 s apart, up included.
func (c cluster) script() string {
	var b strings.Builder
	b.WriteString("load 30s\n")
	byTarget := map[string]target{}
	for _, t := range c.targets() {
		byTarget[t.name] = t
		up := "1x40"
		if t.down {
			up = "0x40"
		}
		fmt.Fprintf(&b, "  up{%s} %s\n", c.targetLabels(t), up)
	}
	for _, s := range c.series() {
		t, ok := byTarget[s.target]
		if !ok || t.down {
			continue
		}
		labels := c.targetLabels(t)
		if s.labels != "" {
			labels = s.labels + "," + labels
		}
		fmt.Fprintf(&b, "  %s{%s} %s+%sx40\n", s.metric, labels, strconv.FormatFloat(s.start, 'g', -1, 64), strconv.FormatFloat(s.delta, 'g', -1, 64))
	}
	return b.String()
}

// exposition is a target's scrape, in the text format, after elapsed.
func (c cluster) exposition(name string, elapsed time.Duration) string {
	var b strings.Builder
	for _, s := range c.series() {
		if s.target != name {
			continue
		}
		v := s.start + s.delta*elapsed.Seconds()/30
		fmt.Fprintf(&b, "%s{%s} %s\n", s.metric, s.labels, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return b.String()
}

// fakeProm is Prometheus' engine and rule manager over a fixture.
type fakeProm struct {
	suite  *promqltest.LazyLoader
	engine *promql.Engine
	groups []*promrules.Group
	at     time.Time
	alerts []Alert
	// skipGroup is a rule group left out of /api/v1/rules (not selected).
	skipGroup string
	// external are the external labels of its configuration.
	external map[string]string
}

var testParser = parser.NewParser(parser.Options{})

func newFakeProm(t testing.TB, cfg *config.Config, c cluster) *fakeProm {
	t.Helper()
	end := time.Unix(0, 0).Add(20 * time.Minute)
	suite, err := promqltest.NewLazyLoader(c.script(), promqltest.LazyLoaderOpts{Parser: testParser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { suite.Close() })
	suite.WithSamplesTill(end, func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	})
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, Parser: testParser})
	// The rendered rule files, loaded by Prometheus' rule manager.
	files, err := rules.Files(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	data, _, err := render.Encode(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{rules.RecordsGroup, rules.AlertsGroup} {
		p := filepath.Join(dir, g+".yaml")
		if err := os.WriteFile(p, data["rules/"+g+".yaml"], 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	mgr := promrules.NewManager(&promrules.ManagerOptions{
		QueryFunc: promrules.EngineQueryFunc(engine, suite.Storage()), AppendableV2: suite.Storage(),
		Context: context.Background(), NotifyFunc: func(context.Context, string, ...*promrules.Alert) {},
		Logger: promslog.NewNopLogger(), Parser: testParser,
	})
	loaded, errs := mgr.LoadGroups(30*time.Second, labels.EmptyLabels(), "", nil, false, paths...)
	if errs != nil {
		t.Fatal(errs)
	}
	var groups []*promrules.Group
	for _, name := range []string{rules.RecordsGroup, rules.AlertsGroup} {
		for _, g := range loaded {
			if g.Name() == name {
				groups = append(groups, g)
			}
		}
	}
	for ts := end.Add(-10 * time.Minute); !ts.After(end); ts = ts.Add(30 * time.Second) {
		for _, g := range groups {
			g.Eval(suite.Context(), ts)
		}
	}
	return &fakeProm{suite: suite, engine: engine, groups: groups, at: end}
}

func writeJSON(w http.ResponseWriter, data any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v1/status/buildinfo":
		writeJSON(w, map[string]string{"version": "3.16.0", "revision": "", "branch": "", "buildUser": "", "buildDate": "", "goVersion": "go1.26.8"})
	case "/api/v1/query":
		q, err := f.engine.NewInstantQuery(r.Context(), f.suite.Queryable(), nil, r.URL.Query().Get("query"), f.at)
		if err != nil {
			// As Prometheus answers a parse error.
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": err.Error()})
			return
		}
		defer q.Close()
		res := q.Exec(r.Context())
		if res.Err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "execution", "error": res.Err.Error()})
			return
		}
		var out []map[string]any
		if v, ok := res.Value.(promql.Vector); ok {
			for _, s := range v {
				out = append(out, map[string]any{"metric": s.Metric.Map(),
					"value": []any{float64(s.T) / 1000, strconv.FormatFloat(s.F, 'f', -1, 64)}})
			}
		}
		if out == nil {
			out = []map[string]any{}
		}
		writeJSON(w, map[string]any{"resultType": "vector", "result": out})
	case "/api/v1/rules":
		// The recorded shape, with the rule manager's health and errors, as
		// evaluated a few seconds ago.
		var groups []map[string]any
		now := time.Now().Add(-5 * time.Second)
		for _, g := range f.groups {
			if g.Name() == f.skipGroup {
				continue
			}
			var rs []map[string]any
			for _, rule := range g.Rules() {
				lastErr := ""
				if err := rule.LastError(); err != nil {
					lastErr = err.Error()
				}
				typ := "recording"
				if _, ok := rule.(*promrules.AlertingRule); ok {
					typ = "alerting"
				}
				rs = append(rs, map[string]any{"name": rule.Name(), "query": rule.Query().String(), "health": string(rule.Health()),
					"lastError": lastErr, "lastEvaluation": now, "type": typ})
			}
			groups = append(groups, map[string]any{"name": g.Name(), "file": g.File(), "rules": rs, "interval": g.Interval().Seconds(), "lastEvaluation": now})
		}
		writeJSON(w, map[string]any{"groups": groups})
	case "/api/v1/status/config":
		// The shape of testdata/prometheus-api/external-labels-status-config.
		cfg := "global:\n  scrape_interval: 30s\n"
		if len(f.external) > 0 {
			cfg += "  external_labels:\n"
			for k, v := range f.external {
				cfg += fmt.Sprintf("    %s: %s\n", k, strconv.Quote(v))
			}
		}
		writeJSON(w, map[string]any{"yaml": cfg + "scrape_configs: []\n"})
	case "/api/v1/alerts":
		alerts := f.alerts
		if alerts == nil {
			alerts = []Alert{}
		}
		writeJSON(w, map[string]any{"alerts": alerts})
	default:
		http.NotFound(w, r)
	}
}

// fakeLoki answers a metric query by node and channel in Loki's recorded
// envelope, for the nodes given, and pod log lines when any.
func fakeLoki(eventNodes []string, podLines bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/loki/api/v1/status/buildinfo":
			w.Write([]byte(`{"version":"3.7.6","revision":"5003600d","branch":"","buildUser":"","buildDate":"","goVersion":""}`))
		case "/loki/api/v1/query":
			q := r.URL.Query().Get("query")
			res := []map[string]any{}
			if strings.Contains(q, `job="windows-events"`) && len(eventNodes) > 0 {
				res = append(res, map[string]any{"metric": map[string]string{"channel": "System"}, "value": []any{1796315373.352, "2"}})
			}
			writeJSON(w, map[string]any{"resultType": "vector", "result": res})
		case "/loki/api/v1/label/node/values":
			// As testdata/loki-api/label-node-values: the node values of
			// the streams the query selects.
			q, values := r.URL.Query().Get("query"), []string{}
			switch {
			case strings.Contains(q, `job="windows-events"`):
				values = append(values, eventNodes...)
			case strings.Contains(q, `job="windows-pods"`) && podLines:
				values = append(values, "win-1")
			}
			writeJSON(w, values)
		case "/loki/api/v1/label/channel/values":
			channels := []string{}
			if strings.Contains(r.URL.Query().Get("query"), `job="windows-events"`) && len(eventNodes) > 0 {
				channels = append(channels, "System")
			}
			writeJSON(w, channels)
		case "/config":
			// An excerpt of a real Loki 3.7.6's /config with its defaults
			// (allow_structured_metadata is written only while true).
			w.Write([]byte("target: all\nlimits_config:\n  ingestion_rate_strategy: global\n  max_line_size: 256KB\n  allow_structured_metadata: true\n  max_structured_metadata_size: 64KB\n"))
		case "/loki/api/v1/label/job/values":
			jobs := []string{}
			if len(eventNodes) > 0 {
				jobs = append(jobs, "windows-events")
			}
			if podLines {
				jobs = append(jobs, "windows-pods")
			}
			writeJSON(w, jobs)
		default:
			http.NotFound(w, r)
		}
	}
}

func runDoctor(t *testing.T, cfg *config.Config, c cluster, mutate func(*fakeProm), loki http.Handler) Report {
	t.Helper()
	f := newFakeProm(t, cfg, c)
	if mutate != nil {
		mutate(f)
	}
	prom := newTestAPI(t, "Prometheus", f, Auth{})
	var l *API
	if loki != nil {
		l = newTestAPI(t, "Loki", loki, Auth{})
	}
	return Run(context.Background(), view.ForDoctor(cfg), prom, l)
}

// healthyReport holds every check of rep to a pass, but those a healthy
// single cluster running Alloy has nothing for: no cluster label to check
// and, Alloy being the default log agent, no shipper counters; those are
// skipped, saying so.
func healthyReport(t testing.TB, rep Report) {
	t.Helper()
	nothing := map[string]bool{"cluster-label": true, "shipper-counters": true}
	for _, c := range rep.Checks {
		if want := map[bool]Status{true: Skip, false: Pass}[nothing[c.ID]]; c.Status != want {
			t.Errorf("%s: %s, want %s: %v (fix: %s)", c.ID, c.Status, want, c.Evidence, c.Fix)
		}
	}
}

func statuses(rep Report) map[string]Check {
	out := map[string]Check{}
	for _, c := range rep.Checks {
		out[c.ID] = c
	}
	return out
}

// On a healthy cluster every check passes and the report is OK.
func TestHealthyClusterPassesEveryCheck(t *testing.T) {
	cfg := config.Default()
	rep := runDoctor(t, cfg, healthy(), nil, fakeLoki([]string{"win-1", "win-2", "win-3"}, true))
	var out bytes.Buffer
	rep.WriteText(&out)
	healthyReport(t, rep)
	if !rep.OK() || len(rep.Checks) != 19 {
		t.Errorf("%d checks:\n%s", len(rep.Checks), out.String())
	}
	t.Log(out.String())
	for _, want := range []string{"✓ windows-nodes-scraped", "3 Windows nodes in kube-state-metrics, 3 exporter targets", "3 of 3 running Windows containers covered",
		"16 of 17 records have series", "✓ loki-events"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
}

// Each broken cluster fails its check, with the message that names what is
// wrong, and the report is not OK.
func TestBrokenClustersFailTheirCheck(t *testing.T) {
	allNodes := []string{"win-1", "win-2", "win-3"}
	for _, tc := range []struct {
		name   string
		c      func(cluster) cluster
		mutate func(*fakeProm)
		loki   http.Handler
		check  string
		want   string
	}{
		{"exporter down", func(c cluster) cluster { c.down = "win-2"; return c }, nil, nil,
			"windows-nodes-scraped", "targets down: 10.1.1.2:9182 (win-2)"},
		{"a node without an exporter target", func(c cluster) cluster { c.noTarget = "win-3"; return c }, nil, nil,
			"windows-nodes-scraped", "1 of 3 Windows nodes have no exporter target: win-3"},
		{"an untested exporter", func(c cluster) cluster { c.version = "0.32.0"; return c }, nil, nil,
			"exporter-version", "untested versions 0.32.0"},
		{"a failing collector", func(c cluster) cluster { c.failingCollector = true; return c }, nil, nil,
			"collectors", "1 failing: 10.1.1.1:9182 memory"},
		{"labels renamed by a second monitor", func(c cluster) cluster { c.exportedLabels = true; return c }, nil, nil,
			"container-labels", "3 container series carry exported_namespace/exported_pod"},
		{"series attributed to the exporter pod", func(c cluster) cluster { c.exporterPodLabels = true; return c }, nil, nil,
			"container-labels", "3 container series carry the exporter pod's own namespace/pod"},
		{"the records group not loaded", nil, func(f *fakeProm) { f.skipGroup = rules.RecordsGroup }, nil,
			"rules-loaded", "group winobs-windows-records is not loaded"},
		{"a container not covered", func(c cluster) cluster { c.uncovered = true; return c }, nil, nil,
			"container-coverage", "3 of 4 running Windows containers covered"},
		{"no commit limit (0.32)", func(c cluster) cluster { c.noCommitLimit = true; return c }, nil, nil,
			"commit-limit-metric", "3 scraped nodes without windows_memory_commit_limit"},
		{"the commit record empty", func(c cluster) cluster { c.noCommitLimit = true; return c }, nil, nil,
			"commit-per-node", "3 scraped nodes without " + vocab.Records.NodeCommitRatio},
		{"an alert firing", nil, func(f *fakeProm) {
			f.alerts = []Alert{{State: "firing", Labels: map[string]string{"alertname": rules.AlertNodeVolumeFull, "instance": "10.1.1.1:9182", "severity": "critical"}},
				{State: "firing", Labels: map[string]string{"alertname": "Watchdog"}}}
		}, nil, "alerts-firing", "WindowsNodeVolumeFull ×1: 10.1.1.1:9182"},
		{"a node sends no event", nil, nil, fakeLoki([]string{"win-1", "win-2"}, true),
			"loki-events", "1 of 3 Windows nodes sent no event: win-3"},
		{"no pod logs", nil, nil, fakeLoki(allNodes, false), "loki-pod-logs", `no stream with job "windows-pods"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := healthy()
			if tc.c != nil {
				c = tc.c(c)
			}
			loki := tc.loki
			if loki == nil {
				loki = fakeLoki(allNodes, true)
			}
			rep := runDoctor(t, config.Default(), c, tc.mutate, loki)
			got := statuses(rep)[tc.check]
			text := strings.Join(append(got.Evidence, got.Fix), "\n")
			if got.Status != Fail || !strings.Contains(text, tc.want) || got.Fix == "" {
				t.Errorf("%s: %s\n%s\nwant %q", tc.check, got.Status, text, tc.want)
			}
			if rep.OK() {
				t.Error("the report is OK")
			}
		})
	}
}

// One cause fails one check: the checks that depend on what broke leave
// it out or skip, naming the check that found it (as the cluster in a box
// found they did not).
func TestOneCauseFailsOneCheck(t *testing.T) {
	named := config.Default()
	named.Cluster.Name = "eu-1"
	for _, tc := range []struct {
		name  string
		cfg   *config.Config
		c     func(cluster) cluster
		check string
		want  string
	}{
		{"one node's exporter down", nil, func(c cluster) cluster { c.down = "win-2"; return c },
			"windows-nodes-scraped", "targets down: 10.1.1.2:9182 (win-2)"},
		{"kube-state-metrics down", nil, func(c cluster) cluster { c.ksmDown = true; return c },
			"windows-nodes-scraped", `kube-state-metrics (job "kube-state-metrics") is down`},
		{"the cluster label neither external nor on the series", named, nil,
			"cluster-label", `set the external label cluster: "eu-1"`},
		{"a shipper pod whose counters do not arrive", nil, func(c cluster) cluster { c.shipperOn = "win-3"; return c },
			"shipper-counters", "the eventlog-shipper runs on win-3 (kube-state-metrics), but no winobs_shipper_events_read_total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, c := tc.cfg, healthy()
			if cfg == nil {
				cfg = config.Default()
			}
			if tc.c != nil {
				c = tc.c(c)
			}
			rep := runDoctor(t, cfg, c, nil, fakeLoki(c.nodes, true))
			for _, ch := range rep.Checks {
				text := strings.Join(append(ch.Evidence, ch.Fix), "\n")
				switch {
				case ch.ID == tc.check && (ch.Status != Fail || !strings.Contains(text, tc.want)):
					t.Errorf("%s: %s\n%s\nwant a failure saying %q", ch.ID, ch.Status, text, tc.want)
				case ch.ID != tc.check && ch.Status == Fail:
					t.Errorf("%s fails too: %s", ch.ID, text)
				}
			}
		})
	}
}

// With a cluster name, every query selects that cluster, and a Prometheus
// whose series carry another name fails the cluster-label check.
func TestClusterLabel(t *testing.T) {
	cfg := config.Default()
	cfg.Cluster.Name = "eu-1"
	c := healthy()
	c.clusterName = "eu-1"
	if rep := runDoctor(t, cfg, c, nil, fakeLoki(c.nodes, true)); !rep.OK() {
		var out bytes.Buffer
		rep.WriteText(&out)
		t.Errorf("the cluster's own data:\n%s", out.String())
	}
	c.clusterName = "us-2"
	got := statuses(runDoctor(t, cfg, c, nil, nil))["cluster-label"]
	if got.Status != Fail || !strings.Contains(strings.Join(got.Evidence, " "), `"us-2"; want "eu-1"`) {
		t.Errorf("%+v", got)
	}
	// kube-prometheus-stack's way: series without the label, the name an
	// external label of the Prometheus (which its queries never show).
	c.clusterName = ""
	external := func(v string) func(*fakeProm) {
		return func(f *fakeProm) { f.external = map[string]string{"cluster": v} }
	}
	rep := runDoctor(t, cfg, c, external("eu-1"), nil)
	// It says so in the dashboards' terms (docs/dashboards.md, which
	// TestClusterLabelThroughGrafana holds).
	if got := statuses(rep)["cluster-label"]; got.Status != Pass ||
		!strings.Contains(strings.Join(got.Evidence, " "), `external label cluster="eu-1"`) ||
		!strings.Contains(strings.Join(got.Evidence, " "), "its own series carry no cluster (only an external label): read on this Prometheus, the dashboards take them as this cluster's") {
		t.Errorf("external label: %+v", got)
	}
	// And every other Prometheus check passes on those unlabelled series.
	for _, ch := range rep.Checks {
		if ch.Status == Fail {
			t.Errorf("with the external label, %s fails: %v", ch.ID, ch.Evidence)
		}
	}
	if got := statuses(runDoctor(t, cfg, c, external("us-2"), nil))["cluster-label"]; got.Status != Fail {
		t.Errorf("another external label: %+v", got)
	}
	if got := statuses(runDoctor(t, cfg, c, nil, nil))["cluster-label"]; got.Status != Fail || !strings.Contains(got.Fix, "externalLabels") ||
		!strings.Contains(strings.Join(got.Evidence, " "), "the dashboards show its series without cluster as this cluster's; its alerts and what it remote-writes carry no cluster") {
		t.Errorf("no label anywhere: %+v", got)
	}
	// On the series and external: nothing said of unlabelled series.
	c.clusterName = "eu-1"
	if got := statuses(runDoctor(t, cfg, c, external("eu-1"), nil))["cluster-label"]; got.Status != Pass || len(got.Evidence) != 1 {
		t.Errorf("on the series and external: %+v", got)
	}
}

// An unreachable Prometheus gives one failed check and no noise; --output
// json holds every check and the verdict.
func TestUnreachablePrometheusAndJSON(t *testing.T) {
	prom, err := NewAPI("Prometheus", "http://127.0.0.1:1", Auth{}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(context.Background(), view.ForDoctor(config.Default()), prom, nil)
	if len(rep.Checks) != 2 || rep.Checks[0].Status != Fail || rep.Checks[1].Status != Skip || rep.OK() {
		t.Errorf("%+v", rep.Checks)
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OK     bool    `json:"ok"`
		Checks []Check `json:"checks"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || doc.OK || len(doc.Checks) != 2 || !strings.Contains(doc.Checks[0].Evidence[0], "cannot reach it") {
		t.Errorf("%s %v", b.String(), err)
	}
}

// Every runbook section names the doctor checks that detect it, and each
// named check is one doctor runs.
func TestRunbooksLinkDoctorChecks(t *testing.T) {
	rep := runDoctor(t, config.Default(), healthy(), nil, fakeLoki([]string{"win-1", "win-2", "win-3"}, true))
	ids := statuses(rep)
	doc, err := os.ReadFile("../../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(doc), "\n## ")[1:]
	for _, s := range sections {
		title, _, _ := strings.Cut(s, "\n")
		_, line, ok := strings.Cut(s, "**Live check:** `gen doctor` ")
		if !ok {
			t.Errorf("%s names no doctor check", title)
			continue
		}
		line, _, _ = strings.Cut(line, " (README")
		for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(line, -1) {
			if id := m[1]; ids[id].ID == "" {
				t.Errorf("%s names %q, which doctor does not run", title, m[1])
			}
		}
	}
	if len(sections) < 20 {
		t.Errorf("%d runbook sections", len(sections))
	}
}

// An empty Prometheus (no exporter, no kube-state-metrics, no winobs rules)
// shows no ✓ for anything it could not check: each check fails at its root
// cause or is skipped naming it; the one with the rules loaded but no data
// skips its records instead of blaming the rules.
func TestEmptyPrometheusPassesNothing(t *testing.T) {
	empty := cluster{version: "0.31.8"}
	for _, tc := range []struct {
		name   string
		mutate func(*fakeProm)
		fail   []string
	}{
		{"no rules loaded", func(f *fakeProm) { f.groups = nil }, []string{"windows-nodes-scraped", "rules-loaded"}},
		{"rules loaded", nil, []string{"windows-nodes-scraped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			rep := runDoctor(t, cfg, empty, tc.mutate, fakeLoki(nil, false))
			var out bytes.Buffer
			rep.WriteText(&out)
			for _, c := range rep.Checks {
				wantFail := slices.Contains(tc.fail, c.ID) || c.ID == "loki-events" || c.ID == "loki-pod-logs"
				switch {
				case c.Status == Pass && !strings.HasSuffix(c.ID, "-reachable") && c.ID != "rules-loaded" && c.ID != "loki-structured-metadata": // Loki's, whatever Prometheus holds
					t.Errorf("%s passes with nothing to check", c.ID)
				case c.Status == Fail && !wantFail:
					t.Errorf("%s fails, but its cause is another check's: %v", c.ID, c.Evidence)
				case c.Status == Skip && !strings.Contains(strings.Join(c.Evidence, " "), "nothing to check"):
					t.Errorf("%s skipped without saying why: %v", c.ID, c.Evidence)
				}
			}
			if rep.OK() {
				t.Errorf("an empty Prometheus is OK:\n%s", out.String())
			}
			t.Log(out.String())
		})
	}
}

// A server that answers NaN, an infinity or a negative count never makes a
// check pass: doctor says it cannot believe the answer.
func TestHostileNumbersFail(t *testing.T) {
	for _, v := range []string{"NaN", "+Inf", "-Inf", "-9223372036854775808", "-1", "2.5"} {
		srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/api/v1/status/buildinfo":
				writeJSON(w, map[string]string{"version": "3.16.0"})
			case "/api/v1/query":
				writeJSON(w, map[string]any{"resultType": "vector", "result": []any{
					map[string]any{"metric": map[string]string{"node": "win-1", "version": "0.31.8", "instance": "10.1.1.1:9182"}, "value": []any{1, v}}}})
			default:
				http.NotFound(w, r)
			}
		})
		prom := newTestAPI(t, "Prometheus", srv, Auth{})
		rep := Run(context.Background(), view.ForDoctor(config.Default()), prom, nil)
		st := statuses(rep)
		for _, id := range []string{"exporter-version", "container-coverage", "container-labels"} {
			if st[id].Status == Pass {
				t.Errorf("value %s: %s passes: %v", v, id, st[id].Evidence)
			}
		}
		if rep.OK() {
			t.Errorf("value %s: the report is OK", v)
		}
	}
}

// A multi-tenant Loki as a real one answers (testdata/loki-api/mt-*): no
// tenant is a tenant problem, not a credentials one; a wrong tenant's empty
// answers are told from a silent cluster; the right tenant passes for 300
// nodes without the query that max_query_series refuses.
func TestMultiTenantLoki(t *testing.T) {
	var nodes []string
	if err := json.Unmarshal(fixture.Read(t, "loki-api", "mt-label-node-values.body"), &struct{ Data *[]string }{&nodes}); err != nil || len(nodes) != 300 {
		t.Fatalf("%d nodes: %v", len(nodes), err)
	}
	loki := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := r.Header.Get("X-Scope-OrgID")
		switch {
		case r.URL.Path == "/loki/api/v1/status/buildinfo":
			recorded(t, "loki-api", "mt-buildinfo-no-org-id")(w, r)
		case tenant == "":
			recorded(t, "loki-api", "mt-query-no-org-id")(w, r)
		case strings.Contains(r.URL.Query().Get("query"), "by (cluster, node, channel)"):
			recorded(t, "loki-api", "mt-query-max-series")(w, r)
		case tenant != "windows" && r.URL.Path == "/loki/api/v1/query":
			recorded(t, "loki-api", "mt-query-wrong-tenant")(w, r)
		case tenant != "windows":
			recorded(t, "loki-api", "label-values-empty")(w, r) // a tenant with nothing: no data at all
		case r.URL.Path == "/loki/api/v1/label/node/values":
			recorded(t, "loki-api", "mt-label-node-values")(w, r)
		case r.URL.Path == "/loki/api/v1/query":
			writeJSON(w, map[string]any{"resultType": "vector", "result": []any{
				map[string]any{"metric": map[string]string{"channel": "System"}, "value": []any{1, "300"}},
				map[string]any{"metric": map[string]string{"channel": "Application"}, "value": []any{1, "300"}}}})
		default:
			writeJSON(w, []string{"windows-events"})
		}
	})
	cfg := config.Default()
	for _, tc := range []struct {
		tenant string
		status Status
		want   string
	}{
		{"", Fail, "needs a tenant (X-Scope-OrgID): set loki.tenant"},
		{"other", Fail, `tenant "other" holds no logs at all`},
		{"windows", Pass, "300 nodes, channels Application, System"},
	} {
		r := &run{v: view.ForDoctor(cfg), loki: newTestAPI(t, "Loki", loki, Auth{Tenant: tc.tenant}),
			facts: facts{t: view.ForDoctor(cfg).Terms, lt: view.ForDoctor(cfg).Terms, windowsNodes: nodes}}
		got := r.eventsPerNode(context.Background(), Check{})
		if text := strings.Join(append(got.Evidence, got.Fix), " "); got.Status != tc.status || !strings.Contains(text, tc.want) {
			t.Errorf("tenant %q: %s %s, want %q", tc.tenant, got.Status, text, tc.want)
		}
	}
}

// A --loki that answers not as Loki does (a Prometheus URL given by
// mistake: its /loki paths are 404s, as testdata/loki-api/wrong-path shows
// the other way round) fails loki-reachable with a fix naming a Loki URL,
// never a Prometheus one.
func TestLokiUnreachableFixNamesLoki(t *testing.T) {
	notLoki := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	got := statuses(runDoctor(t, config.Default(), healthy(), nil, notLoki))["loki-reachable"]
	if got.Status != Fail || !strings.Contains(got.Fix, "loki-gateway") || strings.Contains(got.Fix, "9090") {
		t.Errorf("loki-reachable: %+v", got)
	}
}

// An exporter past the tested range that renames the commit limit (0.32),
// or a memory collector that stopped serving it: exporter-names names the
// missing metric and every record and alert it empties, the records' readers
// included; the boot time's other versions' names empty nothing.
func TestExporterNamesNameWhatGoesEmpty(t *testing.T) {
	c := healthy()
	c.noCommitLimit = true
	got := statuses(runDoctor(t, config.Default(), c, nil, nil))["exporter-names"]
	text := strings.Join(got.Evidence, "\n")
	t.Log(text)
	if got.Status != Fail || len(got.Evidence) != 1 || !strings.HasPrefix(text, "windows_memory_commit_limit is not served by any exporter: empties ") {
		t.Fatalf("exporter-names: %+v", got)
	}
	for _, want := range []string{vocab.Records.NodeCommitRatio, rules.AlertNodeCommitChargeHigh} {
		if !strings.Contains(text, want) {
			t.Errorf("evidence lacks %s: %s", want, text)
		}
	}
	for _, quiet := range []string{rules.AlertNodeCommitLimitMetricAbsent, "boot_time"} {
		if strings.Contains(text, quiet) {
			t.Errorf("evidence names %s, which does not go empty: %s", quiet, text)
		}
	}
	if healthy := statuses(runDoctor(t, config.Default(), healthy(), nil, nil))["exporter-names"]; healthy.Status != Pass ||
		!strings.Contains(strings.Join(healthy.Evidence, " "), "windows_system_system_up_time") {
		t.Errorf("healthy: %+v", healthy)
	}
}

// Issues 58 and 67, on a real Loki: loki-detections asks what the
// detections ask (their own selection: class, and the channel as rendered)
// and fails naming the labels the events carry instead: another spelling
// ("security"), a collector's "ForwardedEvents", the layout before issue 61
// (no class: an older winobs, k8s-monitoring's windowsEventLogs), metadata
// where the stream-label layout is rendered. Channels as Windows spells
// them pass in either layout; a channel with no event is quiet, said.
// Each case in a tenant of its own.
func TestDetectionInputsRealLoki(t *testing.T) {
	loki := lokiproc.Start(t, lokiproc.Options{Tenants: true})
	type ev struct {
		channel string
		class   string // "": no class label (the layout before issue 61)
		label   bool   // the channel a stream label, not metadata
	}
	all := []string{"System", "Security", "Microsoft-Windows-Host-Network-Service-Admin", "Microsoft-Windows-Hyper-V-Compute-Admin", "Application"}
	agents := func(label bool, channels ...string) []ev {
		var out []ev
		for _, c := range channels {
			out = append(out, ev{c, contract.EventClass(c), label})
		}
		return out
	}
	for i, tc := range []struct {
		name     string
		metadata bool // the rendered layout
		events   []ev
		status   Status
		want     []string
	}{
		{"winobs's agents, metadata", true, agents(false, all...), Pass, []string{"4 of 4 channels the detections read arrive as they select"}},
		{"winobs's agents, stream labels", false, agents(true, all...), Pass, []string{"4 of 4 channels"}},
		{"a stream-label render, metadata events", false, agents(false, "System"), Fail, []string{
			`select {job="windows-events", class="node", channel="System"}, but its events arrive as {channel="System" (structured metadata)}`}},
		{"security spelled so", true, agents(false, "System", "security"), Fail, []string{`WindowsAccountLockedOut`,
			`select {job="windows-events", class="security"} | channel="Security", but its events arrive as {channel="security", class="node"}: they never fire`,
			"no event in the last day, so no input yet", "Microsoft-Windows-Hyper-V-Compute-Admin (WindowsHostComputeServiceErrors)"}},
		{"a collector's ForwardedEvents", true, []ev{{"ForwardedEvents", "node", false}}, Fail, []string{
			`WindowsNodeServiceTerminated, WindowsServiceInstalled, WindowsServiceStartFailed select {job="windows-events", class="node"} | channel="System", but its events arrive as {channel="ForwardedEvents"}`}},
		{"the layout before issue 61", true, []ev{{"System", "", true}, {"Security", "", true}}, Fail, []string{
			`arrive as {channel="System", class=""}`, `arrive as {channel="Security", class=""}`}},
		{"quiet channels", true, agents(false, "System"), Pass, []string{"1 of 4 channels", "Security (WindowsLogonBruteForce, WindowsAccountLockedOut"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := fmt.Sprintf("case%d", i)
			now := time.Now()
			var streams []any
			for k, e := range tc.events {
				labels := map[string]string{"job": "windows-events", "node": "win-1"}
				if e.class != "" {
					labels["class"] = e.class
				}
				value := []any{strconv.FormatInt(now.Add(time.Duration(k-len(tc.events))*time.Second).UnixNano(), 10), `{"event_id":1}`}
				if e.label {
					labels["channel"] = e.channel
				} else {
					value = append(value, map[string]string{"channel": e.channel})
				}
				streams = append(streams, map[string]any{"stream": labels, "values": []any{value}})
			}
			body, _ := json.Marshal(map[string]any{"streams": streams})
			if code, answer := loki.Push(t, tenant, "application/json", body); code != http.StatusNoContent {
				t.Fatalf("push: %d %s", code, answer)
			}
			cfg := config.Default()
			cfg.Logs.StructuredMetadata = tc.metadata
			api, err := NewAPI("Loki", loki.URL, Auth{Credentials: endpoint.Credentials{}, Tenant: tenant}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			r := &run{v: view.ForDoctor(cfg), loki: api, facts: facts{t: view.ForDoctor(cfg).Terms, lt: view.ForDoctor(cfg).Terms}}
			var got Check
			for deadline := time.Now().Add(fixture.Patience); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
				if got = r.detectionInputs(context.Background(), Check{}); got.Status != Skip {
					break // the pushed lines are readable
				}
			}
			text := strings.Join(append(got.Evidence, got.Fix), "\n")
			if got.Status != tc.status {
				t.Errorf("%s, want %s:\n%s", got.Status, tc.status, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("evidence lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

// Issue 67, on real Lokis: one configured as an upgraded install is
// (structured metadata disallowed) fails loki-structured-metadata for the
// metadata layout, naming the setting and both fixes, and the checks that
// would then blame logs.eventsJob or loki.url skip naming it as the cause;
// the stream-label layout passes there; a current Loki passes the metadata
// layout.
func TestStructuredMetadataRealLoki(t *testing.T) {
	upgraded := lokiproc.Start(t, lokiproc.Options{Upgraded: true})
	current := lokiproc.Start(t, lokiproc.Options{})
	for _, tc := range []struct {
		name     string
		loki     *lokiproc.Loki
		metadata bool
		status   Status
		want     string
	}{
		{"upgraded, metadata layout", upgraded, true, Fail, "limits_config has no allow_structured_metadata: true"},
		{"upgraded, stream-label layout", upgraded, false, Pass, "the agents send no structured metadata"},
		{"current, metadata layout", current, true, Pass, "keeps structured metadata (limits_config.allow_structured_metadata: true)"},
		{"current, stream-label layout", current, false, Pass, "logs.structuredMetadata: true puts a node's events in two streams"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Logs.StructuredMetadata = tc.metadata
			api, err := NewAPI("Loki", tc.loki.URL, Auth{}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			r := &run{v: view.ForDoctor(cfg), loki: api, now: time.Now, facts: facts{t: view.ForDoctor(cfg).Terms, lt: view.ForDoctor(cfg).Terms}}
			checks := statuses(Report{Checks: r.do(context.Background(), lokiChecks)})
			got := checks["loki-structured-metadata"]
			text := strings.Join(append(got.Evidence, got.Fix), "\n")
			if got.Status != tc.status || !strings.Contains(text, tc.want) {
				t.Errorf("%s, want %s with %q:\n%s", got.Status, tc.status, tc.want, text)
			}
			if tc.status != Fail {
				return
			}
			for _, want := range []string{"allow_structured_metadata: true (Loki 3.0+ whose active schema is v13 on tsdb", "logs.structuredMetadata: false", "Alloy drops every event batch"} {
				if !strings.Contains(got.Fix, want) {
					t.Errorf("fix lacks %q: %s", want, got.Fix)
				}
			}
			for _, id := range []string{"loki-events", "loki-pod-logs", "loki-detections"} {
				if c := checks[id]; c.Status != Skip || !strings.Contains(strings.Join(c.Evidence, " "), "see loki-structured-metadata") {
					t.Errorf("%s: %s %v", id, c.Status, c.Evidence)
				}
			}
		})
	}
}

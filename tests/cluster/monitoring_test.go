package cluster

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/gen/doctor"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/vocab"
)

// TestClusterMonitoring is the bundle's monitoring half where it meets the
// real programs: prometheus-operator v0.94.1 selects the rendered
// PrometheusRules and PodMonitor for a Prometheus configured as
// kube-prometheus-stack configures its own (selectors on the release label,
// the cluster as an external label); a real Prometheus runs the operator's
// configuration, finds the exporters through Kubernetes discovery of the
// real pods and evaluates the rules the operator selected; stand-ins serve
// kube-state-metrics and windows_exporter for the objects the API server
// holds. Then gen doctor: all green, and each breakage fails its own check.
func TestClusterMonitoring(t *testing.T) {
	bin := clusterBin(t)
	op, promBin := os.Getenv("WINOBS_OPERATOR_BIN"), os.Getenv("WINOBS_PROMETHEUS")
	if op == "" || promBin == "" {
		t.Fatal("WINOBS_OPERATOR_BIN and WINOBS_PROMETHEUS are not set: run make cluster-e2e")
	}
	b := start(t, bin)
	b.nodes()
	crds, _ := filepath.Glob(filepath.Join(op, "crds", "*.yaml"))
	for _, c := range crds {
		b.kubectl("apply", "--server-side", "-f", c)
	}

	// The workloads: two pods on each Windows node (one with two
	// containers, one of them without a memory limit), and one on Linux.
	b.kubectl("create", "namespace", "shop")
	for _, n := range []string{"win-aks-1", "win-eks-1", "linux-1"} {
		containers := `[{"name":"app","image":"mcr.microsoft.com/dotnet/samples:aspnetapp","resources":{"limits":{"memory":"512Mi"}}}]`
		if n == "win-aks-1" {
			containers = `[{"name":"app","image":"mcr.microsoft.com/dotnet/samples:aspnetapp","resources":{"limits":{"memory":"512Mi"}}},{"name":"sidecar","image":"mcr.microsoft.com/windows/nanoserver:ltsc2022"}]`
		}
		pods := map[string]string{"web-" + n: containers}
		if n != "linux-1" {
			pods["api-"+n] = `[{"name":"api","image":"mcr.microsoft.com/dotnet/samples:aspnetapp","resources":{"limits":{"memory":"1Gi"}}}]`
		}
		for name, cs := range pods {
			b.kubectlIn(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"shop"},
"spec":{"nodeSelector":{"kubernetes.io/hostname":%q},"tolerations":[{"operator":"Exists"}],"containers":%s}}`, name, n, cs), "apply", "-f", "-")
		}
	}

	// The stand-ins, at each Windows node's address (where its exporter
	// pod's host network puts the port) and beside the box.
	api := newAPIReader(t, b)
	ksm := startKSM(t, api)
	exporters := map[string]*standIn{}
	for _, n := range windowsNodes {
		exporters[n] = startExporter(t, api, n, nodeIPs[n]+":9182")
	}

	// prometheus-operator, as kube-prometheus-stack deploys it, and a
	// Prometheus as kube-prometheus-stack's release "kps" configures it.
	t.Setenv("KUBECONFIG", b.kubeconfig)
	b.runPath("prometheus-operator", filepath.Join(op, "operator"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", freePort(t)))
	b.kubectl("create", "namespace", "monitoring")
	b.kubectlIn(`apiVersion: v1
kind: Secret
metadata: {name: kps-kube-state-metrics, namespace: monitoring}
stringData:
  scrape.yaml: |
    - job_name: kube-state-metrics
      honor_labels: true
      scrape_interval: 1s
      static_configs: [{targets: [`+ksm.addr+`]}]
`, "apply", "-f", "-")
	b.kubectlIn(kpsPrometheus, "apply", "-f", "-")

	// The README's commands, with a config for this cluster: the bundle in
	// winobs's own namespace, kube-prometheus-stack's Prometheus in its.
	out := b.renderConfig("winobs", b.config("winobs", true, "kps"))
	b.kubectl("apply", "-k", out)
	b.waitFor("the exporter on both Windows nodes", func() error {
		return b.onExactly("winobs", "winobs-windows-exporter", windowsNodes)
	})

	p := startPrometheus(t, b, promBin)
	p.syncUntil("the operator's configuration with winobs's rules and monitor", func(cfg string, rules []string) error {
		if !strings.Contains(cfg, "podMonitor/winobs/winobs-windows-exporter/") {
			return fmt.Errorf("no scrape job of winobs's PodMonitor")
		}
		if len(rules) == 0 {
			return fmt.Errorf("no rule files")
		}
		return nil
	})

	// Our rules are selected and loaded, a PrometheusRule of another
	// release is not.
	b.kubectlIn(`apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: other-release, namespace: monitoring, labels: {release: other}}
spec:
  groups: [{name: other-release-group, rules: [{record: "other:up", expr: "up"}]}]
`, "apply", "-f", "-")
	p.waitFor("the winobs groups loaded and evaluated", func() error {
		loaded, err := p.ruleGroups()
		if err != nil {
			return err
		}
		var groups []string
		for _, g := range loaded {
			groups = append(groups, g.Name)
		}
		for _, g := range []string{rules.RecordsGroup, rules.AlertsGroup} {
			if !slices.Contains(groups, g) {
				return fmt.Errorf("groups %v lack %s", groups, g)
			}
		}
		if slices.Contains(groups, "other-release-group") {
			return fmt.Errorf("a rule of release \"other\" was selected: %v", groups)
		}
		return nil
	})

	// The exporter targets, found through Kubernetes discovery: up on
	// every Windows node, none on Linux, with the node label the records
	// join on.
	p.waitFor("an exporter target up on each Windows node", func() error {
		ss, err := p.query(`up{job="windows-exporter"}`)
		if err != nil {
			return err
		}
		var on []string
		for _, s := range ss {
			if s.Value != 1 {
				return fmt.Errorf("target %v down", s.Metric)
			}
			if s.Metric["instance"] != s.Metric["node"] {
				return fmt.Errorf("target %v: the instance is not its node", s.Metric)
			}
			on = append(on, s.Metric["node"])
		}
		slices.Sort(on)
		if !slices.Equal(on, windowsNodes) {
			return fmt.Errorf("targets on %v, want %v", on, windowsNodes)
		}
		return nil
	})

	// Every record has series for every Windows node, and the container
	// records for every running container with its pod's real labels.
	o, err := api.list()
	if err != nil {
		t.Fatal(err)
	}
	// What each container record holds, from the pods: the info record
	// every container the exporter reports (HostProcess ones as available
	// only), commit the workload containers, limits those with one.
	cs := runningOn(o, windowsNodes)
	all := named(cs, func(container) bool { return true })
	workload := func(c container) bool { return !c.hostProcess }
	want := map[string][]string{
		vocab.Records.ContainerInfo:             all,
		vocab.Records.ContainerCommitBytes:      named(cs, workload),
		vocab.Records.ContainerMemoryLimitBytes: named(cs, func(c container) bool { return c.limited }),
		vocab.Records.ContainerCommitToLimit:    named(cs, func(c container) bool { return workload(c) && c.limited }),
		vocab.Records.ContainerNoMemoryLimit:    named(cs, func(c container) bool { return workload(c) && !c.limited }),
	}
	if len(all) != 9 || len(want[vocab.Records.ContainerNoMemoryLimit]) != 1 {
		t.Fatalf("running Windows containers %v, want shop's 5 (one without a limit) and the 4 of winobs's HostProcess pods", all)
	}
	p.waitFor("every record with series for every node and container", func() error {
		return p.recordsCover(windowsNodes, want)
	})

	// The commit-limit alert fires when one node's commit charge nears
	// its limit, and resolves when it falls.
	exporters["win-eks-1"].change(func(s string) string {
		return replaceValue(s, "windows_memory_committed_bytes ", "2.08e+10") // of 2.147483648e+10: 0.97
	})
	p.waitFor("WindowsNodeCommitChargeHigh firing on win-eks-1 only", func() error { return p.firing("WindowsNodeCommitChargeHigh", "win-eks-1") })
	exporters["win-eks-1"].change(nil)
	p.waitFor("WindowsNodeCommitChargeHigh resolved", func() error { return p.firing("WindowsNodeCommitChargeHigh") })

	// gen doctor: every check passes on the healthy box; each breakage
	// fails exactly its own check, with its fix.
	cfgFile := filepath.Join(b.dir, "winobs.yaml") // the config renderConfig kept
	b.doctorSays(t, cfgFile, p.url, nil)
	for _, br := range []struct {
		name, check, says string
		breakIt, mend     func()
	}{
		{"the rules' release label wrong", "rules-loaded", "is not loaded",
			func() {
				b.kubectl("apply", "-k", b.renderConfig("winobs", b.config("winobs", true, "kube-prometheus-stack")))
				p.syncUntil("the rules dropped", func(_ string, rules []string) error { return none(rules, "winobs") })
			},
			func() {
				b.kubectl("apply", "-k", b.renderConfig("winobs", b.config("winobs", true, "kps")))
				p.syncUntil("the rules back", func(_ string, rules []string) error { return some(rules, "winobs") })
			}},
		// Our PodMonitor drops the target's namespace/pod/container before
		// the scrape, so honorLabels alone changes nothing (next case);
		// a monitor with neither, as many hand-written ones are, renames
		// the container labels to exported_*.
		{"the PodMonitor without honorLabels", "", "",
			func() {
				b.kubectl("patch", "podmonitor", "winobs-windows-exporter", "-n", "winobs", "--type=json", "-p", `[{"op":"remove","path":"/spec/podMetricsEndpoints/0/honorLabels"}]`)
				p.syncUntil("honor_labels off", func(cfg string, _ []string) error { return exporterJob(cfg, false, true) })
			},
			func() {}},
		{"the PodMonitor without honorLabels or its labeldrop", "container-labels", "exported_namespace",
			func() {
				b.kubectl("patch", "podmonitor", "winobs-windows-exporter", "-n", "winobs", "--type=json", "-p", `[{"op":"remove","path":"/spec/podMetricsEndpoints/0/relabelings/3"}]`)
				p.syncUntil("honor_labels and the labeldrop off", func(cfg string, _ []string) error { return exporterJob(cfg, false, false) })
			},
			func() {
				b.kubectl("apply", "-k", out)
				p.syncUntil("honor_labels and the labeldrop back", func(cfg string, _ []string) error { return exporterJob(cfg, true, true) })
			}},
		{"kube-state-metrics down", "windows-nodes-scraped", "kube-state-metrics (job \"kube-state-metrics\") is down",
			func() { ksm.setDown(true) }, func() { ksm.setDown(false) }},
		{"one node's exporter down", "windows-nodes-scraped", "targets down: win-aks-1 (win-aks-1)",
			func() { exporters["win-aks-1"].setDown(true) }, func() { exporters["win-aks-1"].setDown(false) }},
		{"an unsupported exporter version", "exporter-version", "untested versions 0.32.1",
			func() {
				exporters["win-eks-1"].change(func(s string) string { return strings.ReplaceAll(s, `version="0.31.8"`, `version="0.32.1"`) })
			},
			func() { exporters["win-eks-1"].change(nil) }},
		{"the cluster external label missing", "cluster-label", "set the external label cluster: \"box\"",
			func() {
				b.kubectl("patch", "prometheus", "kps", "-n", "monitoring", "--type=json", "-p", `[{"op":"remove","path":"/spec/externalLabels"}]`)
				p.syncUntil("no external labels", func(cfg string, _ []string) error {
					if strings.Contains(cfg, "cluster: box") {
						return fmt.Errorf("still there")
					}
					return nil
				})
			},
			func() {
				b.kubectlIn(kpsPrometheus, "apply", "-f", "-")
				p.syncUntil("external labels back", func(cfg string, _ []string) error {
					if !strings.Contains(cfg, "cluster: box") {
						return fmt.Errorf("not yet")
					}
					return nil
				})
			}},
	} {
		// In the test's own goroutine: the box's helpers stop the test.
		t.Logf("breakage: %s", br.name)
		br.breakIt()
		fail := map[string]string{}
		if br.check != "" {
			fail[br.check] = br.says
		}
		b.doctorSays(t, cfgFile, p.url, fail)
		br.mend()
		b.doctorSays(t, cfgFile, p.url, nil)
	}
}

var windowsNodes = []string{"win-aks-1", "win-eks-1"}

// kpsPrometheus is a Prometheus as kube-prometheus-stack's release "kps"
// configures it: rules and monitors of any namespace selected by
// release: kps, the cluster as an external label, kube-state-metrics as
// an additional job (its stand-in is outside the cluster network).
const kpsPrometheus = `apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: kps, namespace: monitoring}
spec:
  replicas: 1
  scrapeInterval: 1s
  evaluationInterval: 1s
  externalLabels: {cluster: box}
  ruleSelector: {matchLabels: {release: kps}}
  ruleNamespaceSelector: {}
  podMonitorSelector: {matchLabels: {release: kps}}
  podMonitorNamespaceSelector: {}
  serviceMonitorSelector: {matchLabels: {release: kps}}
  serviceMonitorNamespaceSelector: {}
  probeSelector: {matchLabels: {release: kps}}
  scrapeConfigSelector: {matchLabels: {release: kps}}
  additionalScrapeConfigs: {name: kps-kube-state-metrics, key: scrape.yaml}
`

// prom is the real Prometheus, run with the operator's configuration.
type prom struct {
	t        *testing.T
	b        *box
	url, dir string
	api      *doctor.API
	// text and rules are the configuration and rule files it runs.
	text  string
	rules map[string]string
}

// startPrometheus runs Prometheus once the operator has written its
// configuration.
func startPrometheus(t *testing.T, b *box, bin string) *prom {
	p := &prom{t: t, b: b, dir: filepath.Join(b.dir, "prometheus")}
	os.MkdirAll(filepath.Join(p.dir, "rules"), 0o755)
	b.waitFor("the operator's configuration", func() error {
		_, _, err := p.fetch()
		return err
	})
	p.sync()
	port := freePort(t)
	p.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	api, err := doctor.NewAPI("Prometheus", p.url, doctor.Auth{}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p.api = api
	b.runPath("prometheus", bin, "--config.file="+filepath.Join(p.dir, "prometheus.yaml"), "--storage.tsdb.path="+filepath.Join(p.dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--web.enable-lifecycle")
	return p
}

// fetch reads the operator's output: the configuration (from its Secret)
// and the rule files (from its ConfigMaps), as the config reloader puts
// them in the Prometheus pod.
func (p *prom) fetch() (string, map[string]string, error) {
	out, err := p.b.try("get", "secret", "prometheus-kps", "-n", "monitoring", "-o", `jsonpath={.data.prometheus\.yaml\.gz}`)
	if err != nil || out == "" {
		return "", nil, fmt.Errorf("no configuration yet: %v", err)
	}
	gz, err := base64.StdEncoding.DecodeString(out)
	if err != nil {
		return "", nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return "", nil, err
	}
	cfg, err := io.ReadAll(zr)
	if err != nil {
		return "", nil, err
	}
	var cms struct {
		Items []struct {
			Metadata struct{ Name string }
			Data     map[string]string
		}
	}
	list, err := p.b.try("get", "configmaps", "-n", "monitoring", "-o", "json")
	if err != nil {
		return "", nil, err
	}
	if err := json.Unmarshal([]byte(list), &cms); err != nil {
		return "", nil, err
	}
	rules := map[string]string{}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Metadata.Name, "prometheus-kps-rulefiles-") {
			for k, v := range cm.Data {
				rules[cm.Metadata.Name+"_"+k] = v
			}
		}
	}
	return string(cfg), rules, nil
}

// sync writes the operator's current output where this Prometheus reads
// it, pointed at the box: Kubernetes discovery through the box's
// kubeconfig (the pod would use its service account), rule files from
// the local copy of the ConfigMaps (the pod mounts them), the pod's
// variables the reloader substitutes. It rewrites them, and reloads a
// running Prometheus, only when something changed.
func (p *prom) sync() (string, []string) {
	p.t.Helper()
	cfg, rules, err := p.fetch()
	if err != nil {
		p.t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(cfg), &doc); err != nil {
		p.t.Fatalf("the operator's configuration: %v\n%s", err, cfg)
	}
	scrapes, _ := doc["scrape_configs"].([]any)
	for _, sc := range scrapes {
		for _, sd := range asList(sc.(map[string]any)["kubernetes_sd_configs"]) {
			sd.(map[string]any)["kubeconfig_file"] = p.b.kubeconfig
		}
	}
	if files := asList(doc["rule_files"]); len(files) > 0 {
		doc["rule_files"] = []string{filepath.Join(p.dir, "rules", "*.yaml")}
	}
	local, err := yaml.Marshal(doc)
	if err != nil {
		p.t.Fatal(err)
	}
	// The config reloader expands the pod's environment: its name, and the
	// shard the StatefulSet's pod serves.
	text := strings.NewReplacer("$(POD_NAME)", "prometheus-kps-0", "$(SHARD)", "0").Replace(string(local))
	names := slices.Sorted(maps.Keys(rules))
	if text == p.text && maps.Equal(rules, p.rules) {
		return cfg, names
	}
	os.RemoveAll(filepath.Join(p.dir, "rules"))
	os.MkdirAll(filepath.Join(p.dir, "rules"), 0o755)
	for name, body := range rules {
		if err := os.WriteFile(filepath.Join(p.dir, "rules", name), []byte(body), 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(p.dir, "prometheus.yaml"), []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
	if p.url != "" {
		resp, err := http.Post(p.url+"/-/reload", "", nil)
		if err != nil {
			p.t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			p.t.Fatalf("reload: %s %s\n%s", resp.Status, body, text)
		}
	}
	p.text, p.rules = text, rules
	return cfg, names
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// syncUntil syncs until the operator's output passes check, then waits
// until Prometheus has scraped every target after it.
func (p *prom) syncUntil(what string, check func(cfg string, rules []string) error) {
	p.t.Helper()
	p.b.waitFor(what, func() error {
		return check(p.sync())
	})
	since := time.Now()
	p.waitFor("every target scraped after: "+what, func() error {
		var data struct {
			ActiveTargets []struct {
				ScrapePool string
				LastScrape time.Time
			}
		}
		if err := p.get("/api/v1/targets", &data); err != nil {
			return err
		}
		if len(data.ActiveTargets) == 0 {
			return fmt.Errorf("no target")
		}
		for _, t := range data.ActiveTargets {
			if !t.LastScrape.After(since) {
				return fmt.Errorf("%s last scraped %v", t.ScrapePool, t.LastScrape)
			}
		}
		return nil
	})
}

func (p *prom) waitFor(what string, check func() error) {
	p.t.Helper()
	p.b.waitFor(what, func() error {
		if err := check(); err != nil {
			return fmt.Errorf("%w\n--- targets\n%s", err, p.targets())
		}
		return nil
	})
}

// targets sums up Prometheus' targets, for a failure: each active one's
// job, labels, health and error, and how many were dropped.
func (p *prom) targets() string {
	var data struct {
		ActiveTargets []struct {
			ScrapePool, Health, LastError string
			Labels                        map[string]string
		}
		DroppedTargetCounts map[string]int
	}
	if err := p.get("/api/v1/targets", &data); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, t := range data.ActiveTargets {
		fmt.Fprintf(&b, "%s %v %s %s\n", t.ScrapePool, t.Labels, t.Health, t.LastError)
	}
	fmt.Fprintf(&b, "dropped: %v\n", data.DroppedTargetCounts)
	return b.String()
}

func (p *prom) get(path string, into any) error {
	resp, err := http.Get(p.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Status string
		Data   json.RawMessage
		Error  string
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return err
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", path, env.Error)
	}
	return json.Unmarshal(env.Data, into)
}

// query and ruleGroups go through doctor's Prometheus client (the one gen
// doctor uses); get is for what it does not ask (targets).
func (p *prom) query(q string) ([]doctor.Sample, error) { return p.api.Query(context.Background(), q) }

func (p *prom) ruleGroups() ([]doctor.RuleGroup, error) { return p.api.Rules(context.Background()) }

// recordsCover checks that every loaded winobs record has series: each
// node record for every Windows node, each container record for exactly
// the containers want names, with the pods' namespace/pod/container.
func (p *prom) recordsCover(nodes []string, want map[string][]string) error {
	groups, err := p.ruleGroups()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, g := range groups {
		if !strings.HasPrefix(g.Name, "winobs-") {
			continue
		}
		for _, r := range g.Rules {
			if r.Type != "recording" {
				continue
			}
			seen[r.Name] = true
			ss, err := p.query(r.Name)
			if err != nil {
				return err
			}
			var gotNodes, gotContainers []string
			for _, s := range ss {
				if s.Metric["cluster"] != "" {
					return fmt.Errorf("%s carries cluster=%q: external labels are added on the way out, never on series", r.Name, s.Metric["cluster"])
				}
				if n := s.Metric["node"]; n != "" {
					gotNodes = append(gotNodes, n)
				}
				if c := s.Metric["container"]; c != "" {
					gotContainers = append(gotContainers, s.Metric["namespace"]+"/"+s.Metric["pod"]+"/"+c)
				}
			}
			slices.Sort(gotNodes)
			slices.Sort(gotContainers)
			gotNodes, gotContainers = slices.Compact(gotNodes), slices.Compact(gotContainers)
			if containers, ok := want[r.Name]; ok {
				if !slices.Equal(gotContainers, containers) {
					return fmt.Errorf("%s has containers %v, want %v", r.Name, gotContainers, containers)
				}
			} else if !slices.Equal(gotNodes, nodes) {
				return fmt.Errorf("%s has series for nodes %v, want %v", r.Name, gotNodes, nodes)
			}
		}
	}
	for name := range want {
		if !seen[name] {
			return fmt.Errorf("record %s is not loaded", name)
		}
	}
	if len(seen) <= len(want) {
		return fmt.Errorf("node records loaded: none")
	}
	return nil
}

// firing checks that alert fires on exactly these nodes.
func (p *prom) firing(alert string, nodes ...string) error {
	alerts, err := p.api.Alerts(context.Background())
	if err != nil {
		return err
	}
	var on []string
	for _, a := range alerts {
		if a.Labels["alertname"] == alert && a.State == "firing" {
			on = append(on, a.Labels["node"])
		}
	}
	slices.Sort(on)
	on = slices.Compact(on)
	if !slices.Equal(on, nodes) && !(len(on) == 0 && len(nodes) == 0) {
		return fmt.Errorf("%s firing on %v, want %v", alert, on, nodes)
	}
	return nil
}

// doctorSays runs gen doctor as a user would (built once from ./cmd/gen)
// until exactly the checks in fail fail, each saying its text, and every
// other Prometheus check passes or, with a breakage, skips: scrapes and
// evaluations take their time to see a change, and no verdict may depend
// on how long.
func (b *box) doctorSays(t *testing.T, cfgFile, promURL string, fail map[string]string) {
	t.Helper()
	gen := filepath.Join(b.dir, "gen")
	if _, err := os.Stat(gen); err != nil {
		cmd := exec.Command("go", "build", "-o", gen, "./cmd/gen")
		cmd.Dir = repo(t, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/gen: %v\n%s", err, out)
		}
	}
	b.waitFor(fmt.Sprintf("gen doctor failing exactly %v", fail), func() error {
		cmd := exec.Command(gen, "doctor", "--config", cfgFile, "--prometheus", promURL, "--output", "json")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var rep struct {
			doctor.Report
			OK bool `json:"ok"`
		}
		if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
			return fmt.Errorf("gen doctor: %v (%v)\n%s%s", jerr, err, out.String(), errOut.String())
		}
		if (err == nil) != (len(fail) == 0) || rep.OK != (len(fail) == 0) {
			return fmt.Errorf("gen doctor exited %v, ok %v; want ok %v\n%s", err, rep.OK, len(fail) == 0, out.String())
		}
		var problems []string
		seen := map[string]bool{}
		for _, c := range rep.Checks {
			text := strings.Join(append(c.Evidence, c.Fix), " / ")
			want, mustFail := fail[c.ID]
			seen[c.ID] = true
			switch {
			case mustFail && (c.Status != doctor.Fail || !strings.Contains(text, want)):
				problems = append(problems, fmt.Sprintf("%s: %s (%s), want a failure saying %q", c.ID, c.Status, text, want))
			case !mustFail && c.Status == doctor.Fail:
				problems = append(problems, fmt.Sprintf("%s failed: %s", c.ID, text))
			case !mustFail && len(fail) == 0 && c.Status != doctor.Pass && !strings.HasPrefix(c.ID, "loki"):
				problems = append(problems, fmt.Sprintf("%s: %s on the healthy box: %s", c.ID, c.Status, text))
			}
		}
		for id := range fail {
			if !seen[id] {
				problems = append(problems, "no check "+id+" in the report")
			}
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "\n"))
		}
		return nil
	})
}

func none(rules []string, part string) error {
	for _, r := range rules {
		if strings.Contains(r, part) {
			return fmt.Errorf("still loaded: %s", r)
		}
	}
	return nil
}

func some(rules []string, part string) error {
	if none(rules, part) == nil {
		return fmt.Errorf("no rule file with %q in %v", part, rules)
	}
	return nil
}

// exporterJob checks the PodMonitor's job: honor_labels, and the labeldrop
// of the target's namespace/pod/container.
func exporterJob(cfg string, honors, drops bool) error {
	_, job, ok := strings.Cut(cfg, "job_name: podMonitor/winobs/winobs-windows-exporter/")
	if !ok {
		return fmt.Errorf("no job of the PodMonitor")
	}
	job, _, _ = strings.Cut(job, "- job_name:")
	if got := strings.Contains(job, "honor_labels: true"); got != honors {
		return fmt.Errorf("honor_labels %v, want %v", got, honors)
	}
	if got := strings.Contains(job, "regex: namespace|pod|container"); got != drops {
		return fmt.Errorf("labeldrop %v, want %v", got, drops)
	}
	return nil
}

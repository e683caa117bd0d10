package doctor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
)

// TestDoctorAgainstRealPrometheus runs doctor against a real Prometheus
// (the binary in $WINOBS_PROMETHEUS, built by `make doctor-e2e` at the
// version versions.json pins) that scrapes exposition fixtures of Windows
// nodes and kube-state-metrics and loads the rendered rule files. Every
// check passes on the healthy fixture; each broken fixture fails its check
// with its message. Without the variable it is skipped: `make doctor-e2e`
// sets it and fails when it is not.
func TestDoctorAgainstRealPrometheus(t *testing.T) {
	bin := os.Getenv("WINOBS_PROMETHEUS")
	if bin == "" {
		t.Skip("set WINOBS_PROMETHEUS to a prometheus binary (make doctor-e2e)")
	}
	both := []string{rules.RecordsGroup, rules.AlertsGroup}
	for _, tc := range []struct {
		name  string
		c     func(cluster) cluster
		files []string // rule groups loaded
		fail  map[string]string
		// cluster is cluster.name, set as the Prometheus's external label
		// (kube-prometheus-stack's externalLabels): the series lack it.
		cluster string
	}{
		{"healthy", nil, both, nil, ""},
		{"external labels: the cluster name on the way out, not on the series", nil, both, nil, "eu-1"},
		{"many nodes", func(c cluster) cluster {
			c.nodes = nil
			for i := range 200 {
				c.nodes = append(c.nodes, fmt.Sprintf("win-%03d", i))
			}
			return c
		}, both, nil, ""},
		{"an empty Prometheus", func(c cluster) cluster { c.nodes = nil; return c }, nil, map[string]string{
			"windows-nodes-scraped": "reports no node with a Windows os_image",
			"rules-loaded":          "group winobs-windows-records is not loaded",
		}, ""},
		{"exporter down, labels renamed, a container not covered", func(c cluster) cluster {
			c.down, c.exportedLabels, c.uncovered = "win-2", true, true
			return c
		}, both, map[string]string{
			"windows-nodes-scraped": "targets down: 10.1.1.2:9182 (win-2)",
			"container-labels":      "2 container series carry exported_namespace/exported_pod",
			"container-coverage":    "missing: shop/app-win-1/sidecar",
		}, ""},
		{"the records group not loaded", nil, []string{rules.AlertsGroup}, map[string]string{
			"rules-loaded": "group winobs-windows-records is not loaded",
		}, ""},
		// The name drift exporter-names finds: the commit limit renamed, as
		// 0.32 does; the boot time under the name 0.29 and 0.30 give it,
		// which the rules read as an alternative.
		{"the commit limit renamed", func(c cluster) cluster { c.noCommitLimit = true; return c }, both, map[string]string{
			"exporter-names":      "windows_memory_commit_limit is not served by any exporter: empties WindowsNodeCommitChargeHigh",
			"commit-limit-metric": "3 scraped nodes without windows_memory_commit_limit",
			"commit-per-node":     "3 scraped nodes without",
			"records":             "empty: instance:winobs_windows_memory_commit:ratio",
		}, ""},
		{"the boot time under 0.29's name", func(c cluster) cluster { c.bootTime = "windows_system_system_up_time"; return c }, both, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Cluster.Name = tc.cluster
			c := healthy()
			if tc.c != nil {
				c = tc.c(c)
			}
			url := startPrometheus(t, bin, cfg, c, tc.files)
			prom, err := NewAPI("Prometheus", url, Auth{}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// Wait for two rounds of scrapes and rule evaluations.
			deadline := time.Now().Add(90 * time.Second)
			for {
				ss, err := prom.Query(ctx, fmt.Sprintf(`count(up) >= %d and on () count(count_over_time(up[1m]) >= 3)`, len(c.targets())))
				if err == nil && len(ss) > 0 {
					time.Sleep(4 * time.Second)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("Prometheus did not scrape the fixture: %v", err)
				}
				time.Sleep(time.Second)
			}
			if dir := os.Getenv("WINOBS_RECORD_DIR"); dir != "" {
				record(t, url, dir, strings.Fields(tc.name)[0])
			}
			rep := Run(ctx, view.ForDoctor(cfg), prom, nil)
			var out bytes.Buffer
			rep.WriteText(&out)
			t.Log(out.String())
			for _, check := range rep.Checks {
				want, mustFail := tc.fail[check.ID]
				text := strings.Join(append(check.Evidence, check.Fix), "\n")
				switch {
				case mustFail && (check.Status != Fail || !strings.Contains(text, want)):
					t.Errorf("%s: %s, want a failure saying %q", check.ID, check.Status, want)
				case !mustFail && check.Status == Fail:
					// Each breakage fails only its own check: the others
					// pass, or skip naming the check that found the cause.
					t.Errorf("%s failed: %s", check.ID, text)
				}
			}
			if (len(tc.fail) == 0) != rep.OK() {
				t.Errorf("report OK = %v", rep.OK())
			}
			// Nothing to check is never a pass.
			if len(c.nodes) == 0 {
				for _, check := range rep.Checks {
					if check.Status == Pass && check.ID != "prometheus-reachable" {
						t.Errorf("%s passes on an empty Prometheus: %v", check.ID, check.Evidence)
					}
				}
			}
		})
	}
}

// record saves real answers of this Prometheus (body byte for byte and the
// status line) for the client's tests: testdata/prometheus-api/e2e/.
func record(t *testing.T, base, dir, prefix string) {
	t.Helper()
	for name, path := range map[string]string{
		"rules":           "/api/v1/rules",
		"query-up":        "/api/v1/query?query=" + url.QueryEscape("up"),
		"buildinfo":       "/api/v1/status/buildinfo",
		"query-bad-range": "/api/v1/query?query=" + url.QueryEscape("rate(up)"),
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, prefix+"-"+name+".body"), body, 0o644)
		os.WriteFile(filepath.Join(dir, prefix+"-"+name+".status"), []byte(resp.Proto+" "+resp.Status+"\n"), 0o644)
	}
}

// startPrometheus serves the fixture's targets, writes a Prometheus config
// that scrapes them every second and loads the given rule groups, starts the
// binary and returns its URL.
func startPrometheus(t *testing.T, bin string, cfg *config.Config, c cluster, groups []string) string {
	t.Helper()
	started := time.Now()
	var mu sync.Mutex
	targets := map[string]target{}
	for _, tg := range c.targets() {
		targets["/"+tg.name+"/metrics"] = tg
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		tg, ok := targets[r.URL.Path]
		if !ok || tg.down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		// Compress 30 s of the fixture into each second, so rates move.
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, c.exposition(tg.name, time.Since(started)*30))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	files, err := rules.Files(view.Of(cfg).Rules)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := render.Encode(files)
	if err != nil {
		t.Fatal(err)
	}
	var ruleFiles []string
	for _, g := range groups {
		p := filepath.Join(dir, g+".yaml")
		if err := os.WriteFile(p, data["rules/"+g+".yaml"], 0o644); err != nil {
			t.Fatal(err)
		}
		ruleFiles = append(ruleFiles, p)
	}
	addr := strings.TrimPrefix(srv.URL, "http://")
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n")
	if cfg.Cluster.Name != "" {
		fmt.Fprintf(&b, "  external_labels: {%s: %q}\n", cfg.Cluster.Label, cfg.Cluster.Name)
	}
	b.WriteString("rule_files:\n")
	for _, f := range ruleFiles {
		fmt.Fprintf(&b, "  - %q\n", f)
	}
	b.WriteString("scrape_configs:\n")
	for _, job := range []string{"windows-exporter", "kube-state-metrics"} {
		fmt.Fprintf(&b, "  - job_name: %s\n    honor_labels: true\n    fallback_scrape_protocol: PrometheusText0.0.4\n    static_configs:\n", job)
		for _, tg := range c.targets() {
			if (tg.name == "ksm") != (job == "kube-state-metrics") {
				continue
			}
			fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {instance: %q, __metrics_path__: %q", addr, tg.instance, "/"+tg.name+"/metrics")
			if tg.node != "" {
				fmt.Fprintf(&b, ", node: %q", tg.node)
			}
			b.WriteString("}\n")
		}
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+listen)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus.yml:\n%s\nprometheus log:\n%s", b.String(), logs.String())
		}
	})
	return "http://" + listen
}

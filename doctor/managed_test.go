package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/view"
)

// azureWorkspace stands in for an Azure Monitor workspace's query endpoint
// as Microsoft documents it ("Query Prometheus metrics using the API and
// PromQL"): a bearer token on every request (401 without), only
// /api/v1/query, query_range, series, labels and label/__name__/values
// (404 for the rest: no rules, alerts, build info or configuration), and
// every selector scoped to one metric name (400 otherwise). What it
// answers is the engine-backed fake Prometheus behind it.
type azureWorkspace struct {
	token string
	// gmp: GMP's frontend instead, which proxies the query API to Monarch
	// (any label values, no scoping rule) and takes no token itself.
	gmp  bool
	next http.Handler
	// noRecords: the rule group is not deployed, so no record exists.
	noRecords bool
	mu        sync.Mutex
	asked     []string // paths and queries it took
}

func (a *azureWorkspace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.gmp && r.Header.Get("Authorization") != "Bearer "+a.token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch p := r.URL.Path; {
	case p == "/api/v1/query", p == "/api/v1/query_range", p == "/api/v1/series", p == "/api/v1/labels", p == "/api/v1/label/__name__/values":
	case a.gmp && strings.HasPrefix(p, "/api/v1/label/") && strings.HasSuffix(p, "/values"):
	default:
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query().Get("query")
	if unscoped := unscopedSelector(q); !a.gmp && unscoped != "" {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": "query must be scoped to one metric name: " + unscoped})
		return
	}
	a.mu.Lock()
	a.asked = append(a.asked, r.URL.Path+" "+q)
	a.mu.Unlock()
	if a.noRecords && strings.Contains(q, ":winobs_") {
		writeJSON(w, map[string]any{"resultType": "vector", "result": []any{}})
		return
	}
	a.next.ServeHTTP(w, r)
}

// unscopedSelector is a selector of q that is not scoped to exactly one
// metric name, or "" (a query that does not parse is the engine's to
// refuse).
func unscopedSelector(q string) string {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		return ""
	}
	var unscoped string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		named := 0
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				named++
			}
		}
		if named != 1 {
			unscoped = vs.String()
		}
		return nil
	})
	return unscoped
}

func azureDoctor(t *testing.T, c cluster, noRecords bool, token string) (Report, *azureWorkspace) {
	t.Helper()
	cfg := config.Default()
	cfg.Prometheus.Platform = config.PlatformAzureMonitor
	ws := &azureWorkspace{token: "eyJ0eXAi.workspace-token", next: newFakeProm(t, cfg, c), noRecords: noRecords}
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(token+"\n"), 0o600)
	prom := newTestAPI(t, "Prometheus", ws, Auth{Credentials: endpoint.Credentials{BearerTokenFile: file}})
	return Run(context.Background(), view.ForDoctor(cfg), prom, nil), ws
}

// Issue 59: doctor on an Azure Monitor workspace. On a healthy cluster
// every check it can make passes through the documented API alone, with
// the token read from a file; the checks that need a rules or alerts API
// are skipped saying so, never passed; the rule group is proven by its
// records; a wrong token fails reachability with the token's fix.
func TestDoctorOnAzureMonitor(t *testing.T) {
	rep, ws := azureDoctor(t, healthy(), false, "eyJ0eXAi.workspace-token")
	var out bytes.Buffer
	rep.WriteText(&out)
	got := statuses(rep)
	for id, c := range got {
		switch {
		case id == "alerts-firing":
			if c.Status != Skip || !strings.Contains(strings.Join(c.Evidence, " "), "serves no rules, alerts") {
				t.Errorf("alerts-firing: %s %v", c.Status, c.Evidence)
			}
		case id == "cluster-label" || id == "shipper-counters" || id == "loki":
			// single cluster, Alloy, no --loki: nothing to check
		case c.Status != Pass:
			t.Errorf("%s: %s %v (fix: %s)", id, c.Status, c.Evidence, c.Fix)
		}
	}
	if rl := got["rules-loaded"]; !strings.Contains(strings.Join(rl.Evidence, " "), "the rules evaluate") {
		t.Errorf("rules-loaded on Azure: %+v", rl)
	}
	if !strings.Contains(strings.Join(got["prometheus-reachable"].Evidence, " "), "Azure Monitor workspace at") {
		t.Errorf("reachable: %+v", got["prometheus-reachable"])
	}
	for _, a := range ws.asked {
		if !strings.HasPrefix(a, "/api/v1/query ") {
			t.Errorf("asked %s", a)
		}
	}
	if len(ws.asked) < 20 {
		t.Errorf("only %d queries reached the workspace:\n%s", len(ws.asked), out.String())
	}
	t.Log(out.String())

	// The keep-list trap: Azure's minimal profile dropped the commit limit.
	noLimit := healthy()
	noLimit.noCommitLimit = true
	rep, _ = azureDoctor(t, noLimit, false, "eyJ0eXAi.workspace-token")
	if c := statuses(rep)["commit-limit-metric"]; c.Status != Fail || !strings.Contains(c.Fix, "ama-metrics-settings-configmap.yaml") {
		t.Errorf("commit-limit-metric without the commit limit: %+v", c)
	}
	if c := statuses(rep)["exporter-names"]; c.Status != Fail || !strings.Contains(strings.Join(c.Evidence, " "), "windows_memory_commit_limit is not served") {
		t.Errorf("exporter-names without the commit limit: %+v", c)
	}

	// The rule group not deployed: no record arrives.
	rep, _ = azureDoctor(t, healthy(), true, "eyJ0eXAi.workspace-token")
	if c := statuses(rep)["rules-loaded"]; c.Status != Fail || !strings.Contains(c.Fix, "az deployment group create") {
		t.Errorf("rules-loaded without records: %+v", c)
	}

	// A wrong token.
	rep, _ = azureDoctor(t, healthy(), false, "expired")
	if c := statuses(rep)["prometheus-reachable"]; c.Status != Fail || !strings.Contains(c.Fix, "az account get-access-token --resource https://prometheus.monitor.azure.com") {
		t.Errorf("a wrong token: %+v", c)
	}
	if slices.ContainsFunc(rep.Checks, func(c Check) bool { return c.Status == Pass }) {
		t.Error("a check passed without the workspace")
	}
}

// Issue 60: doctor through GMP's frontend (a Prometheus query API proxied
// to Monarch, no rules or alerts): the same checks pass, the same are
// skipped, naming GMP's way to see its rules; no rule group means no
// record, a fail that says how to apply the ClusterRules.
func TestDoctorOnGMP(t *testing.T) {
	for _, noRecords := range []bool{false, true} {
		cfg := config.Default()
		cfg.Prometheus.Platform = config.PlatformGMP
		ws := &azureWorkspace{gmp: true, next: newFakeProm(t, cfg, healthy()), noRecords: noRecords}
		rep := Run(context.Background(), view.ForDoctor(cfg), newTestAPI(t, "Prometheus", ws, Auth{}), nil)
		got := statuses(rep)
		if c := got["alerts-firing"]; c.Status != Skip || !strings.Contains(strings.Join(c.Evidence, " "), "kubectl describe clusterrules") {
			t.Errorf("alerts-firing: %+v", c)
		}
		rl := got["rules-loaded"]
		if !noRecords && rl.Status != Pass || noRecords && (rl.Status != Fail || !strings.Contains(rl.Fix, "gmp/winobs-windows.yaml")) {
			t.Errorf("rules-loaded (no records %v): %+v", noRecords, rl)
		}
		if c := got["prometheus-reachable"]; c.Status != Pass || !strings.Contains(strings.Join(c.Evidence, " "), "GMP frontend") {
			t.Errorf("reachable: %+v", c)
		}
		for _, a := range ws.asked {
			if !strings.HasPrefix(a, "/api/v1/query ") {
				t.Errorf("asked %s", a)
			}
		}
	}
}

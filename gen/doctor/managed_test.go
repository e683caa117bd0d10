package doctor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/view"
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

// unscopedSelector says why q is not scoped to one metric as Microsoft
// documents it, or "" (a query that does not parse is the engine's to
// refuse). "Query Prometheus metrics using the API and PromQL", API
// limitations: every series query (query, query_range, series) must hold
// a __name__ matcher, "There can only be one __name__ label matcher in a
// query": read as written, one in the whole query, so a query joining two
// metrics is refused too, as a regular expression over __name__ is.
func unscopedSelector(q string) string {
	if q == "" {
		return ""
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		return ""
	}
	var names []string
	unscoped := ""
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		named := 0
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel {
				named++
				if m.Type != labels.MatchEqual {
					unscoped = vs.String() + " matches __name__ by a regular expression"
				}
				names = append(names, m.Value)
			}
		}
		if named == 0 {
			unscoped = vs.String() + " has no __name__ matcher"
		}
		return nil
	})
	if unscoped == "" && len(names) != 1 {
		unscoped = fmt.Sprintf("%d __name__ matchers (%s), one allowed in a query", len(names), strings.Join(names, ", "))
	}
	return unscoped
}

func azureDoctor(t *testing.T, c cluster, noRecords bool, token string) (Report, *azureWorkspace) {
	t.Helper()
	return azureDoctorFor(t, "", c, noRecords, token)
}

// azureDoctorFor is azureDoctor with cluster.name set.
func azureDoctorFor(t *testing.T, clusterName string, c cluster, noRecords bool, token string) (Report, *azureWorkspace) {
	t.Helper()
	cfg := config.Default()
	cfg.Prometheus.Managed = managed.AzureMonitor
	cfg.Cluster.Name = clusterName
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
		case id == "container-coverage":
			if c.Status != Skip || !strings.Contains(strings.Join(c.Evidence, " "), "takes one metric name in a query") {
				t.Errorf("container-coverage: %s %v", c.Status, c.Evidence)
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

	// The joins doctor makes itself on Azure find what the one-query
	// joins find: container series labelled with the exporter pod's own.
	own := healthy()
	own.exporterPodLabels = true
	rep, _ = azureDoctor(t, own, false, "eyJ0eXAi.workspace-token")
	if c := statuses(rep)["container-labels"]; c.Status != Fail || !strings.Contains(strings.Join(c.Evidence, " "), "carry the exporter pod's own namespace/pod") {
		t.Errorf("container-labels with the exporter pod's labels: %+v", c)
	}
	// Issue 66: a cluster name: every check selects the label ama-metrics
	// writes; when ama-metrics writes another (an alias the config does
	// not know), cluster-label names both and the alias, not the firewall.
	named := healthy()
	named.clusterName = "prod-westeurope-01"
	rep, ws = azureDoctorFor(t, "prod-westeurope-01", named, false, "eyJ0eXAi.workspace-token")
	for _, c := range rep.Checks {
		if c.Status == Fail {
			t.Errorf("%s fails on the cluster's own label: %v", c.ID, c.Evidence)
		}
	}
	if c := statuses(rep)["cluster-label"]; c.Status != Pass {
		t.Errorf("cluster-label: %+v", c)
	}
	for _, a := range ws.asked {
		if strings.Contains(a, "cluster=") && !strings.Contains(a, `cluster="prod-westeurope-01"`) {
			t.Errorf("asked %s", a)
		}
	}
	named.clusterName = "prod_westeurope_01"
	rep, _ = azureDoctorFor(t, "prod-westeurope-01", named, false, "eyJ0eXAi.workspace-token")
	if c := statuses(rep)["cluster-label"]; c.Status != Fail || !strings.Contains(strings.Join(c.Evidence, " "), `ama-metrics labels the exporter's series cluster="prod_westeurope_01"; want "prod-westeurope-01"`) ||
		!strings.Contains(c.Fix, "cluster_alias") {
		t.Errorf("cluster-label on another label: %+v", c)
	}

	// The stand-in refuses what Microsoft documents it refuses.
	for q, want := range map[string]string{
		`up{job="windows-exporter"}`: "",
		`max by (instance) (up == 1) unless on (instance) max by (instance) (windows_memory_commit_limit)`: "2 __name__ matchers",
		`count({__name__=~"windows_.+"})`:       "by a regular expression",
		`count({job="windows-exporter"})`:       "has no __name__ matcher",
		`sum(rate(windows_cpu_time_total[5m]))`: "",
	} {
		if got := unscopedSelector(q); want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
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
		cfg.Prometheus.Managed = managed.GMP
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

// ampWorkspace stands in for an AMP workspace's query API: every request
// must carry a valid SigV4 signature (service aps, the region, the known
// credentials), checked by signing the request again with the AWS SDK's
// own signer (the one github.com/prometheus/sigv4 signs with) and
// comparing; 403 otherwise, as AWS answers.
type ampWorkspace struct {
	region, key, secret string
	next                http.Handler
	verified            int
	mu                  sync.Mutex
}

func (a *ampWorkspace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.signed(r) {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"message":"The request signature we calculated does not match the signature you provided."}`))
		return
	}
	a.mu.Lock()
	a.verified++
	a.mu.Unlock()
	// AMP's query API lives under the workspace's path.
	prefix := regexp.MustCompile(`^/workspaces/ws-[0-9a-f-]{36}`).FindString(r.URL.Path)
	if prefix == "" {
		http.NotFound(w, r)
		return
	}
	r.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
	a.next.ServeHTTP(w, r)
}

func (a *ampWorkspace) signed(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	m := regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/([^/]+)/aps/aws4_request, SignedHeaders=([^,]+), Signature=[0-9a-f]{64}$`).FindStringSubmatch(auth)
	if m == nil || m[1] != a.key || m[2] != a.region {
		return false
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return false
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	again, _ := http.NewRequest(r.Method, "https://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range strings.Split(m[3], ";") {
		if h != "host" && h != "x-amz-date" {
			again.Header.Set(h, r.Header.Get(h))
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: a.key, SecretAccessKey: a.secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "aps", a.region, at); err != nil {
		return false
	}
	return again.Header.Get("Authorization") == auth
}

// Issue 60: doctor on AMP signs every request with SigV4 from AWS's
// standard chain (here the environment; never a flag), over https only;
// the workspace's stand-in verifies each signature with the SDK's signer.
// The checks run as on any managed Prometheus; wrong credentials fail
// reachability, naming the chain.
func TestDoctorOnAMP(t *testing.T) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDWINOBSTEST", "AWS_SECRET_ACCESS_KEY": "c2VjcmV0LWtleS1mb3ItdGhlLXN0YW5kLWlu",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	cfg := config.Default()
	cfg.Prometheus.Managed = managed.AMP
	for _, secret := range []string{"c2VjcmV0LWtleS1mb3ItdGhlLXN0YW5kLWlu", "another-secret"} {
		ws := &ampWorkspace{region: "eu-west-1", key: "AKIDWINOBSTEST", secret: secret, next: newFakeProm(t, cfg, healthy())}
		srv := httptest.NewTLSServer(ws)
		defer srv.Close()
		ca := filepath.Join(t.TempDir(), "ca.pem")
		os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
		prom, err := NewAPI("Prometheus", srv.URL+"/workspaces/ws-8a6f7e7e-4d1e-4b88-8b4c-0123456789ab", Auth{TLS: endpoint.TLS{CAFile: ca}, SigV4Region: "eu-west-1"}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := statuses(Run(context.Background(), view.ForDoctor(cfg), prom, nil))
		reach := got["prometheus-reachable"]
		if secret == ws.secret && secret == "c2VjcmV0LWtleS1mb3ItdGhlLXN0YW5kLWlu" {
			if reach.Status != Pass || got["rules-loaded"].Status != Pass || got["alerts-firing"].Status != Skip || ws.verified < 10 {
				t.Errorf("AMP: reachable %+v, rules-loaded %+v, %d requests verified", reach, got["rules-loaded"], ws.verified)
			}
		} else if reach.Status != Fail || !strings.Contains(reach.Fix, "SigV4") || ws.verified != 0 {
			t.Errorf("with credentials AWS does not know: %+v (%d verified)", reach, ws.verified)
		}
	}
	// SigV4 goes over https, alone.
	for _, tc := range []struct {
		url  string
		auth Auth
		want string
	}{
		{"http://aps.example/workspaces/ws-1", Auth{SigV4Region: "eu-west-1"}, "SigV4 requests go to AWS over https"},
		{"https://aps.example/workspaces/ws-1", Auth{SigV4Region: "eu-west-1", Credentials: endpoint.Credentials{BearerTokenFile: "/t"}}, "give no bearer token"},
	} {
		if _, err := NewAPI("Prometheus", tc.url, tc.auth, time.Second); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.url, err)
		}
	}
}

// Package lokiproc runs a real Loki for tests: the binary make test builds
// from the Go module proxy (tests/loki/build.sh, bin/loki-VERSION), as a
// separate process on 127.0.0.1 ports with a temporary data directory and
// Loki's default limits. Loki is AGPL: it is run, never linked.
package lokiproc

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	winobs "github.com/winobs/winobs"
	"github.com/winobs/winobs/internal/testkit/fixture"
)

// Binary is the path of the pinned Loki under the repository's bin/. A
// test without it skips, unless WINOBS_REQUIRE_LOKI is set (make test sets
// it, after building it).
func Binary(t testing.TB) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(here), "..", "..", "..", "bin", "loki-"+winobs.Pinned().Loki)
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("WINOBS_REQUIRE_LOKI") != "" {
			t.Fatalf("the real Loki is not built (%v): make test builds it (tests/loki/build.sh)", err)
		}
		t.Skip("bin/loki-* missing: make test builds it (tests/loki/build.sh)")
	}
	return bin
}

// Loki is a running Loki.
type Loki struct {
	// URL is its HTTP base, http://127.0.0.1:PORT.
	URL string
}

// config is a single-process Loki on loopback ports, storing to dir, with
// the default limits but those a test sets. The ruler is off unless a test
// gives it rules (Options.Rules): the Loki rule tests evaluate by queries
// at chosen times (tests/loki).
var config = template.Must(template.New("loki").Parse(`auth_enabled: {{.Tenants}}
server:
  http_listen_address: 127.0.0.1
  http_listen_port: {{.HTTP}}
  grpc_listen_address: 127.0.0.1
  grpc_listen_port: {{.GRPC}}
  log_level: warn
common:
  instance_addr: 127.0.0.1
  path_prefix: {{.Dir}}
  storage:
    filesystem:
      chunks_directory: {{.Dir}}/chunks
      rules_directory: {{.Dir}}/rules
  replication_factor: 1
  ring:
    kvstore:
      store: inmemory
schema_config:
  configs:
{{- if .Upgraded}}
    - from: 2020-10-24
      store: boltdb-shipper
      object_store: filesystem
      schema: v12
      index:
        prefix: index_
        period: 24h
{{- end}}
    - from: {{.V13From}}
      store: tsdb
      object_store: filesystem
      schema: v13
      index:
        prefix: index_
        period: 24h
analytics:
  reporting_enabled: false
{{- if .Ruler}}
ruler:
  storage:
    type: local
    local:
      directory: {{.Dir}}/rules
  rule_path: {{.Dir}}/ruler-scratch
  evaluation_interval: {{.Ruler}}
  poll_interval: 1s
  enable_api: true
  ring:
    kvstore:
      store: inmemory
{{- end}}
{{- if .Limits}}
limits_config:
{{- range $k, $v := .Limits}}
  {{$k}}: {{$v}}
{{- end}}
{{- end}}
`))

// Options are what a test changes of Loki's defaults.
type Options struct {
	// Limits overrides entries of limits_config (Loki's names and YAML
	// values).
	Limits map[string]string
	// Tenants turns auth_enabled on: every request names its tenant
	// (X-Scope-OrgID), and tenants see nothing of each other.
	Tenants bool
	// Rules start Loki's ruler, loading them from its local rule storage
	// as the Loki Helm chart's rules sidecar leaves them: by tenant ("fake"
	// without Tenants), a file a namespace (the file's name), each file a
	// Prometheus-style rule file. RulerInterval is its evaluation interval
	// (default 1m, the ruler's own).
	Rules         map[string]map[string][]byte
	RulerInterval time.Duration
	// Upgraded configures Loki as an install upgraded from 2.x still is:
	// its active schema v12 on boltdb-shipper, a v13 tsdb period to come
	// (in 30 days), and so limits_config.allow_structured_metadata false,
	// which Loki requires there (pkg/loki/validation.go).
	Upgraded bool
}

// client bounds every request to a Loki started here.
var client = &http.Client{Timeout: 30 * time.Second}

// Start runs a Loki until the test ends and waits until it is ready. The
// ports are free when chosen and may be taken before Loki binds them: a
// Loki that cannot bind is started again on others (three tries), and the
// one that answers is proven to be this one (its /config names this
// test's data directory), never another test's on a reused port.
func Start(t testing.TB, opts Options) *Loki {
	t.Helper()
	bin := Binary(t)
	var why string
	for range 3 {
		l, retry, msg := start(t, bin, opts)
		if l != nil {
			return l
		}
		if !retry {
			t.Fatal(msg)
		}
		why = msg
	}
	t.Fatalf("Loki could not bind its ports in three tries:\n%s", why)
	return nil
}

// start runs one Loki: it, or whether another try may succeed and why
// this one failed.
func start(t testing.TB, bin string, opts Options) (*Loki, bool, string) {
	dir := t.TempDir()
	ports := freePorts(t, 2)
	var cfg bytes.Buffer
	limits := opts.Limits
	if opts.Upgraded {
		limits = maps.Clone(limits)
		if limits == nil {
			limits = map[string]string{}
		}
		limits["allow_structured_metadata"] = "false"
	}
	v13From := "2020-10-24"
	if opts.Upgraded {
		v13From = time.Now().UTC().AddDate(0, 0, 30).Format(time.DateOnly) // the period to come
	}
	ruler := ""
	if opts.Rules != nil {
		ruler = cmp.Or(opts.RulerInterval, time.Minute).String()
		for tenant, files := range opts.Rules {
			if err := os.MkdirAll(filepath.Join(dir, "rules", tenant), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, raw := range files {
				if err := os.WriteFile(filepath.Join(dir, "rules", tenant, name), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := config.Execute(&cfg, map[string]any{"HTTP": ports[0], "GRPC": ports[1], "Dir": dir, "Limits": limits, "Tenants": opts.Tenants,
		"Upgraded": opts.Upgraded, "V13From": v13From, "Ruler": ruler}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "loki.yaml")
	if err := os.WriteFile(path, cfg.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "-config.file="+path)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	l := &Loki{URL: "http://127.0.0.1:" + strconv.Itoa(ports[0])}
	for deadline := time.Now().Add(fixture.Patience); ; time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err
			out := logs.String()
			return nil, strings.Contains(out, "address already in use"), fmt.Sprintf("Loki exited before it was ready: %v\n%s", err, out)
		default:
		}
		if ready(l.URL) {
			if ours(l.URL, dir) {
				return l, false, ""
			}
			return nil, true, fmt.Sprintf("another Loki answers on %s, not the one started with %s", l.URL, dir)
		}
		if time.Now().After(deadline) {
			return nil, false, fmt.Sprintf("Loki not ready within %v\n%s", fixture.Patience, logs.Bytes())
		}
	}
}

// ready: /ready answers 200 (it needs no tenant).
func ready(base string) bool {
	resp, err := client.Get(base + "/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// ours: the Loki at base runs on dir, as its /config says.
func ours(base, dir string) bool {
	resp, err := client.Get(base + "/config")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte("path_prefix: "+dir+"\n"))
}

// Push posts body to the push API as tenant ("" sends no X-Scope-OrgID)
// with contentType (application/x-protobuf for snappy protobuf): Loki's
// status and answer.
func (l *Loki) Push(t testing.TB, tenant, contentType string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, l.URL+"/loki/api/v1/push", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	code, answer := do(t, req, tenant)
	return code, string(answer)
}

// Lines are the lines a LogQL log query finds as tenant ("" for none)
// between from and to, at most 5,000, stream by stream.
func (l *Loki) Lines(t testing.TB, tenant, query string, from, to time.Time) []string {
	t.Helper()
	return l.LinesUpTo(t, tenant, query, from, to, 5000)
}

// LinesUpTo is Lines with another limit (Loki's max_entries_limit_per_query
// bounds it, 5,000 by default).
func (l *Loki) LinesUpTo(t testing.TB, tenant, query string, from, to time.Time, limit int) []string {
	t.Helper()
	q := url.Values{"query": {query}, "start": {strconv.FormatInt(from.UnixNano(), 10)},
		"end": {strconv.FormatInt(to.UnixNano(), 10)}, "limit": {strconv.Itoa(limit)}, "direction": {"forward"}}
	code, b := l.get(t, tenant, "/loki/api/v1/query_range", q)
	var r struct {
		Data struct {
			Result []struct {
				Values [][2]string `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil || code != http.StatusOK {
		t.Fatalf("%s: %d %s", query, code, b)
	}
	var lines []string
	for _, s := range r.Data.Result {
		for _, v := range s.Values {
			lines = append(lines, v[1])
		}
	}
	return lines
}

// Sample is one series of an instant metric query's answer.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Stats are the lines and bytes Loki says it processed for a query (its
// statistics' summary).
type Stats struct{ Lines, Bytes int64 }

// Instant runs an instant LogQL metric query as tenant ("" for none) at
// at (the zero time: now): its series and what Loki processed for it.
func (l *Loki) Instant(t testing.TB, tenant, query string, at time.Time) ([]Sample, Stats) {
	t.Helper()
	q := url.Values{"query": {query}}
	if !at.IsZero() {
		q.Set("time", strconv.FormatInt(at.UnixNano(), 10))
	}
	code, b := l.get(t, tenant, "/loki/api/v1/query", q)
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
			Stats struct {
				Summary struct {
					TotalLinesProcessed int64 `json:"totalLinesProcessed"`
					TotalBytesProcessed int64 `json:"totalBytesProcessed"`
				} `json:"summary"`
			} `json:"stats"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil || code != http.StatusOK {
		t.Fatalf("%s: %d %s", query, code, b)
	}
	out := make([]Sample, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			t.Fatalf("%s: value %v: %v", query, s.Value[1], err)
		}
		out = append(out, Sample{Metric: s.Metric, Value: v})
	}
	return out, Stats{r.Data.Stats.Summary.TotalLinesProcessed, r.Data.Stats.Summary.TotalBytesProcessed}
}

// get asks path with q as tenant ("" for none): the status and the body.
func (l *Loki) get(t testing.TB, tenant, path string, q url.Values) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, l.URL+path+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req, tenant)
}

// do sends req as tenant ("" for none): the status and the body.
func do(t testing.TB, req *http.Request, tenant string) (int, []byte) {
	t.Helper()
	if tenant != "" {
		req.Header.Set("X-Scope-OrgID", tenant)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b
}

// freePorts are n loopback ports free now.
func freePorts(t testing.TB, n int) []int {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Alert is one alert of Loki's ruler, as its alerts API reports it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

// Alerts are the ruler's pending and firing alerts for tenant ("" for
// none), from its Prometheus-compatible API.
func (l *Loki) Alerts(t testing.TB, tenant string) []Alert {
	t.Helper()
	code, b := l.get(t, tenant, "/prometheus/api/v1/alerts", nil)
	var r struct {
		Data struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil || code != http.StatusOK {
		t.Fatalf("alerts: %d %s", code, b)
	}
	return r.Data.Alerts
}

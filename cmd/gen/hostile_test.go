package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/grafana/alloy/syntax/ast"
	"github.com/grafana/alloy/syntax/parser"
	"github.com/grafana/alloy/syntax/printer"
	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/gen/exporters"
	"github.com/winobs/winobs/internal/testkit/kubecheck"

	promparser "github.com/prometheus/prometheus/promql/parser"
)

// genWith runs gen with a config file holding body and returns the exit
// code, stderr and the output directory (absent unless the run succeeded).
func genWith(t *testing.T, body string) (int, string, string, string) {
	t.Helper()
	// Every agent rendered, the shipper included (off by default), so a
	// value reaches every artifact it can; appended, so no line moves.
	if !regexp.MustCompile(`(?m)^shipper:`).MatchString(body) {
		body += "shipper: {deploy: true}\n"
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hostile.yaml")
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--config", cfg, "--out", out}, &stdout, &stderr)
	return code, stderr.String(), out, cfg
}

// Rows of the hostile-config report (issue 10), each refused with exit 2 at
// the file, line and field, writing nothing.
func TestHostileConfigsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"PowerShell through an IPv6 zone", "windowsExporter:\n  firewall:\n    allowFrom: [\"fe80::1%'+(New-LocalUser evil -NoPassword)+'\"]\n",
			":3: windowsExporter.firewall.allowFrom[0]: must be an IP address or CIDR"},
		{"channels whose labels collide", "eventLog:\n  channels:\n    - {name: éé, levels: [1]}\n    - {name: èè, levels: [1]}\n",
			":4: eventLog.channels[1].name: \"éé\" and \"èè\" both become the Alloy component"},
		{"credentials in the Loki URL", "loki:\n  url: https://bob:secret@loki.example.com/loki/api/v1/push\n",
			":2: loki.url: must not carry credentials"},
		{"cluster label job", "cluster: {label: job, name: a}\n", ":1: cluster.label: \"job\" is a label winobs"},
		{"cluster label node", "cluster: {label: node, name: a}\n", ":1: cluster.label: \"node\" is a label"},
		{"cluster label __name__", "cluster: {label: __name__, name: a}\n", ":1: cluster.label: \"__name__\" is a label"},
		{"cluster label channel", "cluster: {label: channel, name: a}\n", ":1: cluster.label: \"channel\" is a label"},
		{"Go template in the runbook URL", "alerts:\n  runbookURL: 'https://x.example/{{ with query \"up\" }}{{ . }}{{ end }}'\n",
			":2: alerts.runbookURL: must not contain spaces, quotes, braces"},
		{"label value with spaces in ruleLabels", "prometheus:\n  ruleLabels: {release: \"has space and : colon\"}\n",
			":2: prometheus.ruleLabels.release: invalid Kubernetes label value"},
		{"bad label key prefix", "windowsExporter:\n  monitorLabels: {\"a..b/x\": y}\n",
			":2: windowsExporter.monitorLabels[\"a..b/x\"]: invalid Kubernetes label key"},
		{"bad value under a prefixed key", "prometheus:\n  ruleLabels: {example.com/team: \"a b\"}\n",
			":2: prometheus.ruleLabels[\"example.com/team\"]: invalid Kubernetes label value"},
		{"node selector value", "nodes:\n  selector: {kubernetes.io/os: \"win dows\"}\n", ":2: nodes.selector[\"kubernetes.io/os\"]: invalid Kubernetes label value"},
		{"sidecar label value", "dashboards:\n  sidecarLabelValue: \"has space\"\n", ":2: dashboards.sidecarLabelValue: invalid Kubernetes label value"},
		{"toleration Exists with a value", "nodes:\n  tolerations:\n    - {key: os, operator: Exists, value: windows}\n", ":3: nodes.tolerations[0].value: must be empty"},
		{"toleration empty key with Equal", "nodes:\n  tolerations:\n    - {operator: Equal, value: x}\n", ":3: nodes.tolerations[0].operator: must be Exists when key is empty"},
		{"infinite ratio", "alerts:\n  nodeOvercommit: {commitToPhysical: .inf}\n", ":2: alerts.nodeOvercommit.commitToPhysical: must be"},
		{"alert hold of 292 years", "alerts:\n  nodeCommit: {for: 292y}\n", ":2: alerts.nodeCommit.for: must be between 0s and 1w"},
		{"scrape interval of 292 years", "windowsExporter:\n  scrapeInterval: 292y\n", ":2: windowsExporter.scrapeInterval: must be between 1s and 2m30s"},
		{"control characters in a label value", "cluster:\n  name: \"a\\nb\"\n", ":2: cluster.name: must not contain control characters"},
		{"an image with a shell command", "shipper:\n  image: \"evil; rm -rf /\"\n", ":2: shipper.image: must be an image reference"},
		{"a path that breaks out of its argument", "alloy:\n  storagePath: 'C:\\x\" --config.file=D:\\evil'\n", ":2: alloy.storagePath: must be an absolute Windows path"},
		{"a secret file that is a relative path", "loki:\n  bearerTokenFile: ../../token\n", ":2: loki.bearerTokenFile: must be an absolute Windows path"},
		{"requests above limits", "shipper:\n  resources:\n    requests: {memory: 1Gi}\n    limits: {memory: 128Mi}\n", ":3: shipper.resources.requests.memory: must not exceed"},
		{"alias bomb", aliasBomb(), ":1: the document expands to more than"},
		{"an absolute dashboards folder", "dashboards:\n  folder: /etc/grafana\n", ":2: dashboards.folder: must be a folder name, not a path"},
		{"a dashboards folder climbing out", "dashboards:\n  folder: \"Windows/../../etc\"\n", ":2: dashboards.folder: must be a folder name, not a path"},
		{"a dashboards folder on a drive", "dashboards:\n  folder: 'C:\\ProgramData'\n", ":2: dashboards.folder: must be a folder name, not a path"},
		{"a listen address with a zone (the probe URL would not parse)", "shipper:\n  listen: \"[::1%lo]:9498\"\n", ":2: shipper.listen: must be a loopback address:port"},
		{"an API host with a newline", "apiServer:\n  host: \"api.example\\r\\nX: 1\"\n", ":2: apiServer.host: must be a DNS name"},
		{"an API host with URL syntax", "apiServer:\n  host: \"evil.example/?#@x\"\n", ":2: apiServer.host: must be a DNS name"},
		{"an API host with DEL", "apiServer:\n  host: \"api\\x7f.example\"\n", ":2: apiServer.host: must be a DNS name"},
		{"a pull secret that is not a name", "pods:\n  imagePullSecrets: [\"ghcr pull\"]\n", ":2: pods.imagePullSecrets[0]: must be a Secret name"},
		{"a priority class with a slash", "pods:\n  priorityClassName: a/b\n", ":2: pods.priorityClassName: must be a PriorityClass name"},
		{"a pod label taking winobs's selector", "pods:\n  labels: {app.kubernetes.io/name: x}\n", ":2: pods.labels[\"app.kubernetes.io/name\"]: app.kubernetes.io/ labels are winobs's own"},
		{"an annotation with ESC", "pods:\n  annotations: {a: \"\\e[31m\"}\n", ":2: pods.annotations.a: must be UTF-8 text without control characters"},
		{"a Secret mounted that nothing reads", "lokiSecret: {name: loki-creds}\n", ":1: lokiSecret.name: is mounted at"},
		{"a credential file in the mount without a Secret", "loki:\n  url: https://l.example/loki/api/v1/push\n  bearerTokenFile: 'C:\\var\\run\\secrets\\winobs\\loki\\token'\n",
			":3: loki.bearerTokenFile: is under lokiSecret.mountPath"},
		{"a Secret name with a slash", "lokiSecret: {name: a/b}\n", ":1: lokiSecret.name: must be a Secret name"},
		{"Kubernetes' reason is printed whole", "namespace: Bad_NS\n", ":1: namespace: must be a DNS-1123 label, got \"Bad_NS\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
		{"an endpoint reason is printed whole", "cluster:\n  name: \"a\\x01b\"\n", ":2: cluster.name: must not contain control characters (newlines, tabs, NUL), got \"a\\x01b\""},
		{"an empty dashboard tag", "dashboards:\n  tags: [\"\"]\n", ":2: dashboards.tags[0]: must not be empty"},
		{"two fields that must agree, one set by the file", "windowsExporter:\n  services: [hns]\n", ":2: alerts.nodeServices.services[0]: \"kubelet\" is not in windowsExporter.services"},
		{"a 200 KB API host", "apiServer:\n  host: " + strings.Repeat("a", 200<<10) + ".example\n", ":2: apiServer.host: must be a DNS name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr, out, cfg := genWith(t, tc.body)
			if code != 2 || !strings.Contains(stderr, cfg+tc.want) {
				t.Errorf("exit %d, want 2 and %q in:\n%s", code, cfg+tc.want, stderr)
			}
			if strings.Contains(stderr, ":secret@") {
				t.Errorf("the password reached the error message:\n%s", stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Error("a refused config wrote output")
			}
		})
	}
}

// A valid config whose render holds an object over the API server's 1 MiB
// limit (thousands of event log channels in Alloy's ConfigMap) exits 2
// naming the object, and writes nothing.
func TestObjectsOverTheAPIServerLimitAreRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("eventLog:\n  channels:\n")
	for i := range 2500 {
		fmt.Fprintf(&b, "    - {name: Microsoft-Windows-%s-%04d/Operational, levels: [1]}\n", strings.Repeat("Example", 20), i)
	}
	code, stderr, out, _ := genWith(t, b.String())
	if code != 2 || !strings.Contains(stderr, "ConfigMap") || !strings.Contains(stderr, "1 MiB object limit") {
		t.Errorf("exit %d:\n%.600s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a refused render wrote output")
	}
}

// gen --config on a FIFO answers at once (opening it would wait for a
// writer forever).
func TestConfigFIFOIsRefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config.yaml")
	if err := fixture.Mkfifo(fifo); err != nil {
		t.Skip(err)
	}
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run([]string{"--config", fifo, "--out", filepath.Join(t.TempDir(), "out")}, io.Discard, &stderr)
	}()
	select {
	case code := <-done:
		if code != 2 || !strings.Contains(stderr.String(), "not a regular file") {
			t.Errorf("exit %d:\n%s", code, stderr.String())
		}
	case <-time.After(fixture.Patience):
		t.Fatal("gen --config on a FIFO blocked")
	}
}

func aliasBomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// Inputs no config should be read from: refused at once with exit 2, never
// read whole.
func TestUnreadableConfigs(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(big, bytes.Repeat([]byte("# padding\n"), 120_000), 0o644)
	for path, want := range map[string]string{
		"/dev/zero": "not a regular file",
		big:         "larger than 1048576 bytes",
		filepath.Join(t.TempDir(), "missing.yaml"): "no such file",
		t.TempDir(): "not a regular file",
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"--config", path, "--out", filepath.Join(t.TempDir(), "out")}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), want) || len(stderr.String()) > 2000 {
			t.Errorf("%s: exit %d, want 2 and %q:\n%.2000s", path, code, want, stderr.String())
		}
	}
}

// hostileStrings are values a hostile or careless user might put anywhere.
var hostileStrings = []string{
	`'; Remove-Item C:\ -Recurse; '`,
	`"} evil = "x`,
	`{{ with query "up" }}{{ . }}{{ end }}`,
	`$(whoami)`,
	`${NODE_NAME}`,
	`eu$1`,
	`a"b}c`,
	"tab\there",
	"line\nbreak",
	"\u202eevil",
	`fe80::1%eth0`,
	`C:\x" --evil`,
	`example.com/team`,
	`héllo wörld`,
	strings.Repeat("x", 300),
	// Grafana's variable syntax, paths the sidecar joins, API-host syntax.
	`$instance`,
	`[[pod]]`,
	`${__user.login}`,
	`../../etc`,
	`/etc/grafana`,
	"del\x7f",
	`[::1%lo]:9498`,
}

// For every string field that reaches another language, every hostile
// string either is refused (exit 2, located at the file's line and field) or
// renders artifacts that all parse in their own language (Alloy, YAML and
// the API server's rules, JSON, PromQL, PowerShell as a constant) and carry
// the value exactly where it is used as data.
func TestHostileStringsPerTarget(t *testing.T) {
	checker, err := kubecheck.New(filepath.Join("..", "..", "testdata", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	fields := []struct {
		path    string
		yaml    func(v string) string
		carried func(t *testing.T, out, v string)
	}{
		{"cluster.name", func(v string) string { return "cluster:\n  name: " + quote(v) + "\n" }, func(t *testing.T, out, v string) {
			alloyAttrHas(t, out, "external_labels", strconv.Quote(v))
			if got := shipperLabels(t, out)["cluster"]; got != v {
				t.Errorf("the shipper reads cluster %q, want %q", got, v)
			}
		}},
		{"logs.eventsJob", func(v string) string { return "logs:\n  eventsJob: " + quote(v) + "\n" }, func(t *testing.T, out, v string) {
			if got := shipperLabels(t, out)["job"]; got != v {
				t.Errorf("the shipper reads job %q, want %q", got, v)
			}
		}},
		{"windowsExporter.job", func(v string) string { return "windowsExporter:\n  job: " + quote(v) + "\n" }, nil},
		{"loki.tenant", func(v string) string { return "loki:\n  tenant: " + quote(v) + "\n" }, func(t *testing.T, out, v string) {
			alloyAttrHas(t, out, "tenant_id", strconv.Quote(v))
		}},
		{"dashboards.folder", func(v string) string { return "dashboards:\n  folder: " + quote(v) + "\n" }, nil},
		{"eventLog.channels[0].name", func(v string) string {
			return "eventLog:\n  channels:\n    - {name: " + quote(v) + ", levels: [1]}\n"
		}, func(t *testing.T, out, v string) { alloyAttrHas(t, out, "eventlog_name", strconv.Quote(v)) }},
		// A filter's values reach the query both agents run (an XPath, or
		// XML): what is accepted is written there as it is.
		{"eventLog.channels[0].providers[0]", func(v string) string {
			return "eventLog:\n  channels:\n    - {name: System, providers: [" + quote(v) + "]}\n"
		}, func(t *testing.T, out, v string) { alloyAttrHas(t, out, "xpath_query", "@Name='"+v+"'") }},
		{"eventLog.channels[0].events[0]", func(v string) string {
			return "eventLog:\n  channels:\n    - {name: System, events: [" + quote(v) + "]}\n"
		}, nil},
		{"eventLog.channels[0].keywords[0]", func(v string) string {
			return "eventLog:\n  channels:\n    - {name: System, keywords: [" + quote(v) + "]}\n"
		}, nil},
		{"alloy.storagePath", func(v string) string { return "alloy:\n  storagePath: " + quote(v) + "\n" }, nil},
		{"alerts.runbookURL", func(v string) string { return "alerts:\n  runbookURL: " + quote("https://x.example/"+v) + "\n" }, nil},
		{"windowsExporter.firewall.allowFrom[0]", func(v string) string {
			return "windowsExporter:\n  firewall:\n    allowFrom: [" + quote(v) + "]\n"
		}, nil},
		{"namespace", func(v string) string { return "namespace: " + quote(v) + "\n" }, nil},
		{"prometheus.ruleLabels.team", func(v string) string { return "prometheus:\n  ruleLabels: {team: " + quote(v) + "}\n" }, nil},
		{"ruler.namespacePrefix", func(v string) string { return "ruler:\n  namespacePrefix: " + quote(v) + "\n" }, nil},
	}
	// Every other text field of the config, found by reflection: a field
	// added later is covered without a line here.
	listed := map[string]bool{}
	for _, f := range fields {
		listed[f.path] = true
	}
	for _, f := range textFields(reflect.TypeOf(config.Config{}), "") {
		if !listed[f.path] {
			fields = append(fields, struct {
				path    string
				yaml    func(v string) string
				carried func(t *testing.T, out, v string)
			}{f.path, f.yaml, nil})
		}
	}
	var accepted, refused atomic.Int32
	defer func() {
		t.Logf("%d fields: %d hostile values accepted and parsed back, %d refused", len(fields), accepted.Load(), refused.Load())
	}()
	for _, f := range fields {
		for i, v := range hostileStrings {
			t.Run(fmt.Sprintf("%s/%d", f.path, i), func(t *testing.T) {
				code, stderr, out, cfg := genWith(t, f.yaml(v))
				switch code {
				case 2:
					refused.Add(1)
					// At the field, or at a sibling the value made necessary
					// (a toleration's operator, basic auth's password file).
					parent := f.path[:max(strings.LastIndexAny(f.path, ".["), 0)]
					loc := regexp.MustCompile(regexp.QuoteMeta(cfg) + `:\d+: ` + regexp.QuoteMeta(parent))
					if !loc.MatchString(stderr) {
						t.Errorf("refused %q without file:line: %s:\n%s", v, f.path, stderr)
					}
				case 0:
					accepted.Add(1)
					artifactsParse(t, checker, out)
					if f.carried != nil {
						f.carried(t, out, v)
					}
				default:
					t.Errorf("exit %d for %q:\n%s", code, v, stderr)
				}
			})
		}
	}
}

// textField is a config field that holds text, and the YAML document that
// sets it to a value.
type textField struct {
	path string
	yaml func(v string) string
}

// textFields walks the config type for every field that holds text: plain
// strings, items of string lists, keys and values of string maps, and the
// text fields of the first item of a list of structs.
func textFields(t reflect.Type, path string) []textField {
	nest := func(path, leaf string) func(string) string {
		return func(v string) string {
			segs := strings.Split(path, ".")
			var b strings.Builder
			for i, s := range segs {
				b.WriteString(strings.Repeat("  ", i) + s + ":")
				if i < len(segs)-1 {
					b.WriteString("\n")
				}
			}
			return b.String() + " " + strings.ReplaceAll(leaf, "V", quote(v)) + "\n"
		}
	}
	var out []textField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" {
			out = append(out, textFields(f.Type, path)...)
			continue
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		switch ft := f.Type; {
		case ft.Kind() == reflect.String:
			out = append(out, textField{p, nest(p, "V")})
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			out = append(out, textField{p + "[0]", nest(p, "[V]")})
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.String:
			out = append(out, textField{p + ".k", nest(p, "{k: V}")}, textField{p, nest(p, "{V: v}")})
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			for _, sub := range textFields(ft.Elem(), "") {
				first := p + "[0]." + sub.path
				subYAML := sub.yaml
				out = append(out, textField{first, func(v string) string {
					// The item's document, indented under "- " at the list's depth.
					lines := strings.Split(strings.TrimSuffix(subYAML(v), "\n"), "\n")
					depth := strings.Count(p, ".") + 1
					for j := range lines {
						lines[j] = strings.Repeat("  ", depth) + map[bool]string{true: "- ", false: "  "}[j == 0] + lines[j]
					}
					return nest(p, "")(v) + strings.Join(lines, "\n") + "\n"
				}})
			}
		case ft.Kind() == reflect.Struct:
			out = append(out, textFields(ft, p)...)
		}
	}
	return out
}

func quote(v string) string { return strconv.Quote(v) }

// artifactsParse reads every rendered file back in its own language.
func artifactsParse(t *testing.T, checker *kubecheck.Checker, out string) {
	t.Helper()
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		switch {
		case strings.HasSuffix(p, ".alloy"):
			if _, err := parser.ParseFile(p, b); err != nil {
				t.Errorf("%s does not parse: %v", rel, err)
			}
		case strings.HasSuffix(p, ".json"):
			if !json.Valid(b) {
				t.Errorf("%s is not JSON", rel)
			}
		case strings.HasPrefix(rel, "rules/") || strings.HasPrefix(rel, "ruler/mimir/"):
			var g struct {
				Groups []struct{ Rules []struct{ Expr string } }
			}
			if err := yaml.Unmarshal(b, &g); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
			for _, gr := range g.Groups {
				for _, r := range gr.Rules {
					if _, err := promparser.NewParser(promparser.Options{}).ParseExpr(r.Expr); err != nil {
						t.Errorf("%s: %q: %v", rel, r.Expr, err)
					}
				}
			}
		case strings.HasSuffix(p, ".yaml") && !strings.HasPrefix(rel, "loki-rules/") && !strings.HasPrefix(rel, "ruler/loki/") && rel != "kustomization.yaml":
			for _, doc := range kubecheck.Split(b) {
				for _, e := range checker.Document(doc) {
					t.Errorf("%s: %s", rel, e)
				}
				if strings.Contains(string(doc), "configure-firewall") && !strings.Contains(string(doc), yamlLine(exporters.FirewallScript)) {
					t.Errorf("%s: the firewall script is not the constant one", rel)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// yamlLine is the first line of s, as it appears in a YAML block scalar.
func yamlLine(s string) string { first, _, _ := strings.Cut(s, "\n"); return first }

// alloyAttrHas checks that an attribute somewhere in config.alloy holds want
// (the printed Alloy string literal of the value).
func alloyAttrHas(t *testing.T, out, name, want string) {
	t.Helper()
	for _, v := range alloyAttrs(t, out, name) {
		var buf bytes.Buffer
		printer.Fprint(&buf, v)
		if strings.Contains(buf.String(), want) {
			return
		}
	}
	t.Errorf("no %s attribute carries %s", name, want)
}

// alloyAttrs are the values of every attribute name in the rendered
// config.alloy, read by Alloy's own parser.
func alloyAttrs(t *testing.T, out, name string) []ast.Expr {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "alloy", "config.alloy"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile("config.alloy", b)
	if err != nil {
		t.Fatal(err)
	}
	var vals []ast.Expr
	ast.Walk(visitor(func(n ast.Node) {
		if a, ok := n.(*ast.AttributeStmt); ok && a.Name.Name == name {
			vals = append(vals, a.Value)
		}
	}), f)
	return vals
}

type visitor func(ast.Node)

func (v visitor) Visit(n ast.Node) ast.Visitor {
	if n != nil {
		v(n)
	}
	return v
}

// shipperLabels loads the rendered shipper config with the shipper's own
// loader, as the node would.
func shipperLabels(t *testing.T, out string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "shipper", "eventlog-shipper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(kubecheck.Split(b)[0], &cm); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "shipper.yaml")
	os.WriteFile(p, []byte(cm.Data["shipper.yaml"]), 0o644)
	t.Setenv("NODE_NAME", "n1")
	sc, err := shipconfig.Load(p)
	if err != nil {
		t.Fatalf("the shipper rejects its rendered config: %v", err)
	}
	return sc.Labels
}

// What users legitimately write still renders, exactly: images pinned by
// digest, prefixed label keys, IPv6 scrapers, channel names with spaces and
// slashes.
func TestLegitimateValuesRender(t *testing.T) {
	digest := "ghcr.io/prometheus-community/windows-exporter@sha256:" + strings.Repeat("ab", 32)
	code, stderr, out, _ := genWith(t, "windowsExporter:\n  image: "+digest+"\n  firewall:\n    allowFrom: [\"2001:db8::/64\", 192.168.10.23/32]\n"+
		"prometheus:\n  ruleLabels: {example.com/team: windows, release: kps}\n"+
		"eventLog:\n  channels:\n    - {name: \"Microsoft-Windows-Windows Defender/Operational\", levels: [1, 2]}\n")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	exp, err := os.ReadFile(filepath.Join(out, "exporters", "windows-exporter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"image: " + digest, "value: 2001:db8::/64,192.168.10.23/32"} {
		if !strings.Contains(string(exp), want) {
			t.Errorf("exporter manifest lacks %q", want)
		}
	}
	rules, _ := os.ReadFile(filepath.Join(out, "prometheus", "winobs-windows-alerts.yaml"))
	if !strings.Contains(string(rules), "example.com/team: windows") {
		t.Error("the prefixed rule label is missing")
	}
	alloyAttrHas(t, out, "eventlog_name", `"Microsoft-Windows-Windows Defender/Operational"`)
}

// Issue 19's mistakes in one file: one run, exit 2, every problem at its
// file:line: path, none against the defaults, no Go types, no YAML tags.
func TestEveryMistakeInOneRun(t *testing.T) {
	body := `namespace: &ns monitoring
eventLog:
  channels: [{name: System, levels: [error]}]
windowsExporter:
  deploy: "yes"
  firewall:
    enabled: "true"
  services: {kubelet: 1}
loki:
  url: http://loki.example.com/loki/api/v1/push?access_token=abc
  bearerTokenFile: C:\token
alloy:
  *ns : x
apiServer:
  host: "evil.example/?#@x"
dashboards:
  folder: ../../etc
shipper:
  listen: "[::1%lo]:9498"
nodes:
  tolerations:
    - {value: windows}
`
	code, stderr, out, cfg := genWith(t, body)
	if code != 2 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{
		`:3: eventLog.channels[0].levels[0]: must be a whole number, not the text "error"`,
		`:5: windowsExporter.deploy: must be true or false, not the text "yes"`,
		`:7: windowsExporter.firewall.enabled: must be true or false without quotes`,
		`:8: windowsExporter.services: must be a list, not a map`,
		`:10: loki.url: must not carry a secret in its query string`,
		`:13: alloy.monitoring: unknown field`,
		`:15: apiServer.host: must be a DNS name`,
		`:17: dashboards.folder: must be a folder name, not a path`,
		`:19: shipper.listen: must be a loopback address:port`,
		`:22: nodes.tolerations[0].operator: must be Equal or Exists`,
	} {
		if !strings.Contains(stderr, cfg+want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, not := range []string{"(default)", "!!", "config.", "map[", "[]string", "must list at least one level", "access_token=abc"} {
		if strings.Contains(stderr, not) {
			t.Errorf("%q in:\n%s", not, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a refused config wrote output")
	}
	if t.Failed() {
		t.Log(stderr)
	}
}

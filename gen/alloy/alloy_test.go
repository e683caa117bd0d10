package alloy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	promrelabel "github.com/prometheus/prometheus/model/relabel"

	"github.com/grafana/alloy/syntax/ast"
	"github.com/grafana/alloy/syntax/parser"
	"github.com/grafana/alloy/syntax/printer"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/nodeagent"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
)

func load(_ *testing.T, mutate func(*config.Config)) *config.Config {
	cfg := config.Default()
	if mutate != nil {
		mutate(cfg)
	}
	return cfg
}

// parsed is config.alloy as Alloy's parser reads it: each block by
// "name.label", each attribute as its printed expression.
type parsed map[string]map[string]string

func parse(t *testing.T, src []byte) parsed {
	t.Helper()
	f, err := parser.ParseFile("config.alloy", src)
	if err != nil {
		t.Fatalf("Alloy cannot parse the generated config: %v\n%s", err, src)
	}
	// The generated text is already in canonical form (what `alloy fmt` prints).
	var canon bytes.Buffer
	if err := printer.Fprint(&canon, f); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(canon.String()) != strings.TrimSpace(string(src)) {
		t.Errorf("config.alloy is not canonically formatted")
	}
	out := parsed{}
	var walk func(prefix string, body ast.Body)
	walk = func(prefix string, body ast.Body) {
		attrs := map[string]string{}
		counts := map[string]int{}
		for _, stmt := range body {
			switch s := stmt.(type) {
			case *ast.AttributeStmt:
				var b bytes.Buffer
				printer.Fprint(&b, s.Value)
				attrs[s.Name.Name] = b.String()
			case *ast.BlockStmt:
				key := strings.Join(s.Name, ".")
				if s.Label != "" {
					key += "." + s.Label
				}
				counts[key]++
				if counts[key] > 1 {
					key += "#" + string(rune('0'+counts[key]))
				}
				walk(strings.TrimPrefix(prefix+"/"+key, "/"), s.Body)
			}
		}
		out[prefix] = attrs
	}
	walk("", f.Body)
	return out
}

func TestConfigPodLogs(t *testing.T) {
	p := parse(t, mustConfig(t, load(t, nil)))
	checks := []struct{ block, attr, want string }{
		{"discovery.kubernetes.pods", "role", `"pod"`},
		// Only this node's pods, by the Node name (not the upper-case hostname).
		{"discovery.kubernetes.pods/selectors", "field", `"spec.nodeName=" + sys.env("NODE_NAME")`},
		{"discovery.relabel.pods", "targets", "discovery.kubernetes.pods.targets"},
		{"discovery.relabel.pods/rule", "target_label", `"namespace"`},
		{"discovery.relabel.pods/rule#2", "target_label", `"pod"`},
		{"discovery.relabel.pods/rule#3", "target_label", `"container"`},
		{"discovery.relabel.pods/rule#4", "target_label", `"app"`},
		{"discovery.relabel.pods/rule#5", "source_labels", `["__meta_kubernetes_pod_node_name"]`},
		{"discovery.relabel.pods/rule#6", "replacement", `"windows-pods"`},
		{"discovery.relabel.pods/rule#7", "target_label", `"__path__"`},
		{"discovery.relabel.pods/rule#7", "separator", `"\\"`},
		{"discovery.relabel.pods/rule#7", "replacement", `"C:\\var\\log\\pods\\*$1\\*.log"`},
		{"local.file_match.pods", "path_targets", "discovery.relabel.pods.output"},
		{"loki.source.file.pods", "forward_to", "[loki.process.pods.receiver]"},
		{"loki.process.pods", "forward_to", "[loki.write.default.receiver]"},
		{"loki.write.default/endpoint", "url", `"http://192.168.10.24:31100/loki/api/v1/push"`},
	}
	for _, c := range checks {
		if got := p[c.block][c.attr]; got != c.want {
			t.Errorf("%s %s = %s, want %s", c.block, c.attr, got, c.want)
		}
	}
	if _, ok := p["loki.process.pods/stage.cri"]; !ok {
		t.Error("no stage.cri in loki.process.pods")
	}
}

// One component per subscription: the config's channels and its sets'
// (System and Security named by both, once each), each with the channel's
// one compiled query.
func TestConfigEventChannels(t *testing.T) {
	cfg := load(t, nil)
	p := parse(t, mustConfig(t, cfg))
	subs, err := cfg.EventLog.Subscriptions()
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, sub := range subs {
		labels = append(labels, sub.ComponentLabel())
	}
	if want := []string{"system", "application", "microsoft_windows_host_network_service_admin", "microsoft_windows_hyper_v_compute_admin", "security"}; !slices.Equal(labels, want) {
		t.Errorf("components %v, want %v", labels, want)
	}
	for _, c := range subs {
		b := p["loki.source.windowsevent."+c.ComponentLabel()]
		want := map[string]string{
			"eventlog_name": strconv.Quote(c.Name),
			"xpath_query":   strconv.Quote(c.Query),
			"locale":        "1033",
			"bookmark_path": `"C:\\var\\lib\\alloy\\bookmarks\\` + c.ComponentLabel() + `.xml"`,
			"forward_to":    "[loki.process.events.receiver]",
		}
		for k, v := range want {
			if b[k] != v {
				t.Errorf("%s %s = %s, want %s", c.ComponentLabel(), k, b[k], v)
			}
		}
		if !strings.Contains(b["labels"], `job  = "windows-events"`) || !strings.Contains(b["labels"], `node = sys.env("NODE_NAME")`) {
			t.Errorf("%s labels = %s", c.ComponentLabel(), b["labels"])
		}
	}
}

// Credentials are file references; tenant, CA and the cluster label follow
// the config.
func TestConfigLokiWrite(t *testing.T) {
	p := parse(t, mustConfig(t, load(t, func(c *config.Config) {
		c.Loki.URL = "https://loki.example.com/loki/api/v1/push"
		c.Loki.Tenant = "windows"
		c.Loki.BasicAuth = config.BasicAuth{Username: "winobs", PasswordFile: `C:\etc\winobs\loki-password`}
		c.Loki.CAFile = `C:\etc\winobs\ca.pem`
		c.Cluster.Name = "lab"
	})))
	ep := p["loki.write.default/endpoint"]
	if ep["tenant_id"] != `"windows"` {
		t.Errorf("tenant_id = %s", ep["tenant_id"])
	}
	if got := p["loki.write.default/endpoint/basic_auth"]; got["password_file"] != `"C:\\etc\\winobs\\loki-password"` || got["password"] != "" {
		t.Errorf("basic_auth = %v", got)
	}
	if got := p["loki.write.default/endpoint/tls_config"]["ca_file"]; got != `"C:\\etc\\winobs\\ca.pem"` {
		t.Errorf("ca_file = %s", got)
	}
	if got := p["loki.write.default"]["external_labels"]; !strings.Contains(got, `cluster = "lab"`) {
		t.Errorf("external_labels = %s", got)
	}
}

func mustConfig(t *testing.T, cfg *config.Config) []byte {
	t.Helper()
	b, err := Config(view.Of(cfg).Alloy)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every channel gets a component whose label is an Alloy identifier, even
// when the name starts with a digit (which once rendered an empty file).
func TestComponentLabel(t *testing.T) {
	for in, want := range map[string]string{
		"System": "system", "Microsoft-Windows-Windows Defender/Operational": "microsoft_windows_windows_defender_operational",
		"123": "_123", "7zip/Log": "_7zip_log", "": "_", "Été": "_t_",
	} {
		if got := (config.Channel{Name: in}).ComponentLabel(); got != want {
			t.Errorf("ComponentLabel(%q) = %q, want %q", in, got, want)
		}
	}
	p := parse(t, mustConfig(t, load(t, func(c *config.Config) {
		c.EventLog.Channels = []config.Channel{{Name: "123", Filter: eventfilter.Filter{Levels: []int{1}}}, {Name: "Setup", Filter: eventfilter.Filter{Levels: []int{2}}}}
	})))
	for _, label := range []string{"_123", "setup"} {
		if p["loki.source.windowsevent."+label] == nil {
			t.Errorf("no component loki.source.windowsevent %q in %v", label, p)
		}
	}
}

// A job value reaches Alloy's relabel replacement, which expands $1, ${x}
// and $$: it is escaped so Prometheus' relabel semantics (Alloy's) give the
// value back exactly.
func TestPodLogsJobIsLiteral(t *testing.T) {
	for _, job := range []string{"windows-pods", "eu$1", "$JOB", "${1}x", "a$$b"} {
		c := load(t, nil)
		c.Logs.PodLogsJob = job
		p := parse(t, mustConfig(t, c))
		quoted := p["discovery.relabel.pods/rule#6"]["replacement"]
		repl, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("%s: %v", quoted, err)
		}
		cfg := &promrelabel.Config{Action: promrelabel.Replace, TargetLabel: "job", Replacement: repl, Regex: promrelabel.MustNewRegexp("(.*)"),
			Separator: ";", NameValidationScheme: model.UTF8Validation}
		lb := labels.NewBuilder(labels.FromStrings("__meta_x", "y"))
		promrelabel.ProcessBuilder(lb, cfg)
		if v := lb.Labels().Get("job"); v != job {
			t.Errorf("job %q: the relabel rule yields %q", job, v)
		}
	}
}

// The ConfigMap holds config.alloy indented with spaces, so the encoded
// object shows it as a literal block; Alloy's parser and printer read it
// back to exactly config.alloy, with every hostile channel name too.
func TestConfigMapHoldsTheSameConfigReadably(t *testing.T) {
	for _, channels := range [][]string{{"System"}, {"Microsoft-Windows-Hyper-V-Worker-Admin", "Application", "éé"}} {
		cfg := config.Default()
		cfg.EventLog.Channels = nil
		for _, ch := range channels {
			cfg.EventLog.Channels = append(cfg.EventLog.Channels, config.Channel{Name: ch, Filter: eventfilter.Filter{Levels: []int{1, 2}}})
		}
		files, err := Files(view.Of(cfg).Alloy)
		if err != nil {
			t.Fatal(err)
		}
		conf := files[0].Raw
		var cm *corev1.ConfigMap
		for _, o := range files[1].Objects {
			if c, ok := o.(*corev1.ConfigMap); ok {
				cm = c
			}
		}
		text := cm.Data["config.alloy"]
		if strings.Contains(text, "\t") {
			t.Errorf("%v: the ConfigMap's config holds a tab", channels)
		}
		f, err := parser.ParseFile("config.alloy", []byte(text))
		if err != nil {
			t.Fatalf("%v: %v", channels, err)
		}
		var back bytes.Buffer
		if err := printer.Fprint(&back, f); err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(back.String()) != strings.TrimSpace(string(conf)) {
			t.Errorf("%v: the ConfigMap's config prints as another config:\n%s", channels, back.String())
		}
		y, err := render.EncodeObjects([]any{cm})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(y), "config.alloy: |") {
			t.Errorf("%v: not a literal block:\n%.400s", channels, y)
		}
	}
}

// The LogMonitor config gen renders asks for what the pod pipeline parses
// (JSON lines), each configured channel at its least severe level, and no
// replay of the whole channel on every container start.
func TestLogMonitorConfigMatchesThePipeline(t *testing.T) {
	raw, err := LogMonitorConfig([]config.Channel{
		{Name: "System", Filter: eventfilter.Filter{Levels: []int{1, 2, 3}}}, {Name: "Application", Filter: eventfilter.Filter{Levels: []int{2}}},
		{Name: "Security", Filter: eventfilter.Filter{Levels: []int{0}}}, {Name: "Microsoft-Windows-DSC/Operational", Filter: eventfilter.Filter{Levels: []int{0, 4}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		LogConfig struct {
			LogFormat string `json:"logFormat"`
			Sources   []struct {
				Type                string `json:"type"`
				StartAtOldestRecord *bool  `json:"startAtOldestRecord"`
				Channels            []struct{ Name, Level string }
			} `json:"sources"`
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	lc := doc.LogConfig
	if lc.LogFormat != "json" || len(lc.Sources) != 1 || lc.Sources[0].Type != "EventLog" ||
		lc.Sources[0].StartAtOldestRecord == nil || *lc.Sources[0].StartAtOldestRecord {
		t.Fatalf("%s", raw)
	}
	var got []string
	for _, ch := range lc.Sources[0].Channels {
		got = append(got, ch.Name+"="+ch.Level)
	}
	if want := []string{"System=Warning", "Application=Error", "Microsoft-Windows-DSC/Operational=Information"}; !slices.Equal(got, want) {
		t.Errorf("channels %v, want %v", got, want)
	}
}

// Alloy's storage path, which holds every bookmark, is closed to other
// accounts by a step that runs before Alloy starts: a bookmark planted there
// would make Alloy skip events (issue 58 #2).
func TestStoragePathClosedBeforeAlloyStarts(t *testing.T) {
	cfg := load(t, func(c *config.Config) { c.Alloy.StoragePath = `D:\alloy-data` })
	v := view.Of(cfg).Alloy
	conf := mustConfig(t, cfg)
	var ds *appsv1.DaemonSet
	for _, o := range Objects(v, conf) {
		if d, ok := o.(*appsv1.DaemonSet); ok {
			ds = d
		}
	}
	pod := ds.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "secure-directories" {
		t.Fatalf("init containers %+v, want the secure-directories step", pod.InitContainers)
	}
	step := pod.InitContainers[0]
	if step.Image != pod.Containers[0].Image || step.Command[len(step.Command)-1] != nodeagent.SecureDirsScript {
		t.Errorf("the step must run the constant script in Alloy's image: %s %q", step.Image, step.Command)
	}
	if !slices.Contains(pod.Containers[0].Args, "--storage.path="+step.Env[0].Value) || step.Env[0].Value != `D:\alloy-data` {
		t.Errorf("the step closes %q; Alloy runs with %q", step.Env[0].Value, pod.Containers[0].Args)
	}
	bookmarks := 0
	for key, attrs := range parse(t, conf) {
		if b, ok := attrs["bookmark_path"]; ok {
			bookmarks++
			if path, err := strconv.Unquote(b); err != nil || !strings.HasPrefix(path, step.Env[0].Value+`\`) {
				t.Errorf("%s keeps its bookmark at %s, outside the closed directory", key, b)
			}
		}
	}
	if bookmarks == 0 {
		t.Error("no bookmark_path found in the config")
	}
}

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "winobs.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultIsTheReferenceLab(t *testing.T) {
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Namespace != "winobs" || !cfg.CreateNamespace || cfg.WindowsExporter.Job != "windows-exporter" ||
		cfg.Prometheus.RuleLabels["release"] != "kps" || cfg.Alerts.NodeCommit.Warning != 0.9 ||
		cfg.Alerts.NodeCommit.Critical != 0.95 || cfg.Alerts.ContainerCommit.Warning != 0.9 {
		t.Errorf("default config drifted from the seed lab: %+v", cfg)
	}
}

func TestOverrideFieldByField(t *testing.T) {
	p := writeConfig(t, `
alerts:
  nodeCommit:
    critical: 0.97
prometheus:
  ruleLabels: {prometheus: main}
`)
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Alerts.NodeCommit.Critical != 0.97 || cfg.Alerts.NodeCommit.Warning != 0.9 || cfg.Alerts.NodeCommit.For != "5m" {
		t.Errorf("nodeCommit = %+v, want critical overridden and the rest kept", cfg.Alerts.NodeCommit)
	}
	// A label map is replaced, not merged: the default selector label must go.
	if len(cfg.Prometheus.RuleLabels) != 1 || cfg.Prometheus.RuleLabels["prometheus"] != "main" {
		t.Errorf("ruleLabels = %v, want exactly {prometheus: main}", cfg.Prometheus.RuleLabels)
	}
}

func TestEmptyFileKeepsDefaults(t *testing.T) {
	if _, err := Load(writeConfig(t, "# nothing to change\n")); err != nil {
		t.Fatal(err)
	}
}

// All problems at once, each with file, line and field path.
func TestProblemsReportedTogether(t *testing.T) {
	p := writeConfig(t, `namespace: Monitoring
alerts:
  nodeCommit:
    warning: 1.5
    for: -5m
  containerCommit:
    warnng: 0.8
  nodeServices:
    services: ["kubelet", "bad name"]
  uncordonedReboot:
    window: 0s
  exporterDown:
    for: soon
windowsExporter:
  job: ""
  scrape: {}
kubeStateMetrics:
  job: [a]
`)
	_, err := Load(p)
	probs, ok := err.(Problems)
	if !ok {
		t.Fatalf("want Problems, got %T %v", err, err)
	}
	want := []string{
		p + ":1: namespace: must be a DNS-1123 label",
		p + ":4: alerts.nodeCommit.warning: must be a ratio above 0 and at most 1",
		p + ":5: alerts.nodeCommit.for: must be a non-negative duration",
		p + `:7: alerts.containerCommit.warnng: unknown field (did you mean "warning"?)`,
		p + `:9: alerts.nodeServices.services[1]: must be a Windows service key name`,
		p + ":11: alerts.uncordonedReboot.window: must be between 1m and 1w",
		p + `:13: alerts.exporterDown.for: must be a non-negative duration such as 30s, 5m or 1h, got "soon"`,
		p + ":15: windowsExporter.job: must not be empty",
		p + ":16: windowsExporter.scrape: unknown field",
		p + ":18: kubeStateMetrics.job: must be text, not a list",
	}
	if len(probs) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(probs), len(want), err)
	}
	for i, w := range want {
		if i >= len(probs) || !strings.HasPrefix(probs[i].Error(), w) {
			t.Errorf("problem %d:\n got  %v\n want %s...", i, probs[i], w)
		}
	}
}

func TestInvalidYAML(t *testing.T) {
	_, err := Load(writeConfig(t, "alerts:\n  nodeCommit: [\n"))
	if err == nil || !strings.Contains(err.Error(), "invalid YAML") {
		t.Fatalf("want an invalid YAML problem, got %v", err)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("want an error naming the file, got %v", err)
	}
}

// The embedded default documents every field: nothing is settable that the
// default does not show. The images come from versions.json, so default.yaml
// names them in a comment only.
func TestDefaultSetsEveryField(t *testing.T) {
	var n yamlNode
	if err := unmarshalNode(DefaultYAML(), &n); err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for path, v := range map[string]string{"windowsExporter.image": Default().WindowsExporter.Image,
		"alloy.image": Default().Alloy.Image, "shipper.image": Default().Shipper.Image} {
		pinned[path] = true
		if v == "" || lookup(n.root(), path) != nil {
			t.Errorf("%s: want it from versions.json only, default %q", path, v)
		}
	}
	for _, path := range fieldPaths(Config{}) {
		if !pinned[path] && lookup(n.root(), path) == nil {
			t.Errorf("default.yaml does not set %s", path)
		}
	}
}

// HostProcess agents live in the node's network: what they cannot reach is
// rejected with the reason, as is an agent port opened to the network.
func TestAgentReachability(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"loki service name":  {"loki:\n  url: http://loki-gateway.monitoring.svc/loki/api/v1/push\n", "loki.url: \"loki-gateway.monitoring.svc\" is a cluster DNS name"},
		"loki cluster.local": {"loki:\n  url: http://loki-gateway.monitoring.svc.cluster.local/loki/api/v1/push\n", "cluster DNS name"},
		"loki service IP":    {"loki:\n  url: http://10.106.213.144/loki/api/v1/push\n", "10.106.213.144 is in the Service CIDR 10.96.0.0/12"},
		"loki query path":    {"loki:\n  url: http://192.168.10.24:31100/loki/api/v1/query\n", "another of Loki's API paths (/loki/api/v1/query)"},
		"api service IP":     {"apiServer:\n  host: 10.96.0.1\n", "apiServer.host: 10.96.0.1 is in the Service CIDR"},
		"api kubernetes":     {"apiServer:\n  host: kubernetes.default.svc\n", "apiServer.host: \"kubernetes.default.svc\" is a cluster DNS name"},
		"alloy open port":    {"alloy:\n  listenAddress: 0.0.0.0:12345\n", "would open Alloy's HTTP server to the node network"},
		"firewall scope":     {"windowsExporter:\n  firewall:\n    allowFrom: [192.168.10.0/33]\n", "allowFrom[0]: must be an IP address or CIDR"},
		"monitor kind":       {"windowsExporter:\n  monitor: ScrapeConfig\n", "must be PodMonitor or ServiceMonitor"},
		"agent":              {"logAgent:\n  default: fluent-bit\n", "logAgent.default: must be alloy or shipper"},
		"level":              {"eventLog:\n  channels:\n    - {name: System, levels: [7]}\n", "eventLog.channels[0].levels[0]: must be a level"},
		"quantity":           {"alloy:\n  resources:\n    limits: {memory: lots}\n", "alloy.resources.limits.memory: must be a positive Kubernetes quantity"},
		"credentials":        {"loki:\n  basicAuth: {username: winobs}\n", "basicAuth needs both username and passwordFile"},
	} {
		_, err := Load(writeConfig(t, tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", name, tc.want, err)
		}
	}
}

// winobs never owns a namespace it did not create: createNamespace is
// refused for Kubernetes' namespaces, kube-prometheus-stack's, Loki's and
// Grafana's by their charts' defaults, and the namespace lokiRules names,
// with the command that labels the namespace instead.
func TestCreateNamespaceNeverOwnsAnotherSystemsNamespace(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{"namespace: monitoring\ncreateNamespace: true\n", false},
		{"createNamespace: true\n", true}, // the default namespace: winobs
		{"namespace: kube-system\ncreateNamespace: true\n", false},
		{"namespace: loki\ncreateNamespace: true\n", false},
		{"namespace: observability\ncreateNamespace: true\nlokiRules: {namespace: observability}\n", false},
		{"namespace: winobs\ncreateNamespace: true\n", true},
		{"namespace: monitoring\ncreateNamespace: false\n", true},
	} {
		_, err := Load(writeConfig(t, tc.body))
		if tc.ok != (err == nil) {
			t.Errorf("%q: %v", tc.body, err)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), "createNamespace: would make winobs own") ||
			!strings.Contains(err.Error(), "kubectl label namespace ") || !strings.Contains(err.Error(), ":1: ") && !strings.Contains(err.Error(), ":2: ")) {
			t.Errorf("%q: %v", tc.body, err)
		}
		// The remedy is a command to run: whole, never cut.
		if ns := strings.Fields(strings.SplitN(tc.body, "\n", 2)[0])[1]; err != nil &&
			!strings.Contains(err.Error(), LabelNamespaceCommand(ns)) {
			t.Errorf("%q: %v", tc.body, err)
		}
	}
}

// Event filters are checked value by value, every problem at its line:
// nothing of a config that fails reaches a query.
func TestEventFilterProblems(t *testing.T) {
	p := writeConfig(t, `eventLog:
  channels:
    - name: Security
      events: ["4625", "4767-4720", "70000", "-4700-4710"]
      providers: ["Evil' or @Name='x"]
      keywords: [audit]
    - name: Setup
  sets: [security, everything]
`)
	_, err := Load(p)
	probs, ok := err.(Problems)
	if !ok {
		t.Fatalf("want Problems, got %T %v", err, err)
	}
	want := []string{
		p + ":4: eventLog.channels[0].events[1]: the range 4767-4720 is backwards",
		p + ":4: eventLog.channels[0].events[2]: must be an event id from 0 to 65535",
		p + ":4: eventLog.channels[0].events[3]: an exclusion is -ID with one id",
		p + `:5: eventLog.channels[0].providers[0]: "Evil' or @Name='x" holds '\''`,
		p + `:6: eventLog.channels[0].keywords[0]: must be audit_success or audit_failure, got "audit"`,
		p + ":7: eventLog.channels[1].levels: list levels, events, providers or keywords",
		p + `:8: eventLog.sets[1]: must be an event set listed once (node-operations or security), got "everything"`,
	}
	if len(probs) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(probs), len(want), err)
	}
	for i, w := range want {
		if i >= len(probs) || !strings.HasPrefix(probs[i].Error(), w) {
			t.Errorf("problem %d:\n got  %v\n want %s...", i, probs[i], w)
		}
	}
}

// The Loki Secret is never mounted where an agent's config is, nor inside
// or around it: two volumeMounts at one path are refused by the API server.
func TestLokiSecretMountAvoidsConfigMounts(t *testing.T) {
	for _, mount := range []string{`C:\etc\alloy`, `c:\ETC\eventlog-shipper\`, `C:\etc\alloy\secrets`, `C:\etc`} {
		_, err := Load(writeConfig(t, "lokiSecret: {name: loki-creds, mountPath: '"+mount+"'}\nloki:\n  allowInsecureCredentials: true\n  bearerTokenFile: '"+strings.TrimSuffix(mount, `\`)+`\token'`+"\n"))
		if err == nil || !strings.Contains(err.Error(), "lokiSecret.mountPath: "+mount+" is where an agent's config is mounted") {
			t.Errorf("mountPath %s: %v", mount, err)
		}
	}
	if _, err := Load(writeConfig(t, "lokiSecret: {name: loki-creds, mountPath: 'C:\\var\\run\\secrets\\loki'}\nloki:\n  allowInsecureCredentials: true\n  bearerTokenFile: 'C:\\var\\run\\secrets\\loki\\token'\n")); err != nil {
		t.Errorf("a mount of its own: %v", err)
	}
}

// A channel named like a Windows device, or ending in a dot or a space, is
// refused at its line (issue 51: NUL, con, COM1 and LPT9.log rendered), as
// is a Windows path with such a directory; every one is reported at once.
func TestWindowsDeviceNamesRefused(t *testing.T) {
	p := writeConfig(t, `eventLog:
  channels:
    - {name: NUL, levels: [2]}
    - {name: con, levels: [2]}
    - {name: COM1, levels: [2]}
    - {name: LPT9.log, levels: [2]}
    - {name: "Application.", levels: [2]}
    - {name: "System ", levels: [2]}
    - {name: Microsoft-Windows-Sysmon/Operational, levels: [2]}
    - {name: "NULL", levels: [2]}
shipper:
  stateDir: 'C:\var\lib\AUX\winobs'
  textfileDir: 'C:\var\lib\textfile.'
`)
	_, err := Load(p)
	probs, ok := err.(Problems)
	if !ok {
		t.Fatalf("want Problems, got %T %v", err, err)
	}
	want := []string{
		p + `:3: eventLog.channels[0].name: "NUL" names the Windows device NUL`,
		p + `:4: eventLog.channels[1].name: "con" names the Windows device CON`,
		p + `:5: eventLog.channels[2].name: "COM1" names the Windows device COM1`,
		p + `:6: eventLog.channels[3].name: "LPT9.log" names the Windows device LPT9`,
		p + `:7: eventLog.channels[4].name: "Application." ends in a dot or a space`,
		p + `:8: eventLog.channels[5].name: "System " ends in a dot or a space`,
		p + `:12: shipper.stateDir: "C:\\var\\lib\\AUX\\winobs": "AUX" names the Windows device AUX`,
		p + `:13: shipper.textfileDir: "C:\\var\\lib\\textfile.": "textfile." ends in a dot or a space`,
	}
	if len(probs) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(probs), len(want), err)
	}
	for i, w := range want {
		if i >= len(probs) || !strings.HasPrefix(probs[i].Error(), w) {
			t.Errorf("problem %d:\n got  %v\n want %s...", i, probs[i], w)
		}
	}
}

// Only winobs's own namespace is created by default (issue 51: `gen init
// --namespace observability` made kube-prometheus-stack's namespace
// privileged and an uninstall would have deleted it). A namespace the file
// names is shared unless the file writes createNamespace: true; the render
// then says what the namespace needs, with the cost.
func TestOnlyOurNamespaceIsCreatedByDefault(t *testing.T) {
	for _, tc := range []struct {
		body   string
		create bool
		warned bool
	}{
		{"", true, false},
		{"namespace: winobs\n", true, false},
		{"namespace: observability\n", false, true},
		{"namespace: monitoring\n", false, true},
		{"namespace: observability\ncreateNamespace: true\n", true, false},
		{"namespace: observability\ncreateNamespace: false\n", false, false},
		{"createNamespace: false\n", false, false},
	} {
		path := ""
		if tc.body != "" {
			path = writeConfig(t, tc.body)
		}
		c, warnings, err := Read(path)
		if err != nil {
			t.Fatalf("%q: %v", tc.body, err)
		}
		if c.CreateNamespace != tc.create {
			t.Errorf("%q: createNamespace %v, want %v", tc.body, c.CreateNamespace, tc.create)
		}
		warned := false
		for _, w := range warnings {
			if w.Path == "namespace" {
				warned = true
				if w.Line != 1 || !strings.Contains(w.Msg, LabelNamespaceCommand(c.Namespace)) || !strings.Contains(w.Msg, "admits any privileged pod") {
					t.Errorf("%q: %v", tc.body, w)
				}
			}
		}
		if warned != tc.warned {
			t.Errorf("%q: warned %v, want %v (%v)", tc.body, warned, tc.warned, warnings)
		}
	}
}

// Loki's base URL, as users copy it (issue 51), reaches the agents as the
// push endpoint; the push endpoint itself is kept as written.
func TestLokiBaseURLBecomesThePushEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://loki.example.org":                       "https://loki.example.org/loki/api/v1/push",
		"https://gw.example.org/tenant-a/":               "https://gw.example.org/tenant-a/loki/api/v1/push",
		"https://loki.example.org:8443/loki/api/v1/push": "https://loki.example.org:8443/loki/api/v1/push",
	} {
		c, err := Load(writeConfig(t, "loki:\n  url: "+in+"\n"))
		if err != nil {
			t.Errorf("%s: %v", in, err)
		} else if c.Loki.URL != want {
			t.Errorf("%s: %s, want %s", in, c.Loki.URL, want)
		}
	}
}

// Issue 58: a mistyped IPv4 address was taken as a DNS name and became the
// agents' KUBERNETES_SERVICE_HOST; the node's own address was taken
// without a word. The first is refused, the second warned, at the line.
func TestHostsMistypedOrNodeLocal(t *testing.T) {
	for _, bad := range []string{"10.0.0.256", "1.2.3", "1.2.3.4.5"} {
		for _, body := range []string{"apiServer: {host: " + bad + "}\n", "loki: {url: 'http://" + bad + ":3100'}\n"} {
			_, err := Load(writeConfig(t, body))
			if err == nil || !strings.Contains(err.Error(), ":1: ") || !strings.Contains(err.Error(), `"`+bad+`" is not an IPv4 address`) {
				t.Errorf("%q: %v", body, err)
			}
		}
	}
	for _, local := range []string{"127.0.0.1", "0.0.0.0", "localhost", "::1"} {
		host := local
		if strings.Contains(local, ":") {
			host = "[" + local + "]"
		}
		for path, body := range map[string]string{"apiServer.host": "apiServer: {host: '" + local + "'}\n", "loki.url": "loki: {url: 'http://" + host + ":3100'}\n"} {
			_, warnings, err := Read(writeConfig(t, body))
			if err != nil {
				t.Fatalf("%q: %v", body, err)
			}
			found := false
			for _, w := range warnings {
				found = found || w.Path == path && w.Line == 1 && strings.Contains(w.Msg, "is each Windows node itself")
			}
			if !found {
				t.Errorf("%q: no warning at %s: %v", body, path, warnings)
			}
		}
	}
}

// Issue 59: Azure Monitor's values are resource ids, each checked by its
// form at its line, every problem at once; Azure values without the
// platform are said at their line; a valid set loads.
func TestAzureMonitorValues(t *testing.T) {
	const sub = "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg-x/providers/"
	p := writeConfig(t, `prometheus:
  platform: azure-monitor
  azure:
    workspace: amw-prod
    location: West Europe
    cluster: `+sub+`Microsoft.Monitor/accounts/not-a-cluster
    actionGroups: ["`+sub+`Microsoft.Insights/actionGroups/oncall", "/subscriptions/x/resourceGroups/y/providers/Microsoft.Insights/actionGroups/z"]
`)
	_, err := Load(p)
	want := []string{
		p + `:4: prometheus.azure.workspace: must be the Azure Monitor workspace's resource id`,
		p + `:5: prometheus.azure.location: must be the workspace's region as Azure names it`,
		p + `:6: prometheus.azure.cluster: must be empty or the AKS cluster's resource id`,
		p + `:7: prometheus.azure.actionGroups[1]: must be an action group's resource id`,
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
	if probs, ok := err.(Problems); !ok || len(probs) != len(want) {
		t.Errorf("%d problems, want %d", len(probs), len(want))
	}
	if _, err := Load(writeConfig(t, "prometheus:\n  platform: datadog\n")); err == nil || !strings.Contains(err.Error(), `:2: prometheus.platform: must be "" `) {
		t.Errorf("an unknown platform: %v", err)
	}
	if _, err := Load(writeConfig(t, "prometheus:\n  azure:\n    location: eastus\n")); err == nil || !strings.Contains(err.Error(), ":3: prometheus.azure.location: is set, but prometheus.platform is not azure-monitor") {
		t.Errorf("Azure values without the platform: %v", err)
	}
	c, err := Load(writeConfig(t, "prometheus:\n  platform: azure-monitor\n  azure:\n    workspace: "+sub+"microsoft.monitor/Accounts/amw\n    location: eastus\n    cluster: "+sub+"Microsoft.ContainerService/managedClusters/aks-1\n"))
	if err != nil || c.Prometheus.Azure.Location != "eastus" {
		t.Errorf("a valid Azure config: %v", err)
	}
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
)

func TestGenWritesBundle(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"kustomization.yaml", "rules/winobs-windows-alerts.yaml", "prometheus/winobs-windows-records.yaml", "ruler/mimir/winobs-windows.yaml", "ruler/loki/winobs-windows-events.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// The namespace of its own in, the shipper (opt-in: its image is built, not published) out.
	if !strings.Contains(stdout.String(), "wrote 22 files, 16 Kubernetes objects") {
		t.Errorf("summary:\n%s", stdout.String())
	}
	if code := run([]string{"--out", out, "--check"}, &stdout, &stderr); code != 0 {
		t.Errorf("--check after a write: exit %d: %s", code, stderr.String())
	}
}

// The bad input: a threshold above 1, a negative duration and an
// unknown key, all reported, exit 2, previous output untouched.
func TestGenBadConfigLeavesOutputUntouched(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--out", out}, &stdout, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	before, _ := os.ReadFile(filepath.Join(out, "rules/winobs-windows-alerts.yaml"))
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("alerts:\n  nodeCommit:\n    warning: 1.2\n    for: -5m\n  bogus: true\n"), 0o644)
	stderr.Reset()
	if code := run([]string{"--config", bad, "--out", out}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{
		bad + ":3: alerts.nodeCommit.warning: must be a ratio",
		bad + ":4: alerts.nodeCommit.for: must be a non-negative duration",
		bad + ":5: alerts.bogus: unknown field",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	after, _ := os.ReadFile(filepath.Join(out, "rules/winobs-windows-alerts.yaml"))
	if !bytes.Equal(before, after) {
		t.Error("a failed run changed the output")
	}
}

func TestGenCheckReportsStale(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--out", out, "--check"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "missing: kustomization.yaml") {
		t.Errorf("exit %d:\n%s", code, stderr.String())
	}
}

func TestGenUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"extra"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if code := run([]string{"--nope"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

// help is asked for, so it is answered on stdout with exit 0, for gen and
// gen init alike; an unknown flag is a usage error.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"init", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "gen init") {
			t.Errorf("%v: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--bogus"}, &stdout, &stderr); code != 2 {
		t.Errorf("--bogus: exit %d", code)
	}
}

// gen init writes a config that renders, never replaces one, and says which
// example values are left; the render from the example says it loudly and
// still exits 0.
func TestInitThenRender(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "winobs.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"init", "--config", cfg, "--loki-url", "https://loki.example.org/loki/api/v1/push",
		"--loki-tenant", "platform", "--api-server", "api.example.org", "--release", "prom"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if written, err := config.Load(cfg); err != nil || written.Loki.Tenant != "platform" {
		t.Errorf("--loki-tenant: %v", err)
	}
	if !strings.Contains(stderr.String(), "1 value is the example lab's") || !strings.Contains(stderr.String(), "windowsExporter.firewall.allowFrom   --scrape-from") ||
		strings.Contains(stderr.String(), "loki.url") || strings.Contains(stderr.String(), "ruleLabels") {
		t.Errorf("init's warnings:\n%s", stderr.String())
	}
	// winobs's own namespace, created by the render: nothing to label.
	if written, _ := config.Load(cfg); written == nil || written.Namespace != "winobs" || !written.CreateNamespace ||
		strings.Contains(stdout.String(), "kubectl label") || !strings.Contains(stdout.String(), `creates namespace winobs at Pod Security "privileged"`) {
		t.Errorf("init's namespace or next steps:\n%s", stdout.String())
	}
	// A shared namespace is the user's to label, with the cost said.
	stdout.Reset()
	shared := filepath.Join(dir, "shared.yaml")
	if code := run([]string{"init", "--config", shared, "--namespace", "monitoring"}, &stdout, &stderr); code != 0 {
		t.Fatalf("init --namespace monitoring: exit %d: %s", code, stderr.String())
	}
	if written, err := config.Load(shared); err != nil || written.CreateNamespace {
		t.Errorf("init --namespace monitoring wrote createNamespace true or a config that fails: %v", err)
	}
	for _, want := range []string{"kubectl label namespace monitoring --overwrite pod-security.kubernetes.io/enforce=privileged",
		"kube-prometheus-stack's namespace", "admits any privileged pod in it"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("init's next steps for a shared namespace lack %q:\n%s", want, stdout.String())
		}
	}
	// Issue 51: kube-prometheus-stack released as prom-stack in
	// observability, a name gen cannot know: shared all the same, the
	// render leaves it alone; --create-namespace is the user asking.
	for _, tc := range []struct {
		args   []string
		create bool
	}{
		{[]string{"--platform", "aks", "--namespace", "observability", "--release", "prom-stack"}, false},
		{[]string{"--namespace", "winobs-logs", "--create-namespace"}, true},
	} {
		stdout.Reset()
		path := filepath.Join(dir, tc.args[len(tc.args)-1]+".yaml")
		if code := run(append([]string{"init", "--config", path}, tc.args...), &stdout, &stderr); code != 0 {
			t.Fatalf("init %v: exit %d: %s", tc.args, code, stderr.String())
		}
		written, err := config.Load(path)
		if err != nil || written.CreateNamespace != tc.create {
			t.Errorf("init %v: createNamespace %v, want %v (%v)", tc.args, written != nil && written.CreateNamespace, tc.create, err)
		}
		if labels := strings.Contains(stdout.String(), "kubectl label namespace "+written.Namespace+" --overwrite"); labels == tc.create {
			t.Errorf("init %v: the label command printed: %v:\n%s", tc.args, labels, stdout.String())
		}
		out := filepath.Join(dir, "out-"+written.Namespace)
		var rout, rerr bytes.Buffer
		if code := run([]string{"--config", path, "--out", out}, &rout, &rerr); code != 0 {
			t.Fatalf("render: exit %d: %s", code, rerr.String())
		}
		if _, err := os.Stat(filepath.Join(out, "namespace.yaml")); (err == nil) != tc.create {
			t.Errorf("init %v: namespace.yaml rendered: %v", tc.args, err == nil)
		}
	}
	// A platform's preset, and an unknown platform: a usage error, nothing written.
	stdout.Reset()
	aks := filepath.Join(dir, "aks.yaml")
	if code := run([]string{"init", "--config", aks, "--platform", "aks"}, &stdout, &stderr); code != 0 {
		t.Fatalf("init --platform aks: exit %d: %s", code, stderr.String())
	}
	if written, err := config.Load(aks); err != nil || written.APIServer.Port != 443 || written.ServiceCIDR != "10.0.0.0/16" {
		t.Errorf("init --platform aks: %v", err)
	}
	stderr.Reset()
	if code := run([]string{"init", "--config", filepath.Join(dir, "os.yaml"), "--platform", "openshift"}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "aks, eks, gke, kubeadm") {
		t.Errorf("init --platform openshift: exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "os.yaml")); err == nil {
		t.Error("init --platform openshift wrote a file")
	}
	// Without flags, every example value is named with the flag that sets it.
	stderr.Reset()
	if code := run([]string{"init", "--config", filepath.Join(dir, "lab.yaml")}, &stdout, &stderr); code != 0 {
		t.Fatalf("init without flags: exit %d", code)
	}
	for _, want := range []string{"4 values are the example lab's", "--loki-url", "--api-server", "--scrape-from", "--release"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("init without flags does not say %q:\n%s", want, stderr.String())
		}
	}
	before, _ := os.ReadFile(cfg)
	if code := run([]string{"init", "--config", cfg}, &stdout, &stderr); code != 1 {
		t.Errorf("a second init: exit %d", code)
	}
	if after, _ := os.ReadFile(cfg); !bytes.Equal(before, after) {
		t.Error("init replaced an existing config")
	}
	stderr.Reset()
	out := filepath.Join(dir, "out")
	if code := run([]string{"--config", cfg, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("render: exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "built-in example") || !strings.Contains(stderr.String(), "gen: warning: "+cfg) {
		t.Errorf("render's warnings:\n%s", stderr.String())
	}
	alloy, _ := os.ReadFile(filepath.Join(out, "alloy", "config.alloy"))
	if !strings.Contains(string(alloy), "https://loki.example.org/loki/api/v1/push") {
		t.Error("the init's Loki URL did not reach Alloy")
	}
	stderr.Reset()
	if code := run([]string{"--out", filepath.Join(dir, "example")}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "WARNING: no --config: rendering the built-in example") {
		t.Errorf("example render: exit %d:\n%s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"init", "--config", filepath.Join(dir, "bad.yaml"), "--loki-url", "http://a.example/\nx: 1"}, &stdout, &stderr); code != 2 {
		t.Errorf("a bad flag value: exit %d:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.yaml")); !os.IsNotExist(err) {
		t.Error("a refused init wrote its file")
	}
}

// Loki credentials from a Kubernetes Secret: both log agents mount it
// read-only where the config's credential files point.
func TestLokiCredentialsFromASecret(t *testing.T) {
	code, stderr, out, _ := genWith(t, `loki:
  url: https://loki.example.org/loki/api/v1/push
  basicAuth: {username: winobs, passwordFile: 'C:\var\run\secrets\winobs\loki\password'}
lokiSecret:
  name: loki-credentials
`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"alloy/alloy.yaml", "shipper/eventlog-shipper.yaml"} {
		b, _ := os.ReadFile(filepath.Join(out, f))
		for _, want := range []string{"secretName: loki-credentials", `mountPath: C:\var\run\secrets\winobs\loki`, "readOnly: true"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s lacks %q", f, want)
			}
		}
	}
	alloy, _ := os.ReadFile(filepath.Join(out, "alloy", "config.alloy"))
	if !strings.Contains(string(alloy), `password_file = "C:\\var\\run\\secrets\\winobs\\loki\\password"`) {
		t.Errorf("config.alloy:\n%s", alloy)
	}
}

// gen doctor: usage errors exit 2, an unreachable Prometheus exits 1 with
// the reason, --help exits 0 and names its flags.
func TestDoctorCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"doctor", "--help"}, 0, "-prometheus-bearer-token-file"},
		{[]string{"doctor"}, 2, "--prometheus URL is required"},
		{[]string{"doctor", "--prometheus", "http://127.0.0.1:1", "--output", "yaml"}, 2, "--output is text or json"},
		{[]string{"doctor", "--prometheus", "https://bob:pw@prom.example"}, 2, "must not carry credentials"},
		{[]string{"doctor", "--prometheus", "http://127.0.0.1:1", "--prometheus-username", "u"}, 2, "basic auth needs both"},
		{[]string{"doctor", "--prometheus", "http://127.0.0.1:1", "--timeout", "5s"}, 1, "✗ prometheus-reachable"},
		{[]string{"doctor", "--prometheus", "http://127.0.0.1:1", "--output", "json"}, 1, `"ok": false`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("%v: exit %d\n%s%s", tc.args, code, stdout.String(), stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), "pw@") {
			t.Errorf("%v: the password was printed", tc.args)
		}
	}
}

// A pull request can turn the config into a link (git stores links):
// gen, --check and doctor refuse a link out of the config's directory or
// into a hidden entry without printing a byte of what it points at.
func TestConfigLinkToASecretPrintsNothing(t *testing.T) {
	const secret = "ghp_0123456789abcdef0123456789abcdef0123"
	home := t.TempDir()
	secrets := map[string]string{
		".netrc":            "machine github.com login ci password " + secret + "\n",
		".git-credentials":  "https://ci:" + secret + "@github.com\n",
		"token":             secret,
		".env":              "GITHUB_TOKEN=" + secret + "\n",
		"known-fields.yaml": "namespace: " + secret + "\nloki:\n  tenant: " + secret + "\napiServer:\n  host: " + secret + "\n",
	}
	targets := []string{"/proc/self/environ"}
	for name, text := range secrets {
		p := filepath.Join(home, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, p)
	}
	t.Setenv("WINOBS_TEST_SECRET", secret) // what /proc/self/environ would print
	for _, target := range targets {
		repo := t.TempDir()
		cfg := filepath.Join(repo, "winobs.yaml")
		if err := os.Symlink(target, cfg); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"--config", cfg, "--out", filepath.Join(repo, "out")},
			{"--config", cfg, "--out", filepath.Join(repo, "out"), "--check"},
			{"doctor", "--config", cfg, "--prometheus", "http://127.0.0.1:1"},
		} {
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != 2 || strings.Contains(stdout.String()+stderr.String(), secret) ||
				!strings.Contains(stderr.String(), "symbolic link refused") {
				t.Errorf("%s -> %s: exit %d\n%s%s", args, target, code, stdout.String(), stderr.String())
			}
		}
	}
}

// Values users copy from their cloud console (issue 51): EKS's API server
// URL, Loki's base URL. Both are taken; a flag's bad value is reported at
// the flag, never at a line of a file not yet written.
func TestInitTakesConsoleValues(t *testing.T) {
	dir := t.TempDir()
	run1 := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"init"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	path := filepath.Join(dir, "eks.yaml")
	if code, _, stderr := run1("--config", path, "--platform", "eks", "--api-server", "https://4F2A9C1B7E.gr7.us-east-1.eks.amazonaws.com",
		"--loki-url", "https://loki.example.org"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.APIServer.Host != "4F2A9C1B7E.gr7.us-east-1.eks.amazonaws.com" || c.APIServer.Port != 443 || c.Loki.URL != "https://loki.example.org/loki/api/v1/push" {
		t.Errorf("host %s port %d loki %s", c.APIServer.Host, c.APIServer.Port, c.Loki.URL)
	}
	path = filepath.Join(dir, "port.yaml")
	if code, _, stderr := run1("--config", path, "--api-server", "https://api.example.org:6443/"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	} else if c, err := config.Load(path); err != nil || c.APIServer.Host != "api.example.org" || c.APIServer.Port != 6443 {
		t.Errorf("a URL with a port: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--api-server", "https://api.example.org:6443", "--api-port", "443"}, "--api-server names port 6443 and --api-port 443: give one"},
		{[]string{"--api-server", "http://api.example.org"}, "--api-server: \"http://api.example.org\": the API server is reached over https"},
		{[]string{"--api-server", "https://api.example.org/k8s"}, "give the API server's address alone"},
		{[]string{"--loki-url", "https://loki.example.org/loki/api/v1/query"}, "flag --loki-url: loki.url: is another of Loki's API paths"},
		{[]string{"--api-server", "kubernetes.default.svc"}, "flag --api-server: apiServer.host: \"kubernetes.default.svc\" is a cluster DNS name"},
		{[]string{"--scrape-from", "10.0.0.1,nonsense"}, "flag --scrape-from: windowsExporter.firewall.allowFrom[1]:"},
		{[]string{"--loki-tenant", "a b"}, "flag --loki-tenant: loki.tenant:"},
	} {
		bad := filepath.Join(dir, "bad.yaml")
		code, _, stderr := run1(append([]string{"--config", bad}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "(init)") {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", tc.args, code, tc.want, stderr)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Errorf("%v: a config was written", tc.args)
		}
	}
}

// Issue 58: the "next:" command quotes --config for the shell (a path
// `a b;$(touch PWNED).yaml` printed a command that ran touch), and a
// missing directory is said as such.
func TestInitNextCommandIsQuoted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a b;$(touch PWNED) 'x'.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"init", "--config", path}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	line := ""
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.Contains(l, "go run ./cmd/gen --config") {
			line = strings.TrimSpace(l)
		}
	}
	cmd, _, _ := strings.Cut(line, " && ")
	// The shell reads the command's words: --config's is the path, and
	// nothing runs (sh -c with echo standing in for go).
	sh := exec.Command("sh", "-c", strings.Replace(cmd, "go run ./cmd/gen", `printf '%s\n'`, 1))
	sh.Dir = dir
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v %s", cmd, err, out)
	}
	if words := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); len(words) != 4 || words[1] != path {
		t.Errorf("the shell reads %q from %s", words, cmd)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Error("the printed command ran touch")
	}
	stderr.Reset()
	missing := filepath.Join(dir, "nope", "winobs.yaml")
	if code := run([]string{"init", "--config", missing}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "the directory "+filepath.Dir(missing)+" does not exist") ||
		strings.Contains(stderr.String(), "never replaced") {
		t.Errorf("a missing directory: exit %d: %s", code, stderr.String())
	}
}

// Issue 59: gen init asks AKS users which Prometheus they run, and writes
// the Azure Monitor platform from flags; what it writes renders the Azure
// files.
func TestInitAzureMonitor(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"init", "--config", filepath.Join(dir, "kps.yaml"), "--platform", "aks"}, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "--prometheus azure-monitor --azure-workspace") {
		t.Errorf("init --platform aks does not ask which Prometheus: exit %d\n%s", code, stdout.String())
	}
	ws := "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg/providers/Microsoft.Monitor/accounts/amw"
	path := filepath.Join(dir, "azure.yaml")
	stdout.Reset()
	if code := run([]string{"init", "--config", path, "--platform", "aks", "--prometheus", "azure-monitor", "--azure-workspace", ws, "--azure-location", "westeurope"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stdout.String(), "does this cluster use") {
		t.Error("asked again after --prometheus")
	}
	c, err := config.Load(path)
	if err != nil || c.Prometheus.Managed != managed.AzureMonitor || c.Prometheus.Azure.Workspace != ws {
		t.Fatalf("%v %+v", err, c)
	}
	out := filepath.Join(dir, "out")
	stderr.Reset()
	if code := run([]string{"--config", path, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("render: %s", stderr.String())
	}
	if strings.Contains(stderr.String(), "ruleLabels") {
		t.Errorf("warned about PrometheusRule labels on a platform that loads none:\n%s", stderr.String())
	}
	for _, f := range []string{"azure-monitor/prometheus-rule-groups.json", "azure-monitor/ama-metrics-settings-configmap.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "prometheus")); err == nil {
		t.Error("PrometheusRule objects rendered for Azure Monitor")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--prometheus", "azure-monitor"}, "needs --azure-workspace"},
		{[]string{"--prometheus", "datadog"}, `--prometheus "datadog"`},
		{[]string{"--azure-location", "eastus"}, "--azure-* flags need --prometheus azure-monitor"},
		{[]string{"--prometheus", "azure-monitor", "--azure-workspace", "amw", "--azure-location", "eastus"}, "flag --azure-workspace: prometheus.azure.workspace: must be"},
	} {
		stderr.Reset()
		bad := filepath.Join(dir, "bad.yaml")
		if code := run(append([]string{"init", "--config", bad}, tc.args...), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, code, stderr.String())
		}
	}
}

// Issue 60: gen init writes the AMP and GMP platforms from flags (asking
// EKS and GKE users which Prometheus they run); each renders its files.
func TestInitAMPAndGMP(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args  []string
		ask   string
		files []string
	}{
		{[]string{"--platform", "eks"}, "--prometheus amp --amp-workspace", nil},
		{[]string{"--platform", "gke"}, "--prometheus gmp", nil},
		{[]string{"--platform", "eks", "--prometheus", "amp", "--amp-workspace", "ws-8a6f7e7e-4d1e-4b88-8b4c-0123456789ab", "--amp-region", "eu-west-1"}, "",
			[]string{"amp/winobs-windows.yaml", "amp/scrape-config.yaml", "amp/windows-exporter-monitor.yaml"}},
		{[]string{"--platform", "gke", "--prometheus", "gmp"}, "", []string{"gmp/winobs-windows.yaml", "gmp/windows-exporter-monitor.yaml"}},
	} {
		path := filepath.Join(dir, strings.Join(tc.args, "_")+".yaml")
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"init", "--config", path}, tc.args...), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr.String())
		}
		if tc.ask != "" && !strings.Contains(stdout.String(), tc.ask) {
			t.Errorf("%v does not ask: %s", tc.args, stdout.String())
		}
		if tc.ask == "" && strings.Contains(stdout.String(), "does this cluster") {
			t.Errorf("%v asks again: %s", tc.args, stdout.String())
		}
		out := filepath.Join(dir, "out-"+strings.Join(tc.args, "_"))
		if code := run([]string{"--config", path, "--out", out}, &stdout, &stderr); code != 0 {
			t.Fatalf("render: %s", stderr.String())
		}
		for _, f := range tc.files {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Error(err)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"init", "--config", filepath.Join(dir, "x.yaml"), "--prometheus", "amp"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "needs --amp-workspace") {
		t.Errorf("amp without its flags: %d %s", code, stderr.String())
	}
}

// Issue 66: gen init prints each managed platform's steps in order, every
// value from the config and quoted: on Azure the settings merged (never
// applied over the cluster's), the template into the workspace's resource
// group, doctor on the endpoint az reads; an action group by flag.
func TestInitPrintsTheManagedSteps(t *testing.T) {
	dir := t.TempDir()
	const sub = "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/"
	ws := sub + "rg-mon/providers/Microsoft.Monitor/accounts/amw"
	ag := sub + "rg-ops/providers/Microsoft.Insights/actionGroups/oncall"
	for _, tc := range []struct {
		name  string
		args  []string
		steps []string
	}{
		{"azure", []string{"--prometheus", "azure-monitor", "--azure-workspace", ws, "--azure-location", "westeurope", "--azure-action-group", ag,
			"--azure-cluster", sub + "rg/providers/Microsoft.ContainerService/managedClusters/prod-westeurope-01"}, []string{
			"kubectl apply -k out",
			"kubectl get cm -n kube-system ama-metrics-settings-configmap -o yaml > current.yaml",
			"gen azure-settings --config ",
			"kubectl replace -f merged.yaml",
			"kubectl create -f out/azure-monitor/ama-metrics-settings-configmap.yaml",
			"az deployment group create -g rg-mon --template-file out/azure-monitor/prometheus-rule-groups.json",
			"az monitor account show --ids " + ws + " --query metrics.prometheusQueryEndpoint -o tsv",
		}},
		{"amp", []string{"--prometheus", "amp", "--amp-workspace", "ws-8a6f7e7e-4d1e-4b88-8b4c-0123456789ab", "--amp-region", "eu-west-1", "--cluster", "eks-1"}, []string{
			"aws amp create-rule-groups-namespace --region eu-west-1 --workspace-id ws-8a6f7e7e-4d1e-4b88-8b4c-0123456789ab --name winobs-windows-eks-1 --data fileb://out/amp/winobs-windows-eks-1.yaml",
			"aws amp create-scraper",
			"aws eks create-access-entry",
			"--username aps-collector-user",
			"TCP 9182",
		}},
		{"gmp", []string{"--prometheus", "gmp"}, []string{"self-deployed", "--prometheus http://127.0.0.1:9090"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			path := filepath.Join(dir, tc.name+".yaml")
			if code := run(append([]string{"init", "--config", path}, tc.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			at := 0
			for _, want := range tc.steps {
				i := strings.Index(stdout.String()[at:], want)
				if i < 0 {
					t.Fatalf("no %q after byte %d of:\n%s", want, at, stdout.String())
				}
				at += i
			}
		})
	}
	c, err := config.Load(filepath.Join(dir, "azure.yaml"))
	if err != nil || !slices.Equal(c.Prometheus.Azure.ActionGroups, []string{ag}) || c.Cluster.Name != "prod-westeurope-01" {
		t.Errorf("the Azure config: %v %+v %q", err, c.Prometheus.Azure, c.Cluster.Name)
	}
	// A cluster name other than the AKS cluster's is refused at its flag.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"init", "--config", filepath.Join(dir, "bad.yaml"), "--prometheus", "azure-monitor", "--azure-workspace", ws, "--azure-location", "westeurope",
		"--azure-cluster", sub + "rg/providers/Microsoft.ContainerService/managedClusters/prod-westeurope-01", "--cluster", "prod.we"}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), `flag --cluster: cluster.name: is "prod.we", but ama-metrics labels this cluster's series cluster="prod-westeurope-01"`) {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}

// Issue 66: gen azure-settings merges the cluster's ConfigMap with winobs's
// needs and writes it where asked, never over a file; a conflict is named
// with exit 2 and nothing written; without --current, or off Azure, it
// says what to do.
func TestAzureSettingsCommand(t *testing.T) {
	dir := t.TempDir()
	const sub = "/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg/providers/"
	cfg := filepath.Join(dir, "winobs.yaml")
	os.WriteFile(cfg, []byte("prometheus:\n  platform: azure-monitor\n  azure:\n    workspace: "+sub+"Microsoft.Monitor/accounts/amw\n    location: westeurope\n    cluster: "+
		sub+"Microsoft.ContainerService/managedClusters/prod-westeurope-01\n"), 0o644)
	current := filepath.Join(dir, "current.yaml")
	os.WriteFile(current, []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: ama-metrics-settings-configmap
  namespace: kube-system
  resourceVersion: "812"
data:
  schema-version: v1
  config-version: ver7
  default-targets-metrics-keep-list: |-
    kubelet = "kubelet_node_name|my_metric"
    kubestate = "kube_pod_labels"
`), 0o644)
	merged := filepath.Join(dir, "merged.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"azure-settings", "--config", cfg, "--current", current, "--out", merged}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	raw, _ := os.ReadFile(merged)
	for _, want := range []string{`kubelet = "kubelet_node_name|my_metric"`, `kubestate = "kube_pod_labels|kube_node_info|`, "config-version: ver7", `resourceVersion: "812"`,
		"windowsexporter = false", "kubectl replace -f"} {
		if !strings.Contains(string(raw)+stdout.String(), want) {
			t.Errorf("no %q in:\n%s%s", want, raw, stdout.String())
		}
	}
	if code := run([]string{"azure-settings", "--config", cfg, "--current", current, "--out", merged}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "never replaced") {
		t.Errorf("over an existing file: exit %d: %s", code, stderr.String())
	}
	os.WriteFile(current, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ama-metrics-settings-configmap, namespace: kube-system}\n"+
		"data:\n  default-scrape-settings-enabled: |-\n    kubestate = false\n"), 0o644)
	stderr.Reset()
	conflicted := filepath.Join(dir, "conflict.yaml")
	if code := run([]string{"azure-settings", "--config", cfg, "--current", current, "--out", conflicted}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "kubestate = false") {
		t.Errorf("a conflict: exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(conflicted); err == nil {
		t.Error("written despite a conflict")
	}
	for _, args := range [][]string{{"azure-settings", "--config", cfg}, {"azure-settings", "--current", current}} {
		stderr.Reset()
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
}

package exporters

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/nodeagent"
	"github.com/winobs/winobs/gen/view"
)

func load(_ *testing.T, mutate func(*config.Config)) view.Exporters {
	cfg := config.Default()
	if mutate != nil {
		mutate(cfg)
	}
	return view.Of(cfg).Exporters
}

// The firewall step names its rule, checks for it and updates it in place,
// and allows only the scrapers and the node itself: never a second rule, never
// every address.
func TestFirewallScriptIsIdempotentAndScoped(t *testing.T) {
	s := FirewallScript
	for _, want := range []string{
		"$name = 'winobs-windows-exporter-9182'",
		"$remote = @(@($env:WINOBS_ALLOW_FROM -split ',') + @($env:HOST_IP) | Where-Object { $_ -ne '' })",
		"[System.Net.IPAddress]::TryParse($ip, [ref]$parsed)",
		"if (Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue) { Set-NetFirewallRule -Name $name @rule }",
		"else { New-NetFirewallRule -Name $name ",
		"LocalPort = 9182; RemoteAddress = $remote",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	// Every rule command names the fixed rule; nothing opens to Any.
	for _, cmd := range regexp.MustCompile(`(New|Set)-NetFirewallRule[^\n]*`).FindAllString(s, -1) {
		if !strings.Contains(cmd, "-Name $name") {
			t.Errorf("unnamed rule command: %s", cmd)
		}
	}
	if regexp.MustCompile(`RemoteAddress\s*=\s*'?Any`).MatchString(s) {
		t.Error("rule open to any address")
	}
}

func daemonSetOf(t *testing.T, objs []any) *appsv1.DaemonSet {
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			return ds
		}
	}
	t.Fatal("no DaemonSet")
	return nil
}

func TestDaemonSet(t *testing.T) {
	ds := daemonSetOf(t, Objects(load(t, nil)))
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	if !*pod.SecurityContext.WindowsOptions.HostProcess || !pod.HostNetwork || pod.OS.Name != corev1.Windows {
		t.Error("not a HostProcess pod on the host network of a Windows node")
	}
	if c.Image != winobs.Pinned().WindowsExporterImage || !strings.Contains(c.Image, ":v0.31.") {
		t.Errorf("image %s is not the pinned 0.31 release", c.Image)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port.IntValue() != Port {
			t.Errorf("probe %+v does not check /health on %d", p, Port)
		}
	}
	if c.Resources.Limits.Memory().String() != "200Mi" || c.Resources.Requests.Cpu().String() != "50m" {
		t.Errorf("resources = %+v", c.Resources)
	}
	if names := initNames(pod); !slices.Equal(names, []string{"configure-firewall", "secure-directories"}) {
		t.Errorf("init containers %v, want the firewall step and then the directories step", names)
	}
	// The directories step closes exactly the directory the exporter serves.
	var conf struct {
		Collector struct {
			Textfile struct {
				Directories string `yaml:"directories"`
			} `yaml:"textfile"`
		} `yaml:"collector"`
	}
	if err := yaml.Unmarshal([]byte(ExporterConfig(load(t, nil))), &conf); err != nil {
		t.Fatal(err)
	}
	if dirs := pod.InitContainers[1].Env[0]; dirs.Name != nodeagent.SecureDirsEnv || dirs.Value != conf.Collector.Textfile.Directories || dirs.Value != `C:\var\lib\winobs\textfile` {
		t.Errorf("the directories step closes %+v, the exporter reads %q", dirs, conf.Collector.Textfile.Directories)
	}
	init := pod.InitContainers[0]
	if init.Env[0].Name != HostIPEnv || init.Env[0].ValueFrom.FieldRef.FieldPath != "status.hostIP" {
		t.Error("the firewall step does not get the node's own address")
	}
	if init.Env[1].Name != AllowFromEnv || init.Env[1].Value != "192.168.10.23/32,192.168.10.24/32,192.168.10.26/32" {
		t.Errorf("the firewall step does not get the configured scrapers as data: %+v", init.Env[1])
	}
	if init.Command[len(init.Command)-1] != FirewallScript || init.Resources.Limits.Memory().IsZero() {
		t.Error("the firewall step must run the constant script, with resources")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the exporter needs no API token, but one is mounted")
	}

	off := daemonSetOf(t, Objects(load(t, func(c *config.Config) { c.WindowsExporter.Firewall.Enabled = false })))
	if names := initNames(off.Spec.Template.Spec); !slices.Equal(names, []string{"secure-directories"}) {
		t.Errorf("firewall switched off: init containers %v, want only the directories step", names)
	}
}

func initNames(pod corev1.PodSpec) []string {
	var names []string
	for _, c := range pod.InitContainers {
		names = append(names, c.Name)
	}
	return names
}

// The exporter's config enables the container collector and limits the
// service collector to the node's Kubernetes services.
func TestExporterConfig(t *testing.T) {
	var c struct {
		Collectors struct {
			Enabled string `yaml:"enabled"`
		} `yaml:"collectors"`
		Collector struct {
			Service struct {
				Include string `yaml:"include"`
			} `yaml:"service"`
			Textfile struct {
				Directories string `yaml:"directories"`
			} `yaml:"textfile"`
		} `yaml:"collector"`
	}
	if err := yaml.Unmarshal([]byte(ExporterConfig(load(t, nil))), &c); err != nil {
		t.Fatal(err)
	}
	if c.Collectors.Enabled != "[defaults],container,pagefile,time,textfile" {
		t.Errorf("collectors = %q", c.Collectors.Enabled)
	}
	if c.Collector.Textfile.Directories != `C:\var\lib\winobs\textfile` {
		t.Errorf("textfile directories = %q", c.Collector.Textfile.Directories)
	}
	// The exporter anchors the pattern: emulate it.
	re := regexp.MustCompile("^(?:" + c.Collector.Service.Include + ")$")
	for name, want := range map[string]bool{"kubelet": true, "containerd": true, "hns": true, "vmcompute": true, "Kubelet": true, "Spooler": false, "kubelet2": false} {
		if re.MatchString(name) != want {
			t.Errorf("service %s included = %v", name, !want)
		}
	}
}

// The monitor produces the labels the rules join on, in either form.
func TestMonitors(t *testing.T) {
	check := func(name string, honor bool, relabel []monitoringv1.RelabelConfig) {
		if !honor {
			t.Errorf("%s: honorLabels is off", name)
		}
		targets := map[string]bool{}
		for _, r := range relabel {
			switch {
			case r.TargetLabel == "job" && *r.Replacement == "windows-exporter",
				r.TargetLabel == "instance" && r.SourceLabels[0] == "__meta_kubernetes_pod_node_name",
				r.TargetLabel == "node" && r.SourceLabels[0] == "__meta_kubernetes_pod_node_name":
				targets[r.TargetLabel] = true
			case r.Action == "labeldrop" && r.Regex == "namespace|pod|container":
				targets["labeldrop"] = true
			}
		}
		if len(targets) != 4 {
			t.Errorf("%s: relabelings %v", name, targets)
		}
	}
	for _, o := range Objects(load(t, nil)) {
		if pm, ok := o.(*monitoringv1.PodMonitor); ok {
			ep := pm.Spec.PodMetricsEndpoints[0]
			check("PodMonitor", ep.HonorLabels, ep.RelabelConfigs)
			if pm.Labels["release"] != "kps" {
				t.Error("PodMonitor lacks the kps release label")
			}
		}
	}
	var kinds []string
	for _, o := range Objects(load(t, func(c *config.Config) { c.WindowsExporter.Monitor = config.ServiceMonitor })) {
		switch m := o.(type) {
		case *monitoringv1.ServiceMonitor:
			check("ServiceMonitor", m.Spec.Endpoints[0].HonorLabels, m.Spec.Endpoints[0].RelabelConfigs)
			kinds = append(kinds, "ServiceMonitor")
		case *corev1.Service:
			kinds = append(kinds, "Service")
		case *monitoringv1.PodMonitor:
			t.Error("PodMonitor rendered with monitor: ServiceMonitor")
		}
	}
	if strings.Join(kinds, ",") != "Service,ServiceMonitor" {
		t.Errorf("ServiceMonitor form renders %v", kinds)
	}
}

func TestNotDeployedWhenKubePrometheusStackRunsIt(t *testing.T) {
	files, err := Files(load(t, func(c *config.Config) { c.WindowsExporter.Deploy = false }))
	if err != nil || len(files) != 0 {
		t.Errorf("files = %v, err = %v", files, err)
	}
}

// Package exporters builds windows_exporter for Windows nodes: its config,
// a HostProcess DaemonSet with a scoped firewall rule, and the monitor whose
// labels match what the winobs rules expect.
package exporters

import (
	"fmt"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/meta"
	"github.com/winobs/winobs/gen/nodeagent"
	"github.com/winobs/winobs/gen/render"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

const (
	// Name of every exporter object.
	Name = "winobs-windows-exporter"
	// Port is windows_exporter's port, on the node's address (host network).
	Port = 9182
	// FirewallRuleName is the fixed name (not DisplayName) of the inbound
	// rule, so a restart finds and updates it instead of adding another.
	FirewallRuleName = "winobs-windows-exporter-9182"
	// HostIPEnv carries the node's own address into the firewall step.
	HostIPEnv = "HOST_IP"
	// AllowFromEnv carries the scrapers' addresses into the firewall step,
	// comma-separated in canonical form: data, never script text.
	AllowFromEnv = "WINOBS_ALLOW_FROM"
	portName     = "metrics"
)

// Files returns the exporter objects, or none when the exporter of
// kube-prometheus-stack is used instead.
func Files(v view.Exporters) ([]render.File, error) {
	if !v.WindowsExporter.Deploy {
		return nil, nil
	}
	objs := Objects(v)
	if v.MonitorDir != "" {
		// A managed Prometheus whose clusters have no monitoring.coreos.com
		// CRD for apply -k to meet (managed.Service.MonitorBeside): the
		// monitor is written beside, for a self-run collector
		// (prometheus-operator in agent mode, GMP's self-deployed
		// collection) that reads it.
		monitor := objs[len(objs)-1:]
		raw, err := render.EncodeObjects(monitor)
		if err != nil {
			return nil, err
		}
		return []render.File{
			{Path: "exporters/windows-exporter.yaml", Objects: objs[:len(objs)-1]},
			{Path: v.MonitorDir + "windows-exporter-monitor.yaml", Raw: raw},
		}, nil
	}
	return []render.File{{Path: "exporters/windows-exporter.yaml", Objects: objs}}, nil
}

// Objects are the ConfigMap, DaemonSet and monitor (plus a headless Service
// for a ServiceMonitor).
func Objects(v view.Exporters) []any {
	e := v.WindowsExporter
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: nodeagent.Meta(v.Agents, Name, meta.ComponentExporter),
		Data:       map[string]string{"config.yml": ExporterConfig(v)},
	}
	objs := []any{cm, daemonSet(v)}
	if e.Monitor == config.ServiceMonitor {
		return append(objs, service(v), serviceMonitor(v))
	}
	return append(objs, podMonitor(v))
}

// ExporterConfig is windows_exporter's config file: the default collectors
// plus container, pagefile (the page files behind the commit limit) and time
// (offset from the time source; its sub-collectors default to system_time
// and ntp), and the service collector limited to the node's Kubernetes
// services (it reports every service otherwise).
func ExporterConfig(v view.Exporters) string {
	// The exporter anchors the regex and matches case-sensitively.
	include := vocab.ServicesRegex(v.WindowsExporter.Services)
	// textfile serves the eventlog-shipper's metrics (it listens on loopback).
	return fmt.Sprintf(`collectors:
  enabled: "[defaults],container,pagefile,time,textfile"
collector:
  service:
    include: %s
  textfile:
    directories: %s
`, strconv.Quote(include), strconv.Quote(v.TextfileDir))
}

func daemonSet(v view.Exporters) any {
	e := v.WindowsExporter
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/health", Port: intstr.FromInt32(Port),
	}}, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 3}
	startup := *probe
	startup.FailureThreshold = 30 // the first scrape of a busy node is slow
	container := corev1.Container{
		Name:  "windows-exporter",
		Image: e.Image,
		Args: []string{
			// HostProcess containers see their volumes under the sandbox mount point.
			"--config.file=%CONTAINER_SANDBOX_MOUNT_POINT%/config.yml",
			"--web.listen-address=:" + strconv.Itoa(Port),
		},
		Ports:          []corev1.ContainerPort{{Name: portName, ContainerPort: Port, HostPort: Port, Protocol: corev1.ProtocolTCP}},
		StartupProbe:   &startup,
		LivenessProbe:  probe,
		ReadinessProbe: probe,
		Resources:      nodeagent.Resources(e.Resources),
		VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/config.yml", SubPath: "config.yml"}},
	}
	pod := corev1.PodSpec{
		Containers: []corev1.Container{container},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: Name}},
		}}},
		// The exporter never calls the Kubernetes API (the upstream chart
		// also turns the token off).
		AutomountServiceAccountToken: new(bool),
	}
	if e.Firewall.Enabled {
		pod.InitContainers = append(pod.InitContainers, corev1.Container{
			Name:    "configure-firewall",
			Image:   e.Image,
			Command: nodeagent.PowerShell(FirewallScript),
			Env: []corev1.EnvVar{
				{Name: HostIPEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
				{Name: AllowFromEnv, Value: AllowFrom(e.Firewall.AllowFrom)},
			},
			Resources: nodeagent.StepResources,
		})
	}
	// The textfile directory is served as metrics: only SYSTEM and
	// Administrators may write it.
	pod.InitContainers = append(pod.InitContainers, nodeagent.SecureDirsContainer(e.Image, v.TextfileDir))
	// SYSTEM reads performance counters, the SCM and job objects, and may
	// change the firewall.
	return nodeagent.DaemonSet(v.Agents, Name, Name, nodeagent.SystemAccount, pod)
}

// FirewallScript creates or updates, in place, one inbound rule with a fixed
// name that allows the exporter's port from the scrapers and from the node
// itself (kubelet probes come from the node's own address; blocking it
// crash-loops the pod). It never adds a second rule.
//
// The script is a constant: no config value is ever part of its text. The
// addresses arrive in environment variables, each is parsed as an address or
// CIDR before use (the step fails on anything else), and they reach the
// cmdlet as an array of strings, which PowerShell never evaluates.
var FirewallScript = strings.Join([]string{
	"$ErrorActionPreference = 'Stop'",
	"$name = '" + FirewallRuleName + "'",
	"$remote = @(@($env:" + AllowFromEnv + " -split ',') + @($env:" + HostIPEnv + ") | Where-Object { $_ -ne '' })",
	"foreach ($a in $remote) { $ip = $a -replace '/\\d{1,3}$', ''; $parsed = $null; if (-not [System.Net.IPAddress]::TryParse($ip, [ref]$parsed) -or $ip.Contains('%')) { throw \"not an IP address or CIDR: $a\" } }",
	"$rule = @{ Direction = 'Inbound'; Action = 'Allow'; Profile = 'Any'; Protocol = 'TCP'; LocalPort = " + strconv.Itoa(Port) + "; RemoteAddress = $remote; Enabled = 'True' }",
	"if (Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue) { Set-NetFirewallRule -Name $name @rule }",
	"else { New-NetFirewallRule -Name $name -DisplayName 'winobs windows-exporter " + strconv.Itoa(Port) + "' @rule | Out-Null }",
	"Write-Output \"firewall rule $name allows TCP " + strconv.Itoa(Port) + " from $($remote -join ', ')\"",
}, "\n")

// AllowFrom is the value of AllowFromEnv: the configured addresses re-rendered
// from their parsed form, so only netip's canonical text reaches the node.
func AllowFrom(addrs []string) string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if c := config.CanonicalAddress(a); c != "" {
			out = append(out, c)
		}
	}
	return strings.Join(out, ",")
}

// relabelings make the series look the way the rules expect, whichever
// monitor scrapes them: instance and node are the node name (so joins with
// kube-state-metrics' node label work), job is the configured job, and the
// pod's own namespace/pod/container target labels are dropped so that, with
// honorLabels, the exporter's container labels stand and empty ones stay
// absent.
func relabelings(v view.Exporters) []monitoringv1.RelabelConfig {
	job := v.WindowsExporter.Job
	return []monitoringv1.RelabelConfig{
		{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"}, TargetLabel: "instance"},
		{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"}, TargetLabel: contract.LabelNode},
		{TargetLabel: contract.LabelJob, Replacement: &job},
		{Action: "labeldrop", Regex: "namespace|pod|container"},
	}
}

func monitorMeta(v view.Exporters) metav1.ObjectMeta {
	m := nodeagent.Meta(v.Agents, Name, meta.ComponentExporter)
	for k, v := range v.WindowsExporter.MonitorLabels {
		m.Labels[k] = v
	}
	return m
}

// monitorAPI is the monitors' apiVersion: prometheus-operator's, or the
// managed Prometheus's own (Azure Monitor's ama-metrics reads the same
// monitors in azmonitoring.coreos.com).
func monitorAPI(v view.Exporters) string {
	if v.MonitorAPI != "" {
		return v.MonitorAPI
	}
	return monitoringv1.SchemeGroupVersion.String()
}

func podMonitor(v view.Exporters) any {
	port := portName
	return &monitoringv1.PodMonitor{
		TypeMeta:   metav1.TypeMeta{APIVersion: monitorAPI(v), Kind: monitoringv1.PodMonitorsKind},
		ObjectMeta: monitorMeta(v),
		Spec: monitoringv1.PodMonitorSpec{
			Selector:          metav1.LabelSelector{MatchLabels: meta.Selector(Name)},
			NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{v.Agents.Namespace}},
			PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{
				Port:           &port,
				Path:           "/metrics",
				Interval:       monitoringv1.Duration(v.WindowsExporter.ScrapeInterval),
				HonorLabels:    true,
				RelabelConfigs: relabelings(v),
			}},
		},
	}
}

func service(v view.Exporters) any {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: nodeagent.Meta(v.Agents, Name, meta.ComponentExporter),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  meta.Selector(Name),
			Ports:     []corev1.ServicePort{{Name: portName, Port: Port, TargetPort: intstr.FromString(portName)}},
		},
	}
}

func serviceMonitor(v view.Exporters) any {
	return &monitoringv1.ServiceMonitor{
		TypeMeta:   metav1.TypeMeta{APIVersion: monitorAPI(v), Kind: monitoringv1.ServiceMonitorsKind},
		ObjectMeta: monitorMeta(v),
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:          metav1.LabelSelector{MatchLabels: meta.Selector(Name)},
			NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{v.Agents.Namespace}},
			Endpoints: []monitoringv1.Endpoint{{
				Port:           portName,
				Path:           "/metrics",
				Interval:       monitoringv1.Duration(v.WindowsExporter.ScrapeInterval),
				HonorLabels:    true,
				RelabelConfigs: relabelings(v),
			}},
		},
	}
}

package amp

import (
	"strconv"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/exporters"
	"github.com/winobs/winobs/gen/view"
)

// The scrape configuration, in Prometheus' configuration format: what AWS's
// managed scraper takes (aws amp create-scraper --scrape-configuration
// configurationBlob=<it, base64>) and what a Prometheus agent or Alloy that
// remote-writes to the workspace with SigV4 reads.
type (
	// Config is a Prometheus configuration of global settings and jobs.
	Config struct {
		Global        Global      `yaml:"global"`
		ScrapeConfigs []ScrapeJob `yaml:"scrape_configs"`
	}
	// Global holds the interval and the labels every series gets.
	Global struct {
		ScrapeInterval string            `yaml:"scrape_interval"`
		ExternalLabels map[string]string `yaml:"external_labels,omitempty"`
	}
	// ScrapeJob is one scrape job found through the Kubernetes API.
	ScrapeJob struct {
		JobName             string          `yaml:"job_name"`
		HonorLabels         bool            `yaml:"honor_labels,omitempty"`
		KubernetesSDConfigs []SDConfig      `yaml:"kubernetes_sd_configs"`
		RelabelConfigs      []RelabelConfig `yaml:"relabel_configs"`
	}
	// SDConfig is a kubernetes_sd_configs entry.
	SDConfig struct {
		Role string `yaml:"role"`
	}
	// RelabelConfig is one relabelling step.
	RelabelConfig struct {
		SourceLabels []string `yaml:"source_labels,omitempty"`
		Regex        string   `yaml:"regex,omitempty"`
		TargetLabel  string   `yaml:"target_label,omitempty"`
		Replacement  string   `yaml:"replacement,omitempty"`
		Action       string   `yaml:"action,omitempty"`
	}
)

// ScrapeConfig finds every Windows node through the Kubernetes API (role
// node, kubernetes.io/os=windows) and scrapes its exporter on the node's
// internal address, port 9182 (host network), with job, instance and node
// as the rules read them and the exporter's own container labels kept
// (honor_labels); and kube-state-metrics by its Service's endpoints. The
// managed scraper reaches the nodes through network interfaces in the
// cluster's VPC: the Windows nodes' security group must allow TCP 9182
// from the scraper's (docs/platforms.md).
func ScrapeConfig(v view.Managed) Config {
	c := Config{Global: Global{ScrapeInterval: v.ScrapeInterval.Model().String()}}
	if v.Cluster.Multi() {
		c.Global.ExternalLabels = map[string]string{v.Cluster.Label: v.Cluster.Name}
	}
	nodeName := []string{"__meta_kubernetes_node_name"}
	c.ScrapeConfigs = []ScrapeJob{
		{
			JobName: v.ExporterJob, HonorLabels: true,
			KubernetesSDConfigs: []SDConfig{{Role: contract.SDRoleNode}},
			RelabelConfigs: []RelabelConfig{
				{SourceLabels: []string{"__meta_kubernetes_node_label_kubernetes_io_os"}, Regex: "windows", Action: "keep"},
				{SourceLabels: []string{"__meta_kubernetes_node_address_InternalIP"}, TargetLabel: "__address__",
					Replacement: "$1:" + strconv.Itoa(exporters.Port)},
				{SourceLabels: nodeName, TargetLabel: "instance"},
				{SourceLabels: nodeName, TargetLabel: contract.LabelNode},
			},
		},
		{
			JobName:             v.KSMJob,
			KubernetesSDConfigs: []SDConfig{{Role: contract.SDRoleEndpoints}},
			RelabelConfigs: []RelabelConfig{
				// kube-state-metrics' Service as its chart names it; its
				// metrics port, not its telemetry port.
				{SourceLabels: []string{"__meta_kubernetes_service_label_app_kubernetes_io_name", "__meta_kubernetes_endpoint_port_name"},
					Regex: "kube-state-metrics;http(-metrics)?", Action: "keep"},
			},
		},
	}
	return c
}
